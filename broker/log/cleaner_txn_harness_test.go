package log

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/tributary-io/tributary/broker/producer"
	"github.com/tributary-io/tributary/broker/record"
)

// The transaction side of the cleaner's scripts (testdata/compaction_txn*.txt):
//
//	txn-view [open-in-snapshot=pid@offset ...]
//	    gives the log a TxnView that plays the partition: the producer
//	    state and aborted transactions of every batch appended since open
//	    (append-kv, append-control), and snapshots holding a producer's
//	    transaction open at an offset; clean then prints what it forgot
//	aborted
//	    prints the aborted-transaction index the view holds
//	replay
//	    replays the log from its start into a new producer state, as a
//	    restart without a snapshot or a new replica does, and prints it

// txnModel is the partition's side of the transactions, as broker/replica
// keeps it, fed by the harness's appends.
type txnModel struct {
	st        *producer.State
	aborted   []producer.CompletedTxn
	openIn    map[int64]int64
	forgotten []string
}

func (h *harness) txnCommand(t *testing.T, d *datadriven.TestData) (string, bool, error) {
	switch d.Cmd {
	case "txn-view":
		m := h.txn
		if m == nil {
			t.Fatal("txn-view: the harness has no transaction model (open first)")
		}
		m.openIn = map[int64]int64{}
		for _, a := range d.CmdArgs {
			if a.Key != "open-in-snapshot" {
				t.Fatalf("txn-view: unknown argument %s", a.Key)
			}
			for _, v := range a.Vals {
				var pid, off int64
				if _, err := fmt.Sscanf(v, "%d@%d", &pid, &off); err != nil {
					t.Fatalf("open-in-snapshot=%s: %v", v, err)
				}
				m.openIn[pid] = off
			}
		}
		h.log.SetTxnView(&TxnView{
			Stable: func() int64 { return -1 },
			Aborted: func(pid, off int64) bool {
				for _, c := range m.aborted {
					if c.ProducerID == pid && c.FirstOffset <= off && off <= c.LastOffset {
						return true
					}
				}
				return false
			},
			Producers: func() map[int64]ProducerLast {
				out := map[int64]ProducerLast{}
				for pid, e := range m.st.Producers() {
					out[pid] = ProducerLast{LastDataOffset: e.LastDataOffset(), Epoch: e.Epoch}
				}
				return out
			},
			OpenInSnapshots: func() map[int64]int64 { return m.openIn },
			ForgetAborted: func(keys [][2]int64) error {
				for _, k := range keys {
					i := slices.IndexFunc(m.aborted, func(c producer.CompletedTxn) bool {
						return c.ProducerID == k[0] && c.LastOffset == k[1]
					})
					if i >= 0 {
						m.aborted = slices.Delete(m.aborted, i, i+1)
						m.forgotten = append(m.forgotten, fmt.Sprintf("%d@%d", k[0], k[1]))
					}
				}
				return nil
			},
		})
		return "ok\n", true, nil
	case "replay":
		out, err := h.replay()
		return out, true, err
	case "aborted":
		if h.txn == nil || len(h.txn.aborted) == 0 {
			return "none\n", true, nil
		}
		var b strings.Builder
		for _, c := range h.txn.aborted {
			fmt.Fprintf(&b, "pid=%d first=%d marker=%d\n", c.ProducerID, c.FirstOffset, c.LastOffset)
		}
		return b.String(), true, nil
	}
	return "", false, nil
}

// txnApplied feeds an appended batch, its offsets assigned, to the model.
func (h *harness) txnApplied(b record.Batch, first int64) {
	if h.txn == nil {
		return
	}
	c := make(record.Batch, len(b))
	copy(c, b)
	c.SetBaseOffset(first)
	if done := h.txn.st.Apply(c, h.now.UnixMilli()); done != nil && done.Aborted {
		h.txn.aborted = append(h.txn.aborted, *done)
	}
}

// txnForgotten is what clean prints of the entries the view forgot.
func (h *harness) txnForgotten() string {
	if h.txn == nil || len(h.txn.forgotten) == 0 {
		return ""
	}
	s := "forgot aborted " + strings.Join(h.txn.forgotten, " ") + "\n"
	h.txn.forgotten = nil
	return s
}

func (h *harness) replay() (string, error) {
	st := producer.NewState()
	var aborted []string
	offset := h.log.LogStartOffset()
	for {
		s, err := h.log.Read(offset, ReadOptions{MaxBytes: 1 << 20, MinOneBatch: true, UpTo: -1})
		if err != nil {
			return "", err
		}
		data, err := s.ReadAll()
		s.Release()
		if err != nil {
			return "", err
		}
		if len(data) == 0 {
			break
		}
		for b, rest, ok := record.Split(data); ok; b, rest, ok = record.Split(rest) {
			if c := st.Replay(b); c != nil && c.Aborted {
				aborted = append(aborted, fmt.Sprintf("%d@%d-%d", c.ProducerID, c.FirstOffset, c.LastOffset))
			}
			offset = b.LastOffset() + 1
		}
	}
	var pids []int64
	for pid := range st.Producers() {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	var b strings.Builder
	for _, pid := range pids {
		e := st.Producers()[pid]
		last := int32(-1)
		if n := len(e.Batches); n > 0 {
			last = e.Batches[n-1].LastSeq
		}
		fmt.Fprintf(&b, "producer %d epoch %d last seq %d open txn %d\n", pid, e.Epoch, last, e.CurrentTxnFirstOffset)
	}
	fmt.Fprintf(&b, "aborted transactions replayed: %v\n", aborted)
	return b.String(), nil
}
