package testcluster

// Scoring a queue workload the way Jepsen's queue checker does: read the
// whole topic back and compare it with what the producers were told.
//
//   - Lost: acknowledged, never read. The one thing acks=all promises not
//     to happen.
//   - Duplicated: a value read more than once (anywhere in the topic). The
//     idempotent producer promises it does not happen.
//   - Unexpected: read, but no producer ever attempted it.
//   - OutOfOrder: within one partition, the sequence numbers of one
//     producer's values, in offset order, must be strictly increasing; a
//     value read after one of a higher sequence number (or after itself)
//     is out of order. The idempotent producer promises per-partition order.
//   - Misplaced: acknowledged at one partition and offset but not read
//     there. An ack names a position, and the position must hold.
//
// A value attempted but not acknowledged is indeterminate: read or not,
// it is no anomaly.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Read is a record as the full read found it.
type Read struct {
	Partition int32
	Offset    int64
	Value     string
}

// Anomaly is a value scored wrong, and where it was (or was not) found.
type Anomaly struct {
	Value string
	Where string
}

func (a Anomaly) String() string { return a.Value + " " + a.Where }

// Score is the outcome of a run. Each anomaly list holds every case, in
// producer and sequence order.
type Score struct {
	Attempted, Acknowledged, Read int
	Indeterminate                 int // attempted, not acknowledged
	IndeterminateRead             int // of those, read: they were written after all

	Lost, Duplicated, Unexpected, OutOfOrder, Misplaced []Anomaly
}

// Ok is whether the run has no anomaly.
func (s Score) Ok() bool {
	return len(s.Lost)+len(s.Duplicated)+len(s.Unexpected)+len(s.OutOfOrder)+len(s.Misplaced) == 0
}

func (s Score) String() string {
	return fmt.Sprintf("attempted %d, acknowledged %d, indeterminate %d (%d read), read %d; "+
		"lost %d, duplicated %d, unexpected %d, out of order %d, misplaced %d",
		s.Attempted, s.Acknowledged, s.Indeterminate, s.IndeterminateRead, s.Read,
		len(s.Lost), len(s.Duplicated), len(s.Unexpected), len(s.OutOfOrder), len(s.Misplaced))
}

// Check fails the test if the run has any anomaly, showing up to 10
// examples of each kind, or if fewer than minAcked records were
// acknowledged: a scenario whose producer was refused throughout has
// nothing to lose, and its perfect score would prove nothing. minAcked
// must be at least 1.
func (s Score) Check(t testing.TB, minAcked int) {
	t.Helper()
	if minAcked < 1 {
		t.Errorf("Score.Check with minAcked %d: a run must acknowledge something", minAcked)
		minAcked = 1
	}
	if s.Acknowledged < minAcked {
		t.Errorf("queue workload: %d records acknowledged, want at least %d: %s", s.Acknowledged, minAcked, s)
	}
	if s.Ok() {
		return
	}
	var b strings.Builder
	b.WriteString(s.String())
	for _, k := range []struct {
		name string
		as   []Anomaly
	}{{"lost", s.Lost}, {"duplicated", s.Duplicated}, {"unexpected", s.Unexpected}, {"out of order", s.OutOfOrder}, {"misplaced", s.Misplaced}} {
		if len(k.as) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s (%d):", k.name, len(k.as))
		for _, a := range k.as[:min(len(k.as), 10)] {
			fmt.Fprintf(&b, "\n  %s", a)
		}
		if len(k.as) > 10 {
			b.WriteString("\n  ...")
		}
	}
	t.Errorf("queue workload: %s", b.String())
}

// parseValue splits "<name>-<seq>" at its last dash. The number must be
// written as the producers write it (no sign, no leading zero), so that
// two values never share a sequence number.
func parseValue(v string) (name string, seq int64, ok bool) {
	i := strings.LastIndexByte(v, '-')
	if i < 0 {
		return "", 0, false
	}
	seq, err := strconv.ParseInt(v[i+1:], 10, 64)
	if err != nil || seq < 0 || strconv.FormatInt(seq, 10) != v[i+1:] {
		return "", 0, false
	}
	return v[:i], seq, true
}

// Evaluate scores the records read against the producers' histories (all
// the producers of the topic).
func Evaluate(reads []Read, hs ...*History) Score {
	var s Score
	attempted := map[string]bool{}
	acked := map[string]Ack{}
	for _, h := range hs {
		for _, v := range h.Attempted {
			attempted[v] = true
		}
		for v, a := range h.Acked {
			acked[v] = a
		}
	}
	s.Attempted, s.Acknowledged, s.Read = len(attempted), len(acked), len(reads)

	sorted := append([]Read(nil), reads...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Partition != sorted[j].Partition {
			return sorted[i].Partition < sorted[j].Partition
		}
		return sorted[i].Offset < sorted[j].Offset
	})
	at := map[string][]Read{}
	type stream struct {
		partition int32
		name      string
	}
	highest := map[stream]Read{} // the read of the highest sequence number so far
	for _, r := range sorted {
		at[r.Value] = append(at[r.Value], r)
		if !attempted[r.Value] {
			s.Unexpected = append(s.Unexpected, Anomaly{r.Value, fmt.Sprintf("read at %s, never attempted", pos(r))})
		}
		name, seq, ok := parseValue(r.Value)
		if !ok {
			continue
		}
		k := stream{r.Partition, name}
		if h, seen := highest[k]; seen {
			if _, hseq, _ := parseValue(h.Value); seq <= hseq {
				s.OutOfOrder = append(s.OutOfOrder, Anomaly{r.Value, fmt.Sprintf("read at %s, after %s at %s", pos(r), h.Value, pos(h))})
				continue
			}
		}
		highest[k] = r
	}
	for v, rs := range at {
		if len(rs) > 1 {
			var where []string
			for _, r := range rs {
				where = append(where, pos(r))
			}
			s.Duplicated = append(s.Duplicated, Anomaly{v, "read at " + strings.Join(where, ", ")})
		}
	}
	for v, a := range acked {
		rs := at[v]
		if len(rs) == 0 {
			s.Lost = append(s.Lost, Anomaly{v, fmt.Sprintf("acknowledged at %d@%d, never read", a.Partition, a.Offset)})
			continue
		}
		found := false
		for _, r := range rs {
			found = found || (r.Partition == a.Partition && r.Offset == a.Offset)
		}
		if !found {
			s.Misplaced = append(s.Misplaced, Anomaly{v, fmt.Sprintf("acknowledged at %d@%d, read at %s", a.Partition, a.Offset, pos(rs[0]))})
		}
	}
	for v := range attempted {
		if _, ok := acked[v]; !ok {
			s.Indeterminate++
			if len(at[v]) > 0 {
				s.IndeterminateRead++
			}
		}
	}
	for _, as := range [][]Anomaly{s.Lost, s.Duplicated, s.Unexpected, s.OutOfOrder, s.Misplaced} {
		sortAnomalies(as)
	}
	return s
}

// pos is partition@offset.
func pos(r Read) string { return fmt.Sprintf("%d@%d", r.Partition, r.Offset) }

// sortAnomalies orders by producer, then sequence number, then position,
// so that a report reads as the run went.
func sortAnomalies(as []Anomaly) {
	key := func(v string) (string, int64) {
		if name, seq, ok := parseValue(v); ok {
			return name, seq
		}
		return v, -1
	}
	sort.SliceStable(as, func(i, j int) bool {
		ni, si := key(as[i].Value)
		nj, sj := key(as[j].Value)
		if ni != nj {
			return ni < nj
		}
		if si != sj {
			return si < sj
		}
		return as[i].Value < as[j].Value
	})
}

// ReadTopic reads every partition of topic from offset 0 up to its high
// watermark (as of the call) and returns the records. The partitions must
// have leaders: restart killed nodes first. It fails the test if the read
// does not finish within timeout. opts are added to its clients (security).
func ReadTopic(t testing.TB, bootstrap, topic string, timeout time.Duration, opts ...kgo.Opt) []Read {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	seeds := kgo.SeedBrokers(strings.Split(bootstrap, ",")...)
	admCl, err := kgo.NewClient(append([]kgo.Opt{seeds}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	var ends kadm.ListedOffsets
	for {
		ends, err = kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // a leader moving, say
	}
	if err != nil {
		t.Fatalf("read %s: high watermarks: %v", topic, err)
	}
	want := map[int32]int64{} // partition → high watermark, for those with records
	from := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			from[o.Partition] = kgo.NewOffset().At(0)
		}
	})
	if len(want) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{seeds, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []Read
	next := map[int32]int64{}
	for done := 0; done < len(want); {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: after %v at %v of high watermarks %v (last errors: %v)", topic, timeout, next, want, fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) {
			hw, ok := want[r.Partition]
			if !ok || r.Offset >= hw || next[r.Partition] >= hw {
				return // written after the read began
			}
			out = append(out, Read{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
			next[r.Partition] = r.Offset + 1
			if next[r.Partition] >= hw {
				done++
			}
		})
	}
	return out
}

// Score reads topic back and scores it against the histories of its
// producers. The read's bound only detects a hang: a long run's million
// records under the race detector on a loaded machine take minutes.
func (c *Cluster) Score(topic string, hs ...*History) Score {
	c.t.Helper()
	return Evaluate(ReadTopic(c.t, c.Bootstrap(), topic, 3*time.Minute, c.ClientOpts...), hs...)
}
