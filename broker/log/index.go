package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
)

// The two sparse indexes of a segment are Kafka's files, byte for byte, with
// no header and no preallocated tail (the file length is the entry count
// times the entry size, which is how Kafka's tools read them):
//
//	.index      8 bytes an entry: int32 relative offset, int32 position
//	.timeindex 12 bytes an entry: int64 timestamp, int32 relative offset
//
// All integers are big endian; relative offsets count from the segment's
// base offset. An .index entry (r, p) says the batch that starts at byte p of
// the .log ends at offset base+r. A .timeindex entry (t, r) says t is the
// largest timestamp in the segment up to the batch ending at base+r. Both
// strictly increase. An entry is added once index.interval.bytes of batches
// have been appended since the previous one, so a lookup lands at most that
// many bytes before its target.
const (
	entrySize     = 8
	timeEntrySize = 12
)

var errCorruptIndex = errors.New("broker/log: corrupt index")

// index is one index file. Readers look it up without locks: entries live in
// a byte slice published through an atomic pointer, and the appender only
// ever writes past the published length or publishes a fresh copy. A sealed
// segment's index is memory-mapped on first use, so an idle terabyte of log
// costs address space, not heap.
type index struct {
	path  string
	width int // entrySize or timeEntrySize

	data atomic.Pointer[[]byte]

	// Appender state (the owning Log's mu must be held).
	file    *os.File // open for appends while the segment is active
	flushed int      // bytes of data already written to file

	mapOnce sync.Once
	mapErr  error
	maps    [][]byte // mappings to unmap on close
}

func newIndex(path string, width int, active bool) (*index, error) {
	ix := &index{path: path, width: width}
	if !active {
		// Mapped lazily by entries().
		return ix, nil
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if len(data)%width != 0 {
		return nil, fmt.Errorf("%w %s: length %d is not a multiple of %d", errCorruptIndex, path, len(data), width)
	}
	ix.file, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	ix.flushed = len(data)
	ix.data.Store(&data)
	return ix, nil
}

// entries is the published index, mapping a sealed index on first use.
func (ix *index) entries() ([]byte, error) {
	if p := ix.data.Load(); p != nil {
		return *p, nil
	}
	ix.mapOnce.Do(func() {
		data, err := mapFile(ix.path)
		if err != nil {
			ix.mapErr = err
			return
		}
		if len(data)%ix.width != 0 {
			ix.mapErr = fmt.Errorf("%w %s: length %d is not a multiple of %d", errCorruptIndex, ix.path, len(data), ix.width)
			return
		}
		if data != nil {
			ix.maps = append(ix.maps, data)
		}
		ix.data.Store(&data)
	})
	if p := ix.data.Load(); p != nil {
		return *p, nil
	}
	return nil, ix.mapErr
}

func mapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return nil, err
	}
	return syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
}

func (ix *index) len() int {
	d, _ := ix.entries()
	return len(d) / ix.width
}

// append adds one entry. The bytes reach the file on flush, roll or close: a
// kill -9 before that loses only index entries past the recovery point, and
// recovery rebuilds those.
func (ix *index) append(entry []byte) {
	d, _ := ix.entries()
	if cap(d)-len(d) < len(entry) {
		grown := make([]byte, len(d), 2*cap(d)+64*ix.width)
		copy(grown, d)
		d = grown
	}
	d = append(d, entry...)
	ix.data.Store(&d)
	if len(d)-ix.flushed >= 4096 {
		// A failed write leaves flushed where it was: the entries stay
		// in memory and the next flush (sync, seal, close) writes them
		// again and returns the error.
		_ = ix.flush()
	}
}

// flush writes appended entries to the file.
func (ix *index) flush() error {
	if ix.file == nil {
		return nil
	}
	d, _ := ix.entries()
	if ix.flushed >= len(d) {
		return nil
	}
	if _, err := ix.file.Write(d[ix.flushed:]); err != nil {
		return fmt.Errorf("broker/log: write %s: %w", ix.path, err)
	}
	ix.flushed = len(d)
	return nil
}

func (ix *index) sync() error {
	if err := ix.flush(); err != nil || ix.file == nil {
		return err
	}
	return ix.file.Sync()
}

// seal flushes and closes the append handle when the segment stops being
// active; the entries stay in memory.
func (ix *index) seal() error {
	if ix.file == nil {
		return nil
	}
	err := ix.flush()
	if cerr := ix.file.Close(); err == nil {
		err = cerr
	}
	ix.file = nil
	return err
}

// truncateEntries keeps the first n entries, in memory and on disk.
func (ix *index) truncateEntries(n int) error {
	d, err := ix.entries()
	if err != nil {
		return err
	}
	if n*ix.width >= len(d) {
		return nil
	}
	kept := append([]byte(nil), d[:n*ix.width]...)
	ix.data.Store(&kept)
	ix.flushed = min(ix.flushed, len(kept))
	return os.Truncate(ix.path, int64(ix.flushed))
}

// reset drops every entry and truncates the file, before a rebuild.
func (ix *index) reset() error {
	empty := []byte{}
	ix.data.Store(&empty)
	ix.flushed = 0
	if err := os.Truncate(ix.path, 0); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// close releases the file handle and mappings. Nobody may read the index
// after it.
func (ix *index) close() error {
	err := ix.seal()
	for _, m := range ix.maps {
		if merr := syscall.Munmap(m); err == nil && merr != nil {
			err = fmt.Errorf("broker/log: unmap %s: %w", ix.path, merr)
		}
	}
	ix.maps = nil
	empty := []byte{}
	ix.data.Store(&empty)
	return err
}

// offsetIndex is a segment's .index.
type offsetIndex struct {
	*index
	base int64
}

func (oi offsetIndex) entry(d []byte, i int) (offset int64, pos int64) {
	e := d[i*entrySize:]
	return oi.base + int64(int32(binary.BigEndian.Uint32(e))), int64(binary.BigEndian.Uint32(e[4:]))
}

func (oi offsetIndex) add(lastOffset, pos int64) {
	var e [entrySize]byte
	binary.BigEndian.PutUint32(e[:], uint32(lastOffset-oi.base))
	binary.BigEndian.PutUint32(e[4:], uint32(pos))
	oi.append(e[:])
}

// lookup is the position to start scanning at for target: that of the last
// entry whose batch ends at or before target, or 0.
func (oi offsetIndex) lookup(target int64) (pos int64) {
	d, err := oi.entries()
	if err != nil {
		return 0
	}
	n := len(d) / entrySize
	i := sort.Search(n, func(i int) bool { o, _ := oi.entry(d, i); return o > target })
	if i == 0 {
		return 0
	}
	_, pos = oi.entry(d, i-1)
	return pos
}

// last is the final entry, ok=false when there is none.
func (oi offsetIndex) last() (offset, pos int64, ok bool) {
	d, err := oi.entries()
	if err != nil || len(d) == 0 {
		return 0, 0, false
	}
	offset, pos = oi.entry(d, len(d)/entrySize-1)
	return offset, pos, true
}

// check is Kafka's index sanity check: entries increase and stay inside the
// segment.
func (oi offsetIndex) check(logSize int64) error {
	d, err := oi.entries()
	if err != nil {
		return err
	}
	prevOff, prevPos := oi.base-1, int64(-1)
	for i := 0; i < len(d)/entrySize; i++ {
		o, p := oi.entry(d, i)
		if o <= prevOff || p <= prevPos || p >= logSize {
			return fmt.Errorf("%w %s: entry %d (offset %d, position %d) out of order or past the log's %d bytes", errCorruptIndex, oi.path, i, o, p, logSize)
		}
		prevOff, prevPos = o, p
	}
	return nil
}

// truncateTo drops entries for batches at or after position pos.
func (oi offsetIndex) truncateTo(pos int64) error {
	d, err := oi.entries()
	if err != nil {
		return err
	}
	n := len(d) / entrySize
	keep := sort.Search(n, func(i int) bool { _, p := oi.entry(d, i); return p >= pos })
	return oi.truncateEntries(keep)
}

// timeIndex is a segment's .timeindex.
type timeIndex struct {
	*index
	base int64
}

func (ti timeIndex) entry(d []byte, i int) (ts int64, offset int64) {
	e := d[i*timeEntrySize:]
	return int64(binary.BigEndian.Uint64(e)), ti.base + int64(int32(binary.BigEndian.Uint32(e[8:])))
}

// maybeAdd appends (ts, offset) when ts is newer than the last entry.
func (ti timeIndex) maybeAdd(ts, offset int64) {
	if lt, lo, ok := ti.last(); ok && (ts <= lt || offset <= lo) {
		return
	}
	var e [timeEntrySize]byte
	binary.BigEndian.PutUint64(e[:], uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(offset-ti.base))
	ti.append(e[:])
}

func (ti timeIndex) last() (ts, offset int64, ok bool) {
	d, err := ti.entries()
	if err != nil || len(d) == 0 {
		return 0, 0, false
	}
	ts, offset = ti.entry(d, len(d)/timeEntrySize-1)
	return ts, offset, true
}

// lookup is the offset to start a search for the first record at or after
// ts: that of the last entry with a smaller timestamp, or the segment base.
func (ti timeIndex) lookup(ts int64) int64 {
	d, err := ti.entries()
	if err != nil {
		return ti.base
	}
	n := len(d) / timeEntrySize
	i := sort.Search(n, func(i int) bool { t, _ := ti.entry(d, i); return t >= ts })
	if i == 0 {
		return ti.base
	}
	_, o := ti.entry(d, i-1)
	return o
}

func (ti timeIndex) check(lastOffset int64) error {
	d, err := ti.entries()
	if err != nil {
		return err
	}
	prevTs, prevOff := int64(-1<<63), ti.base-1
	for i := 0; i < len(d)/timeEntrySize; i++ {
		t, o := ti.entry(d, i)
		if t <= prevTs || o <= prevOff || o > lastOffset {
			return fmt.Errorf("%w %s: entry %d (timestamp %d, offset %d) out of order or past offset %d", errCorruptIndex, ti.path, i, t, o, lastOffset)
		}
		prevTs, prevOff = t, o
	}
	return nil
}

// truncateTo drops entries for offsets at or after end.
func (ti timeIndex) truncateTo(end int64) error {
	d, err := ti.entries()
	if err != nil {
		return err
	}
	n := len(d) / timeEntrySize
	keep := sort.Search(n, func(i int) bool { _, o := ti.entry(d, i); return o >= end })
	return ti.truncateEntries(keep)
}

// reopenForAppend makes a sealed index appendable again, when truncation
// turns its segment back into the active one.
func (ix *index) reopenForAppend() error {
	if ix.file != nil {
		return nil
	}
	d, err := ix.entries()
	if errors.Is(err, errCorruptIndex) {
		d = nil // the caller rebuilds it
	} else if err != nil {
		return err
	}
	heap := append(make([]byte, 0, len(d)+64*ix.width), d...)
	f, err := os.OpenFile(ix.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	ix.file, ix.flushed = f, len(heap)
	ix.data.Store(&heap)
	return nil
}
