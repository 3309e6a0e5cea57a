package log

import (
	"sort"

	"github.com/tributary-io/tributary/broker/record"
)

// ScanHeaders calls fn with the header of every batch whose last offset is at
// least from, in offset order, up to the log end at the time of the call.
// Only headers are read (record.HeaderSize bytes each), so rebuilding
// producer state or leader epochs from a large log stays cheap. The header
// passed to fn is reused; copy it to keep it.
func (l *Log) ScanHeaders(from int64, fn func(record.Batch) error) error {
	segs := l.segments()
	i := max(sort.Search(len(segs), func(i int) bool { return segs[i].base > from })-1, 0)
	buf := make([]byte, record.HeaderSize)
	for ; i < len(segs); i++ {
		s := segs[i]
		end := s.size.Load()
		// A corrupt batch ends the scan of its segment: what follows
		// cannot be located without it.
		pos, h, found, _ := s.find(from, s.offsets.lookup(from), end)
		for found {
			if err := fn(h); err != nil {
				return err
			}
			pos += int64(h.Length()) + record.LogOverhead
			h, found = s.header(pos, end, buf)
		}
	}
	return nil
}
