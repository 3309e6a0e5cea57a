package log

import (
	"fmt"
	"sort"

	"github.com/tributary-io/tributary/broker/record"
)

// ScanHeaders calls fn with the header of every batch whose last offset is at
// least from, in offset order, up to the log end at the time of the call.
// Only headers are read (record.HeaderSize bytes each), so rebuilding
// producer state or leader epochs from a large log stays cheap. The header
// passed to fn is reused; copy it to keep it.
func (l *Log) ScanHeaders(from int64, fn func(record.Batch) error) error {
	segs, err := l.acquireSegments()
	if err != nil {
		return err
	}
	defer releaseAll(segs)
	i := max(sort.Search(len(segs), func(i int) bool { return segs[i].base > from })-1, 0)
	buf := make([]byte, record.HeaderSize)
	for ; i < len(segs); i++ {
		s := segs[i]
		end := s.size.Load()
		// A corrupt batch is an error, not the end of the scan: what
		// follows it cannot be located, and a caller rebuilding state
		// from a silently shortened scan would carry on with it wrong.
		pos, h, found, err := s.find(from, s.offsets.lookup(from), end)
		for ; found && err == nil; pos, h, found, err = s.next(pos, h, end, buf) {
			if err := fn(h); err != nil {
				return err
			}
		}
		if err != nil {
			return fmt.Errorf("broker/log: scanning %s: %w", l.tp, err)
		}
	}
	return nil
}
