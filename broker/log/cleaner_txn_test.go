package log

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/producer"
	"github.com/tributary-io/tributary/broker/record"
)

// txnLog fills a compacted log with transactions of three producers over a
// few keys, a third of them aborted, each producer's batches sequenced,
// and returns the view a partition would give the cleaner and each key's
// latest committed value.
func txnLog(t *testing.T, l *Log) (*TxnView, map[string]string) {
	t.Helper()
	st := producer.NewState()
	var aborted []producer.CompletedTxn
	want := map[string]string{}
	seq := map[int64]int32{}
	apply := func(b record.Batch, info AppendInfo) {
		c := append(record.Batch(nil), b...)
		c.SetBaseOffset(info.FirstOffset)
		if done := st.Apply(c, cleanerTestNow.UnixMilli()); done != nil && done.Aborted {
			aborted = append(aborted, *done)
		}
	}
	for n := range 30 {
		pid := int64(n % 3)
		commit := n%3 != 1
		opts := record.DefaultBuildOptions()
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, 0, seq[pid], true
		opts.BaseTimestamp = cleanerTestNow.UnixMilli()
		var recs []kmsg.Record
		vals := map[string]string{}
		for i := range 3 {
			k, v := fmt.Sprintf("k%d", (n+i)%7), fmt.Sprintf("v%d-%d", n, i)
			recs = append(recs, kmsg.Record{Key: []byte(k), Value: []byte(v), OffsetDelta: int32(i)})
			vals[k] = v
		}
		seq[pid] += 3
		b, err := record.Build(opts, recs)
		if err != nil {
			t.Fatal(err)
		}
		info, err := l.AppendAsLeader(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		apply(b, info)
		key := binary.BigEndian.AppendUint16([]byte{0, 0}, map[bool]uint16{false: 0, true: 1}[commit])
		mo := record.DefaultBuildOptions()
		mo.Control, mo.Transactional = true, true
		mo.ProducerID, mo.ProducerEpoch, mo.BaseOffset = pid, 0, l.LogEndOffset()
		mo.BaseTimestamp = cleanerTestNow.UnixMilli()
		m, err := record.Build(mo, []kmsg.Record{{Key: key, Value: make([]byte, 6)}})
		if err != nil {
			t.Fatal(err)
		}
		info, err = l.AppendAsFollower(m)
		if err != nil {
			t.Fatal(err)
		}
		apply(m, info)
		if commit {
			for k, v := range vals {
				want[k] = v
			}
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	view := &TxnView{
		Stable: func() int64 { return -1 },
		Aborted: func(pid, off int64) bool {
			return slices.ContainsFunc(aborted, func(c producer.CompletedTxn) bool {
				return c.ProducerID == pid && c.FirstOffset <= off && off <= c.LastOffset
			})
		},
		Producers: func() map[int64]ProducerLast {
			out := map[int64]ProducerLast{}
			for pid, e := range st.Producers() {
				out[pid] = ProducerLast{LastDataOffset: e.LastDataOffset(), Epoch: e.Epoch}
			}
			return out
		},
		OpenInSnapshots: func() map[int64]int64 { return map[int64]int64{} },
		ForgetAborted: func(keys [][2]int64) error {
			aborted = slices.DeleteFunc(aborted, func(c producer.CompletedTxn) bool {
				return slices.Contains(keys, [2]int64{c.ProducerID, c.LastOffset})
			})
			return nil
		},
	}
	return view, want
}

// checkTxnLog replays the log into a new producer state, as a restart
// without a snapshot does: no transaction may be left open (a marker
// removed while a record of its transaction remained), every producer
// keeps its last sequence, and reading it as a read_committed consumer
// (dropping the transactions aborted in the replay) gives each key its
// latest committed value.
func checkTxnLog(t *testing.T, l *Log, want map[string]string, seqs map[int64]int32) {
	t.Helper()
	st := producer.NewState()
	type abortedTxn struct{ pid, first, last int64 }
	var aborted []abortedTxn
	var batches []record.Batch
	for next := l.LogStartOffset(); next < l.LogEndOffset(); {
		s, err := l.Read(next, ReadOptions{MaxBytes: 1 << 20, MinOneBatch: true, UpTo: -1})
		if err != nil {
			t.Fatal(err)
		}
		data, err := s.ReadAll()
		s.Release()
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			break
		}
		for b, rest, ok := record.Split(data); ok; b, rest, ok = record.Split(rest) {
			b = append(record.Batch(nil), b...)
			batches = append(batches, b)
			if c := st.Replay(b); c != nil && c.Aborted {
				aborted = append(aborted, abortedTxn{c.ProducerID, c.FirstOffset, c.LastOffset})
			}
			next = b.LastOffset() + 1
		}
	}
	for pid, e := range st.Producers() {
		if e.CurrentTxnFirstOffset >= 0 {
			t.Errorf("producer %d: a transaction from %d is open after a replay of the cleaned log", pid, e.CurrentTxnFirstOffset)
		}
		if n := len(e.Batches); n == 0 || e.Batches[n-1].LastSeq != seqs[pid]-1 {
			t.Errorf("producer %d: last sequence lost (batches %v, want last %d)", pid, e.Batches, seqs[pid]-1)
		}
	}
	got := map[string]string{}
	for _, b := range batches {
		if b.Control() || slices.ContainsFunc(aborted, func(a abortedTxn) bool {
			return a.pid == b.ProducerID() && a.first <= b.BaseOffset() && b.BaseOffset() <= a.last
		}) {
			continue
		}
		recs, err := b.DecodeRecords()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			got[string(r.Key)] = string(r.Value)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("read_committed after cleaning:\n got %v\nwant %v", got, want)
	}
}

// TestCleanTxnCrash runs cleanings with transactions to their end, every
// marker of a transaction without records removed (delete.retention.ms 0),
// crashing once at each stage of an install (kill -9: files as they are):
// after each crash and reopen, and at the end, the log replays with no
// transaction open, every producer's sequence, and the latest committed
// value of every key.
func TestCleanTxnCrash(t *testing.T) {
	t.Parallel()
	seqs := map[int64]int32{0: 30, 1: 30, 2: 30} // 10 transactions of 3 records each
	for _, stage := range []cleanStage{stageWritten, stageBeforeCommit, stageCommitted, stageOldDeleted} {
		t.Run(fmt.Sprint(stage), func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "t-0")
			zeroRetention := func(c *Config) { c.DeleteRetentionMs = 0 }
			l := compactedLog(t, dir, false, zeroRetention)
			view, want := txnLog(t, l)
			l.SetTxnView(view)
			now := cleanerTestNow
			removed := int64(0)
			crashedIn := map[int]bool{}
			for pass := 0; pass < 8; pass++ {
				var stop atomic.Bool
				res, err := l.clean(context.Background(), now, 0, -1, cleanKnobs{hook: func(s cleanStage) bool {
					// Crash in the second pass, the one that sets horizons,
					// and in the third, the one that removes markers.
					if (pass == 1 || pass == 2) && !crashedIn[pass] && s == stage && !stop.Load() {
						stop.Store(true)
						return true
					}
					return false
				}})
				if errors.Is(err, errSimulatedCrash) {
					crashedIn[pass] = true
					crashLog(l)
					l = compactedLog(t, dir, true, zeroRetention)
					l.SetTxnView(view)
					checkTxnLog(t, l, want, seqs)
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				removed += res.MarkersRemoved
				now = now.Add(time.Millisecond)
			}
			defer l.Close()
			if !crashedIn[1] || !crashedIn[2] {
				t.Fatalf("the cleanings that set horizons and remove markers did not both reach the stage (%v)", crashedIn)
			}
			if removed == 0 {
				t.Error("no marker was removed")
			}
			checkTxnLog(t, l, want, seqs)
		})
	}
}
