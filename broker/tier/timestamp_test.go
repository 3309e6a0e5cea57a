package tier_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/tier"
)

// TestOffsetForTimestampRemote: ListOffsets by timestamp in the remote
// range. Timestamps do not grow with offsets (CreateTime from several
// producers): offsets 0-9 at T+100, 10-19 at T, 20-39 at T+70, the rest
// at T+200. After DeleteRecords to 10 (inside the first segment, whose
// maximum reaches T+60 only below 10) the answer for T+60 is 20, in the
// next segment, not "no remote answer" (the local log would answer a
// later offset). Then a broker that cannot load the manifest answers a
// retriable error, for timestamps and LATEST_TIERED, as Read does.
func TestOffsetForTimestampRemote(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	base := time.Now().UnixMilli()
	l := smallTieredLogAt(t, func(i int) int64 {
		switch o := 2 * i; {
		case o < 10:
			return base + 100
		case o < 20:
			return base
		case o < 40:
			return base + 70
		}
		return base + 200
	})
	tp := l.TopicPartition()
	cfg := tier.Config{URI: "file://" + root, ChunkBytes: 1000, CacheBytes: 8000}
	m := tier.New(cfg)
	defer m.Close()
	m.Pass([]tier.Target{{TP: tp, TopicID: "id", Log: l, LeaderEpoch: 0, Bound: l.LogEndOffset()}}, nil)
	below := l.LogStartOffset()
	if below < 40 {
		t.Fatalf("local log start %d: the first two segments are not remote only", below)
	}
	want := func(what string, m *tier.Manager, ts, wantOffset int64) {
		t.Helper()
		o, got, ok, err := m.OffsetForTimestamp(tp, ts, below)
		if err != nil || !ok || o != wantOffset {
			t.Errorf("%s: OffsetForTimestamp(T+%d) = %d (T+%d) %v %v, want offset %d", what, ts-base, o, got-base, ok, err, wantOffset)
		}
	}
	want("before DeleteRecords", m, base+60, 0)
	if err := m.DeleteRecords(tp, 10); err != nil {
		t.Fatal(err)
	}
	want("after DeleteRecords to 10", m, base+60, 20)
	want("after DeleteRecords to 10", m, base, 10)

	breakManifest(t, root)
	m2 := tier.New(cfg)
	defer m2.Close()
	m2.Pass([]tier.Target{{TP: tp, TopicID: "id", Log: l, LeaderEpoch: 1, Bound: l.LogEndOffset()}}, nil)
	if o, _, ok, err := m2.OffsetForTimestamp(tp, base+60, below); !errors.Is(err, tier.ErrUnavailable) {
		t.Errorf("OffsetForTimestamp with the manifest not loaded = %d %v %v, want ErrUnavailable", o, ok, err)
	}
	if end, err := m2.UploadedEnd(tp); !errors.Is(err, tier.ErrUnavailable) {
		t.Errorf("UploadedEnd (LATEST_TIERED) with the manifest not loaded = %d %v, want ErrUnavailable", end, err)
	}
}
