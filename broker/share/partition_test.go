package share

import (
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

func TestStateRecords(t *testing.T) {
	p := NewPartition(0)
	p.Acquire("a", 10, 10, 100, 0, sec)
	p.Acknowledge("a", 0, 9, []int8{AckAccept, AckAccept, AckRelease, AckReject, AckAccept, AckAccept, AckAccept, AckAccept, AckAccept, AckAccept}, 5, 0, sec)
	k := Key{Group: "g", Topic: [16]byte{1}, Partition: 3}
	key := StateKey(k)
	// type 0 │ "g" │ uuid │ partition 3, as Kafka's ShareSnapshotKey.
	want := append([]byte{0, 0, 0, 1, 'g', 1}, make([]byte, 15)...)
	want = append(want, 0, 0, 0, 3)
	if !reflect.DeepEqual(key, want) {
		t.Fatalf("key %x, want %x", key, want)
	}
	gk, update, err := ParseStateKey(key)
	if err != nil || update || gk != k {
		t.Fatal(gk, update, err)
	}
	v := SnapshotValue(Snapshot{SnapshotEpoch: 1, LeaderEpoch: 7, StartOffset: p.StartOffset(), Batches: p.Batches()})
	st, err := ParseSnapshot(v)
	if err != nil || st.LeaderEpoch != 7 || st.SnapshotEpoch != 1 {
		t.Fatal(st, err)
	}
	if _, err := ParseSnapshot(v[:len(v)-3]); err == nil {
		t.Fatal("a torn value parsed")
	}
	r := Restore(st.StartOffset, st.Batches, 100)
	if r.StartOffset() != 2 {
		t.Fatalf("SPSO %d, want 2", r.StartOffset())
	}
	// Offset 2 was released once: it comes back with count 2; 3 was
	// rejected, 4-9 accepted: the window is empty after 2.
	if got := r.Acquire("b", 10, 10, 100, 0, sec); !reflect.DeepEqual(got, []Range{{2, 2, 2}}) {
		t.Fatalf("after restore acquired %v", got)
	}
	// A ShareUpdateValue (version 0, snapshot epoch, leader epoch 8,
	// start offset 3, one batch: offset 3 acknowledged) merged in.
	upd := []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 8}
	upd = append(upd, 0, 0, 0, 0, 0, 0, 0, 3, 2)
	upd = append(upd, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 3, 2, 0, 1, 0, 0)
	if err := ApplyUpdate(&st, upd); err != nil {
		t.Fatal(err)
	}
	if st.StartOffset != 3 || st.LeaderEpoch != 8 || len(st.Batches) == 0 || st.Batches[0].First != 3 || st.Batches[0].State != Acknowledged {
		t.Fatalf("after update: %+v", st)
	}
}
