package producer

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
)

// TestDataDriven runs the scripts in testdata/: each drives one partition's
// producer state through appends (Check, then Update when Check says to
// append), the clock, expiry, snapshots and replays, and prints what a
// producer would be answered. Rewrite the expectations with
// `go test ./broker/producer -run DataDriven -rewrite` and review the diff.
//
//	append pid=<id> epoch=<e> seq=<first> [n=<records>]   a batch at the log end
//	clock now=<ms>                                        the broker's clock
//	expire idle=<ms>                                      Expire(now - idle)
//	snapshot                                              encode, decode: a restart
//	state                                                 every producer
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &stateHarness{s: NewState(), now: 1_700_000_000_000}
		datadriven.RunTest(t, path, h.run)
	})
}

type stateHarness struct {
	s    *State
	next int64 // the log end offset
	now  int64
}

func (h *stateHarness) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "append":
		pid, epoch, seq, n := int64(-1), 0, 0, 1
		d.MaybeScanArgs(t, "pid", &pid)
		d.MaybeScanArgs(t, "epoch", &epoch)
		d.MaybeScanArgs(t, "seq", &seq)
		d.MaybeScanArgs(t, "n", &n)
		b := testBatch(t, pid, int16(epoch), int32(seq), n, h.next, h.now)
		dup, err := h.s.Check(b)
		switch {
		case err != nil:
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Check returned %v, not an *Error", err)
			}
			return fmt.Sprintf("error %s: %s\n", pe.Code.Message, pe.Reason)
		case dup != nil:
			return fmt.Sprintf("duplicate: offsets %d-%d\n", dup.FirstOffset, dup.LastOffset)
		}
		h.s.Update(b, h.now)
		h.next = b.LastOffset() + 1
		return fmt.Sprintf("appended: offsets %d-%d\n", b.BaseOffset(), b.LastOffset())
	case "clock":
		d.ScanArgs(t, "now", &h.now)
		return "ok\n"
	case "expire":
		var idle int64
		d.ScanArgs(t, "idle", &idle)
		return fmt.Sprintf("expired %d\n", h.s.Expire(h.now-idle))
	case "snapshot":
		data := EncodeSnapshot(h.s)
		s, err := DecodeSnapshot(data)
		if err != nil {
			t.Fatal(err)
		}
		h.s = s
		return fmt.Sprintf("%d bytes\n", len(data))
	case "state":
		return dumpState(h.s)
	}
	t.Fatalf("unknown command %q", d.Cmd)
	return ""
}

// dumpState prints each producer, by id, with its remembered batches.
func dumpState(s *State) string {
	var pids []int64
	for pid := range s.Producers() {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	var sb strings.Builder
	for _, pid := range pids {
		e := s.Producers()[pid]
		fmt.Fprintf(&sb, "producer %d epoch %d last-timestamp %d:", pid, e.Epoch, e.LastTimestamp)
		for _, bm := range e.Batches {
			fmt.Fprintf(&sb, " [seq %d-%d offsets %d-%d]", bm.FirstSeq, bm.LastSeq, bm.FirstOffset, bm.LastOffset)
		}
		sb.WriteString("\n")
	}
	if sb.Len() == 0 {
		return "no producers\n"
	}
	return sb.String()
}

// testBatch is a batch of n one-byte records of producer pid at offset base,
// with timestamps from ts, one ms apart.
func testBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, base, ts int64) record.Batch {
	t.Helper()
	opts := record.DefaultBuildOptions()
	opts.BaseOffset, opts.BaseTimestamp = base, ts
	if pid >= 0 {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, epoch, seq
	}
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i] = kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: int64(i), Value: []byte{'v'}}
	}
	b, err := record.Build(opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSequenceRing(t *testing.T) {
	for _, c := range []struct{ seq, delta, sum int32 }{
		{0, 0, 0},
		{5, 3, 8},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 1, 3, 1},
		{math.MaxInt32 - 4, 4, math.MaxInt32},
		{0, math.MaxInt32, math.MaxInt32},
		{1, math.MaxInt32, 0},
	} {
		if got := addSeq(c.seq, c.delta); got != c.sum {
			t.Errorf("addSeq(%d, %d) = %d, want %d", c.seq, c.delta, got, c.sum)
		}
		if got := subSeq(c.sum, c.delta); got != c.seq {
			t.Errorf("subSeq(%d, %d) = %d, want %d", c.sum, c.delta, got, c.seq)
		}
	}
}

// TestCheckErrorsAreKafkaErrors: the server maps refusals with errors.As to
// the Kafka code.
func TestCheckErrorsAreKafkaErrors(t *testing.T) {
	s := NewState()
	s.Update(testBatch(t, 7, 2, 0, 1, 0, 1), 1)
	_, err := s.Check(testBatch(t, 7, 1, 1, 1, 1, 1))
	var ke *kerr.Error
	if !errors.As(err, &ke) || ke != kerr.InvalidProducerEpoch {
		t.Fatalf("old epoch: %v", err)
	}
	_, err = s.Check(testBatch(t, 7, 2, 5, 1, 1, 1))
	if !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("gap: %v", err)
	}
}

// TestReplaySkipsWhatTheStateHolds: replaying from an offset inside a batch
// the state already records does not record it twice.
func TestReplaySkipsWhatTheStateHolds(t *testing.T) {
	s := NewState()
	b0 := testBatch(t, 1, 0, 0, 3, 0, 100)
	b1 := testBatch(t, 1, 0, 3, 2, 3, 200)
	s.Update(b0, 1)
	s.Replay(b0)
	s.Replay(b1)
	e := s.Producers()[1]
	if len(e.Batches) != 2 || e.Batches[1].FirstOffset != 3 || e.LastTimestamp != b1.MaxTimestamp() {
		t.Fatalf("after replay: %s", dumpState(s))
	}
}
