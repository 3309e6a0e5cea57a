package cluster

import (
	"path/filepath"
	"testing"
	"time"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// A term written after the store closed (a heartbeat that raced Shutdown)
// must neither reach the closed database, where Raft would panic on the
// error, nor report success.
func TestStableStoreWriteAfterCloseNeverReturns(t *testing.T) {
	bolt, err := raftboltdb.NewBoltStore(filepath.Join(t.TempDir(), "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	s := &stableStore{StableStore: bolt, close: bolt.Close}
	if err := s.SetUint64([]byte("CurrentTerm"), 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	returned := make(chan error, 1)
	go func() { returned <- s.SetUint64([]byte("CurrentTerm"), 3) }()
	select {
	case err := <-returned:
		t.Fatalf("a term write after close returned (%v); Raft would act on it or panic", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := s.Close(); err != nil {
		t.Fatalf("closing twice: %v", err)
	}
}
