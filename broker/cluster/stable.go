package cluster

import (
	"sync"

	"github.com/hashicorp/raft"
)

// stableStore guards Raft's term and vote store across shutdown.
// hashicorp/raft answers heartbeats on the transport's goroutines, outside
// its main loop: one that passed Raft's shutdown check just before
// Shutdown returned may still persist a newer term after the store is
// closed, and Raft panics when it cannot ("failed to save current term:
// database not open"), turning a clean stop into a crash. Once closed, a
// write here never returns instead: a term or vote that cannot be made
// durable must not be acted on (the RPC is never answered, so no peer
// counts on it), and the process is on its way out.
type stableStore struct {
	raft.StableStore
	mu     sync.RWMutex
	closed bool
	close  func() error
}

func (s *stableStore) Set(k, v []byte) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		select {}
	}
	err := s.StableStore.Set(k, v)
	s.mu.RUnlock()
	return err
}

func (s *stableStore) SetUint64(k []byte, v uint64) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		select {}
	}
	err := s.StableStore.SetUint64(k, v)
	s.mu.RUnlock()
	return err
}

// Close closes the underlying store once no write is in progress.
func (s *stableStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.close()
}
