package dump

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/broker/record"
)

// Kind is what a segment file holds, known from its suffix.
type Kind int

const (
	KindUnknown Kind = iota
	KindLog
	KindIndex
	KindTimeIndex
)

// The suffixes and entry sizes are part of the on-disk format (Kafka's).
const (
	LogSuffix       = ".log"
	IndexSuffix     = ".index"
	TimeIndexSuffix = ".timeindex"

	IndexEntrySize     = 8
	TimeIndexEntrySize = 12
)

func (k Kind) String() string {
	switch k {
	case KindLog:
		return "log"
	case KindIndex:
		return "index"
	case KindTimeIndex:
		return "timeindex"
	}
	return "unknown"
}

func kindOf(path string) Kind {
	switch filepath.Ext(path) {
	case LogSuffix:
		return KindLog
	case IndexSuffix:
		return KindIndex
	case TimeIndexSuffix:
		return KindTimeIndex
	}
	return KindUnknown
}

// baseOffset parses the segment's base offset from its file name, which is
// the offset in decimal, zero-padded to 20 digits, then the suffix.
func baseOffset(path string) (int64, error) {
	name := filepath.Base(path)
	prefix, _, _ := strings.Cut(name, ".")
	base, err := strconv.ParseInt(prefix, 10, 64)
	if err != nil || base < 0 || strings.TrimLeft(prefix, "0123456789") != "" {
		return 0, fmt.Errorf("%s: not a segment file name (want a base offset such as 00000000000000000000%s)", path, filepath.Ext(name))
	}
	return base, nil
}

// siblingLog is the .log of the segment an index file belongs to.
func siblingLog(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + LogSuffix
}

// segmentFiles lists the segment files of a partition directory, ordered by
// base offset and then .log, .index, .timeindex.
func segmentFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type seg struct {
		base int64
		kind Kind
		path string
	}
	var segs []seg
	for _, e := range ents {
		k := kindOf(e.Name())
		if e.IsDir() || k == KindUnknown {
			continue
		}
		p := filepath.Join(dir, e.Name())
		base, err := baseOffset(p)
		if err != nil {
			continue
		}
		segs = append(segs, seg{base, k, p})
	}
	sort.Slice(segs, func(i, j int) bool {
		if segs[i].base != segs[j].base {
			return segs[i].base < segs[j].base
		}
		return segs[i].kind < segs[j].kind
	})
	paths := make([]string, len(segs))
	for i, s := range segs {
		paths[i] = s.path
	}
	return paths, nil
}

// IndexEntry is one entry of a .index file.
type IndexEntry struct {
	Entry          int   `json:"entry"`
	RelativeOffset int32 `json:"relativeOffset"`
	Offset         int64 `json:"offset"`
	Position       int32 `json:"position"`
}

// TimeIndexEntry is one entry of a .timeindex file.
type TimeIndexEntry struct {
	Entry          int   `json:"entry"`
	Timestamp      int64 `json:"timestamp"`
	RelativeOffset int32 `json:"relativeOffset"`
	Offset         int64 `json:"offset"`
}

// readIndex reads a whole .index file. trailing counts the bytes after the
// last whole entry.
func readIndex(path string, base int64) (entries []IndexEntry, trailing int, err error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	n := len(buf) / IndexEntrySize
	entries = make([]IndexEntry, n)
	for i := range entries {
		e := buf[i*IndexEntrySize:]
		rel := int32(binary.BigEndian.Uint32(e))
		entries[i] = IndexEntry{
			Entry:          i,
			RelativeOffset: rel,
			Offset:         base + int64(rel),
			Position:       int32(binary.BigEndian.Uint32(e[4:])),
		}
	}
	return entries, len(buf) % IndexEntrySize, nil
}

// readTimeIndex reads a whole .timeindex file.
func readTimeIndex(path string, base int64) (entries []TimeIndexEntry, trailing int, err error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	n := len(buf) / TimeIndexEntrySize
	entries = make([]TimeIndexEntry, n)
	for i := range entries {
		e := buf[i*TimeIndexEntrySize:]
		rel := int32(binary.BigEndian.Uint32(e[8:]))
		entries[i] = TimeIndexEntry{
			Entry:          i,
			Timestamp:      int64(binary.BigEndian.Uint64(e)),
			RelativeOffset: rel,
			Offset:         base + int64(rel),
		}
	}
	return entries, len(buf) % TimeIndexEntrySize, nil
}

// batchSummary is what index verification needs to know of a batch.
type batchSummary struct {
	position     int64
	lastOffset   int64
	maxTimestamp int64
}

// logScan is the outcome of reading a .log to its end.
type logScan struct {
	batches []batchSummary
	size    int64 // file size when opened
	valid   int64 // bytes covered by whole batches; size-valid are invalid
}

// scanLog reads the batches of a .log in order, calling fn (if not nil) for
// each with its byte position. The batch is only valid during the call. It
// stops at the first thing that is not a whole batch, as Kafka's
// FileRecords iteration does: a torn tail, or a length field too small or
// pointing past the end of the file. Only the length fields are trusted here;
// fn decides what else to check.
func scanLog(path string, fn func(pos int64, b record.Batch) error) (*logScan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// Read no further than the size at open: a live segment may grow.
	scan := &logScan{size: st.Size()}
	r := bufio.NewReaderSize(io.LimitReader(f, scan.size), 1<<16)
	var buf []byte
	for {
		var hdr [record.LogOverhead]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return scan, nil
			}
			return scan, err
		}
		n := int64(int32(binary.BigEndian.Uint32(hdr[8:])))
		if n < record.HeaderSize-record.LogOverhead || scan.valid+record.LogOverhead+n > scan.size {
			return scan, nil
		}
		size := record.LogOverhead + int(n)
		if cap(buf) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		copy(buf, hdr[:])
		if _, err := io.ReadFull(r, buf[record.LogOverhead:]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return scan, nil // the file shrank under us
			}
			return scan, err
		}
		b, _, ok := record.Split(buf)
		if !ok {
			return scan, nil // cannot happen: the length was checked above
		}
		scan.batches = append(scan.batches, batchSummary{
			position:     scan.valid,
			lastOffset:   b.LastOffset(),
			maxTimestamp: b.MaxTimestamp(),
		})
		if fn != nil {
			if err := fn(scan.valid, b); err != nil {
				return scan, err
			}
		}
		scan.valid += int64(size)
	}
}
