package share

import (
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestAcknowledgeAllOrNothing (review M1, T4): a request whose later batch
// fails changes nothing, as Kafka's SharePartition rolls the whole
// request back; overlapping or unordered batches are INVALID_REQUEST with
// nothing applied.
func TestAcknowledgeAllOrNothing(t *testing.T) {
	const sec = int64(1e9)
	p := NewPartition(0)
	p.Acquire("a", 5, 100, 2000, 0, 30*sec)
	p.Acquire("b", 1, 100, 2000, 0, 30*sec)
	cases := []struct {
		name    string
		batches []AckBatch
		want    *kerr.Error
	}{
		{"second batch held by another member", []AckBatch{{0, 3, []int8{AckAccept}}, {4, 5, []int8{AckAccept}}}, kerr.InvalidRecordState},
		{"malformed second batch", []AckBatch{{0, 3, []int8{AckAccept}}, {4, 4, []int8{9}}}, kerr.InvalidRequest},
		{"overlapping batches", []AckBatch{{0, 3, []int8{AckAccept}}, {3, 4, []int8{AckAccept}}}, kerr.InvalidRequest},
		{"unordered batches", []AckBatch{{2, 3, []int8{AckAccept}}, {0, 1, []int8{AckAccept}}}, kerr.InvalidRequest},
		{"repeated renew", []AckBatch{{0, 4, []int8{AckRenew}}, {0, 4, []int8{AckRenew}}}, kerr.InvalidRequest},
		{"types of the wrong length", []AckBatch{{0, 3, []int8{AckAccept, AckAccept}}}, kerr.InvalidRequest},
	}
	for _, c := range cases {
		if _, err := p.AcknowledgeBatches("a", c.batches, 5, 0, 30*sec); err != c.want {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if p.StartOffset() != 0 {
			t.Fatalf("%s: the SPSO moved to %d after a refused request", c.name, p.StartOffset())
		}
		for off := int64(0); off < 5; off++ {
			if st, _ := p.State(off); st != Acquired {
				t.Fatalf("%s: offset %d is %v after a refused request, want acquired", c.name, off, st)
			}
		}
	}
	if _, err := p.AcknowledgeBatches("a", []AckBatch{{0, 1, []int8{AckAccept}}, {2, 4, []int8{AckAccept, AckReject, AckAccept}}}, 5, 0, 30*sec); err != nil {
		t.Fatalf("valid request: %v", err)
	}
	if p.StartOffset() != 5 {
		t.Fatalf("SPSO %d after acknowledging 0-4, want 5", p.StartOffset())
	}
}

// TestAcknowledgeBelowStart (review L3): offsets below the SPSO (the log
// start moved past them) are already finished: a batch wholly below is
// skipped, one straddling it is clipped, as Kafka skips archived offsets.
func TestAcknowledgeBelowStart(t *testing.T) {
	const sec = int64(1e9)
	p := NewPartition(0)
	p.Acquire("a", 10, 100, 2000, 0, 30*sec)
	p.Advance(4)
	if _, err := p.AcknowledgeBatches("a", []AckBatch{{0, 1, []int8{AckAccept}}, {2, 5, []int8{AckAccept, AckAccept, AckAccept, AckReject}}}, 5, 0, 30*sec); err != nil {
		t.Fatalf("acknowledging offsets below the SPSO: %v", err)
	}
	if st, _ := p.State(4); st != Acknowledged {
		t.Errorf("offset 4 is %v, want acknowledged", st)
	}
	if p.StartOffset() != 6 {
		t.Errorf("SPSO %d, want 6 (4 accepted, 5 rejected)", p.StartOffset())
	}
}

// TestManagerAcknowledgeAllOrNothing (review M1): through the Manager, a
// request whose second batch names a record another member holds leaves
// the first batch's records acquired and the SPSO where it was.
func TestManagerAcknowledgeAllOrNothing(t *testing.T) {
	m, err := NewManager(Config{MaxSize: 200, SessionTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, MaxSessions: 20, DeliveryLimit: 5, MaxRecordLocks: 20, LockDuration: time.Minute, AutoOffsetReset: "earliest"}, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Group: "g", Topic: [16]byte{1}}
	m.Acquire(k, 0, "a", 5, 10, 0)
	m.Acquire(k, 0, "b", 5, 10, 0)
	if err := m.Acknowledge(k, 0, "a", []AckBatch{{0, 3, []int8{AckAccept}}, {4, 5, []int8{AckAccept}}}); err != kerr.InvalidRecordState {
		t.Fatalf("ack: %v, want INVALID_RECORD_STATE", err)
	}
	if st, _ := m.parts[k].State(0); st != Acquired || m.parts[k].StartOffset() != 0 {
		t.Fatalf("after a refused request offset 0 is %v and the SPSO %d; want acquired at 0", st, m.parts[k].StartOffset())
	}
}
