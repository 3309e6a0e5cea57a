package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestWriteShareDropsOlderGeneration (review 1): a share write made
// while a partition was loaded at one generation is dropped, not
// appended, once the partition was unloaded or loaded again: a heartbeat
// that raced the partition moving away writes nothing.
func TestWriteShareDropsOlderGeneration(t *testing.T) {
	cfg := Config{Partitions: 10, MinSessionTimeout: time.Second, MaxSessionTimeout: time.Hour, MaxSize: 10, MaxMetadataBytes: 10}
	c := &Coordinator{gs: NewGroups(cfg), now: time.Now, loaded: map[int32]bool{}, loading: map[int32]bool{},
		gens: map[int32]uint64{}, inflight: map[int32]*inflight{}, stop: make(chan struct{})}
	var got []error
	done := func(err error) { got = append(got, err) }
	rec := []Record{{Key: []byte{0, 11, 0, 1, 'g'}, Value: []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}
	c.WriteShare(3, 0, rec, done) // never loaded
	c.loaded[3], c.gens[3] = true, 2
	c.WriteShare(3, 1, rec, done) // let in at generation 1, before a reload
	c.bumpGen(3)                  // reloaded (still loaded): generation 3
	c.WriteShare(3, 2, rec, done) // let in at 2, before that reload
	c.loaded[3] = false
	gen := c.gens[3]
	c.bumpGen(3)
	c.WriteShare(3, gen, rec, done) // let in before the unload
	if len(got) != 4 || len(c.gs.writes) != 0 || len(c.inflight) != 0 {
		t.Fatalf("writes of stale generations: answered %v, %d queued; want 4 answered, none queued", got, len(c.gs.writes))
	}
	for _, err := range got {
		if err != kerr.NotCoordinator {
			t.Errorf("answered %v, want NOT_COORDINATOR", err)
		}
	}
}
