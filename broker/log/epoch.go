package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// LeaderEpochFile is the partition file that maps each leader epoch to the
// first offset written in it, in the checkpoint format of checkpoint.go with
// entries "epoch startOffset". Followers use it to find where their log
// diverged from a new leader's (KIP-101, KIP-279).
const LeaderEpochFile = "leader-epoch-checkpoint"

// EpochEntry says that leader epoch Epoch wrote its first record at StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is the in-memory leader-epoch-checkpoint. It has its own lock
// because OffsetForLeaderEpoch reads it from request goroutines while the
// appender extends it.
type epochCache struct {
	path string

	mu      sync.Mutex
	entries []EpochEntry // epochs and start offsets both strictly increase
}

func loadEpochCache(dir string) (*epochCache, error) {
	c := &epochCache{path: filepath.Join(dir, LeaderEpochFile)}
	data, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	if c.entries, err = ParseLeaderEpochCheckpoint(c.path, data); err != nil {
		return nil, err
	}
	return c, nil
}

// ParseLeaderEpochCheckpoint reads a leader-epoch-checkpoint's bytes
// (name says whose, in errors): its entries, each epoch and start offset
// a non-negative number. It is the tiered storage's parser too, for the
// checkpoints uploaded beside remote segments, which adds its own checks.
func ParseLeaderEpochCheckpoint(name string, data []byte) ([]EpochEntry, error) {
	rows, err := parseCheckpoint(name, data, 2)
	if err != nil {
		return nil, err
	}
	var out []EpochEntry
	for i, r := range rows {
		e, err1 := strconv.ParseInt(r[0], 10, 32)
		o, err2 := strconv.ParseInt(r[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 {
			return nil, fmt.Errorf("%w %s, line %d", ErrCorruptCheckpoint, name, 3+i)
		}
		out = append(out, EpochEntry{int32(e), o})
	}
	return out, nil
}

func (c *epochCache) persistLocked() error {
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	return writeCheckpoint(c.path, lines, false)
}

// assign records that epoch starts at offset, if epoch is newer than the last.
func (c *epochCache) assign(epoch int32, offset int64) error {
	if epoch < 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.entries); n > 0 {
		last := c.entries[n-1]
		if epoch <= last.Epoch {
			return nil
		}
		if offset < last.StartOffset {
			// A newer epoch cannot start before an older one ends; the
			// older entries past offset belong to a truncated tail.
			c.truncateFromEndLocked(offset)
		}
	}
	c.entries = append(c.entries, EpochEntry{epoch, offset})
	return c.persistLocked()
}

// truncateFromEnd forgets epochs that start at or after endOffset, after the
// log was truncated to endOffset.
func (c *epochCache) truncateFromEnd(endOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.truncateFromEndLocked(endOffset) {
		return c.persistLocked()
	}
	return nil
}

func (c *epochCache) truncateFromEndLocked(endOffset int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// truncateFromStart moves the epoch that covers startOffset to begin there
// and forgets older ones, after the log start moved to startOffset.
func (c *epochCache) truncateFromStart(startOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0
	for i+1 < len(c.entries) && c.entries[i+1].StartOffset <= startOffset {
		i++
	}
	if len(c.entries) == 0 || (i == 0 && c.entries[0].StartOffset >= startOffset) {
		return nil
	}
	c.entries = append(c.entries[:0], c.entries[i:]...)
	c.entries[0].StartOffset = max(c.entries[0].StartOffset, startOffset)
	return c.persistLocked()
}

// EndOffsetFor answers OffsetForLeaderEpoch: the largest epoch not above
// epoch, and the offset where the epoch after it starts (logEnd for the
// latest). ok is false when epoch is older than every entry.
func (c *epochCache) endOffsetFor(epoch int32, logEnd int64) (EpochEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.entries) - 1; i >= 0; i-- {
		if c.entries[i].Epoch <= epoch {
			end := logEnd
			if i+1 < len(c.entries) {
				end = c.entries[i+1].StartOffset
			}
			return EpochEntry{c.entries[i].Epoch, end}, true
		}
	}
	return EpochEntry{-1, -1}, false
}

func (c *epochCache) snapshot() []EpochEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]EpochEntry(nil), c.entries...)
}

// replace makes entries the cache, for a follower that rebuilt its state
// from remote storage: the epochs of the remote range, which its log no
// longer holds, are what OffsetForLeaderEpoch answers for it as leader.
func (c *epochCache) replace(entries []EpochEntry) error {
	for i, e := range entries {
		if e.Epoch < 0 || e.StartOffset < 0 || i > 0 && (e.Epoch <= entries[i-1].Epoch || e.StartOffset <= entries[i-1].StartOffset) {
			return fmt.Errorf("broker/log: leader epochs out of order at entry %d: %v", i, entries)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = append([]EpochEntry(nil), entries...)
	return c.persistLocked()
}
