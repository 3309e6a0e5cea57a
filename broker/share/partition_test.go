package share

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

const sec = int64(1e9)

func TestPartitionLifecycle(t *testing.T) {
	p := NewPartition(10)
	// Two members share the partition: a takes 10-12, b 13-14.
	if got := p.Acquire("a", 3, 20, 100, 0, 30*sec); !reflect.DeepEqual(got, []Range{{10, 12, 1}}) {
		t.Fatalf("a acquired %v", got)
	}
	if got := p.Acquire("b", 2, 20, 100, 0, 30*sec); !reflect.DeepEqual(got, []Range{{13, 14, 1}}) {
		t.Fatalf("b acquired %v", got)
	}
	// b may not acknowledge a's records; nothing changes.
	if _, err := p.Acknowledge("b", 12, 13, []int8{AckAccept}, 5, 0, 30*sec); err != kerr.InvalidRecordState {
		t.Fatalf("b acked a's record: %v", err)
	}
	// a accepts 10, releases 11, rejects 12 (one type per offset).
	if _, err := p.Acknowledge("a", 10, 12, []int8{AckAccept, AckRelease, AckReject}, 5, 0, 30*sec); err != nil {
		t.Fatal(err)
	}
	if p.StartOffset() != 11 {
		t.Fatalf("SPSO %d, want 11", p.StartOffset())
	}
	// 11 comes back first, delivered a second time.
	if got := p.Acquire("b", 5, 20, 100, 0, 30*sec); !reflect.DeepEqual(got, []Range{{11, 11, 2}, {15, 18, 1}}) {
		t.Fatalf("b reacquired %v", got)
	}
	if st, n := p.State(12); st != Archived || n != 1 {
		t.Fatalf("12 is %v/%d", st, n)
	}
	// b's locks expire: everything it holds is available again.
	if !p.Expire(31*sec, 5) {
		t.Fatal("nothing expired")
	}
	if st, n := p.State(11); st != Available || n != 2 {
		t.Fatalf("11 after expiry is %v/%d", st, n)
	}
	// b accepts a range it no longer holds: refused.
	if _, err := p.Acknowledge("b", 13, 14, []int8{AckAccept}, 5, 31*sec, 30*sec); err != kerr.InvalidRecordState {
		t.Fatalf("ack after expiry: %v", err)
	}
}

func TestPartitionDeliveryLimit(t *testing.T) {
	p := NewPartition(0)
	for i := int16(1); i <= 3; i++ {
		got := p.Acquire("a", 1, 1, 100, 0, sec)
		if len(got) != 1 || got[0].Count != i {
			t.Fatalf("delivery %d: %v", i, got)
		}
		p.Acknowledge("a", 0, 0, []int8{AckRelease}, 3, 0, sec)
	}
	// Released the third time with limit 3: archived, and the SPSO moves.
	if got := p.Acquire("a", 1, 1, 100, 0, sec); got != nil {
		t.Fatalf("delivered past the limit: %v", got)
	}
	if p.StartOffset() != 1 || p.InFlight() != 0 {
		t.Fatalf("SPSO %d in flight %d", p.StartOffset(), p.InFlight())
	}
}

func TestPartitionMaxLocks(t *testing.T) {
	p := NewPartition(0)
	if got := p.Acquire("a", 100, 1000, 10, 0, sec); len(got) != 1 || got[0].Last != 9 {
		t.Fatalf("acquired %v, want 0-9 (10 locks)", got)
	}
	if got := p.Acquire("b", 100, 1000, 10, 0, sec); got != nil {
		t.Fatalf("acquired past the window: %v", got)
	}
	p.Acknowledge("a", 0, 4, []int8{AckAccept}, 5, 0, sec)
	if got := p.Acquire("b", 100, 1000, 10, 0, sec); len(got) != 1 || got[0].First != 10 || got[0].Last != 14 {
		t.Fatalf("after the window slid: %v", got)
	}
}

func TestJournalRestore(t *testing.T) {
	dir := t.TempDir()
	j, live, err := openJournal(dir)
	if err != nil || len(live) != 0 {
		t.Fatal(err, live)
	}
	p := NewPartition(0)
	p.Acquire("a", 10, 10, 100, 0, sec)
	p.Acknowledge("a", 0, 9, []int8{AckAccept, AckAccept, AckRelease, AckReject, AckAccept, AckAccept, AckAccept, AckAccept, AckAccept, AckAccept}, 5, 0, sec)
	k := Key{Group: "g", Topic: [16]byte{1}, Partition: 3}
	if err := j.write(k, p.StartOffset(), p.Batches()); err != nil {
		t.Fatal(err)
	}
	j.close()
	// A torn entry at the end (a crash during write) is cut off.
	f, _ := os.OpenFile(filepath.Join(dir, journalName), os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte{0, 0, 1, 0, 1, 2})
	f.Close()
	j, live, err = openJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	st, ok := live[k]
	if !ok {
		t.Fatalf("state lost: %v", live)
	}
	r := Restore(st.spso, st.batches, 100)
	if r.StartOffset() != 2 {
		t.Fatalf("SPSO %d, want 2", r.StartOffset())
	}
	// Offset 2 was released once: it comes back with count 2; 3 was
	// rejected, 4-9 accepted: the window is empty after 2.
	if got := r.Acquire("b", 10, 10, 100, 0, sec); !reflect.DeepEqual(got, []Range{{2, 2, 2}}) {
		t.Fatalf("after restore acquired %v", got)
	}
}
