package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// Format constants: changing any of them changes the on-disk format.
const (
	version         = 1
	headerSize      = 20 // segment header
	entryHeaderSize = 16 // crc, len, appended-at
	positionSize    = 36
	segmentMagic    = "TSPL"
	positionMagic   = "TSPP"
	positionFile    = "position"
	segmentSuffix   = ".seg"
)

// MaxEntryBytes is the largest payload of one entry; a longer length field
// is corruption.
const MaxEntryBytes = 16 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Errors.
var (
	// ErrSpoolFull is returned by Append when the entries would take the
	// spool over Options.MaxBytes. Nothing was written; retry later.
	ErrSpoolFull = errors.New("tracker/spool: spool full")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("tracker/spool: closed")
	// ErrVersion is a segment or checkpoint of an unknown format version.
	ErrVersion = errors.New("tracker/spool: unknown format version")
	// ErrCorruptPosition is a checkpoint file that fails its CRC.
	ErrCorruptPosition = errors.New("tracker/spool: corrupt position checkpoint")
	// ErrTooLarge is an entry longer than MaxEntryBytes.
	ErrTooLarge = errors.New("tracker/spool: entry too large")
	// ErrLocked is a spool directory another process has open.
	ErrLocked = errors.New("tracker/spool: locked")
	// ErrCorrupt is an entry that fails its CRC when read back (the disk
	// changed under a running spool).
	ErrCorrupt = errors.New("tracker/spool: corrupt entry")
)

// Options configure a spool. The zero value is usable.
type Options struct {
	// SegmentBytes is the size at which the active segment is closed and a
	// new one started; default 64 MiB.
	SegmentBytes int64
	// MaxBytes bounds the total size of the segment files; default 1 GiB.
	// Space comes back only when a whole segment is delivered, so MaxBytes
	// should be several SegmentBytes.
	MaxBytes int64
	// Logger receives the recovery report; default slog.Default().
	Logger *slog.Logger
}

func (o *Options) fill() {
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = 64 << 20
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 1 << 30
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Position is a place in the spool: the seq of the next entry and where it
// is (or will be) on disk.
type Position struct {
	Seq     uint64
	Segment uint64 // base seq of the segment
	Offset  int64  // byte offset in the segment
}

// Entry is one entry read back from the spool.
type Entry struct {
	Seq        uint64
	AppendedAt time.Time
	Data       []byte
	// Next is the position right after this entry: Commit(e.Next) marks
	// this entry and every earlier one delivered.
	Next Position
}

// Recovery is what Open found and cut.
type Recovery struct {
	Segments          int   // segment files found
	Entries           int64 // good entries found (including delivered ones)
	TruncatedSegments int   // segments cut at a bad entry (or removed)
	TruncatedBytes    int64 // bytes cut
}

// Stats is a snapshot of the spool's size.
type Stats struct {
	Bytes     int64  // total size of the segment files
	Segments  int    // segment files
	Appended  uint64 // seq the next appended entry gets
	Committed uint64 // seq of the first undelivered entry
	Syncs     uint64 // fsyncs of appended data since Open (group commit: <= appends)
}

type segment struct {
	base uint64
	path string
	size int64    // bytes written (header included); final once sealed
	f    *os.File // write handle; only the active (last) segment's is open
}

// Spool is an open spool directory. See the package doc for the format and
// the concurrency model.
type Spool struct {
	dir  string
	opts Options
	rec  Recovery

	syncMu sync.Mutex // serializes fsyncs; taken before mu

	mu        sync.Mutex
	cond      *sync.Cond // on mu: synced advanced, or closed
	segs      []*segment // in seq order; the last is active
	total     int64      // sum of segs' sizes
	nextSeq   uint64
	syncedSeq uint64   // entries with seq < syncedSeq are durable
	syncedSeg *segment // the segment syncedOff is in
	syncedOff int64    // durable bytes of syncedSeg
	committed Position // last checkpoint
	syncs     uint64
	err       error // sticky write/fsync error
	closed    bool

	lock *os.File // flock on dir/LOCK, held until Close

	readMu sync.Mutex // the consumer's cursor
	cursor Position
	rf     *os.File // read handle of the cursor's segment
	rfBase uint64
}

// Open opens or creates the spool in dir, recovering it: see the package
// doc. A torn or corrupt tail is truncated and reported in Recovery().
func Open(dir string, opts Options) (*Spool, error) {
	opts.fill()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s, err := open(dir, opts)
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		return nil, err
	}
	s.lock = lock
	return s, nil
}

func open(dir string, opts Options) (*Spool, error) {
	s := &Spool{dir: dir, opts: opts}
	s.cond = sync.NewCond(&s.mu)
	os.Remove(filepath.Join(dir, positionFile+".tmp"))

	pos, havePos, err := readPosition(filepath.Join(dir, positionFile))
	if err != nil {
		return nil, err
	}
	names, err := filepath.Glob(filepath.Join(dir, "*"+segmentSuffix))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for i, name := range names {
		base, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(name), segmentSuffix), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("tracker/spool: unexpected file %s", name)
		}
		last := i == len(names)-1
		seg, n, cut, err := recoverSegment(name, base)
		if err != nil {
			return nil, err
		}
		s.rec.Segments++
		s.rec.Entries += n
		if cut > 0 {
			s.rec.TruncatedSegments++
			s.rec.TruncatedBytes += cut
		}
		if seg == nil { // header torn: the file was removed
			continue
		}
		if havePos && !last && len(names) > i+1 {
			// Fully delivered when the next segment starts at or before
			// the committed seq.
			nb, _ := strconv.ParseUint(strings.TrimSuffix(filepath.Base(names[i+1]), segmentSuffix), 10, 64)
			if nb <= pos.Seq {
				os.Remove(name)
				continue
			}
		}
		s.segs = append(s.segs, seg)
		s.total += seg.size
		s.nextSeq = base + uint64(n)
	}
	if s.rec.TruncatedBytes > 0 {
		opts.Logger.Warn("tracker/spool: truncated a corrupt or torn tail", "dir", dir,
			"segments", s.rec.TruncatedSegments, "bytes", s.rec.TruncatedBytes, "good_entries", s.rec.Entries)
	}
	if len(s.segs) == 0 {
		start := uint64(0)
		if havePos {
			start = pos.Seq
		}
		if err := s.newSegment(start); err != nil {
			return nil, err
		}
	} else {
		f, err := os.OpenFile(s.active().path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		if _, err := f.Seek(s.active().size, io.SeekStart); err != nil {
			f.Close()
			return nil, err
		}
		s.active().f = f
	}
	if s.nextSeq < s.active().base {
		s.nextSeq = s.active().base
	}

	// Place the committed position on a segment that exists.
	first := s.segs[0]
	switch {
	case !havePos || pos.Seq < first.base:
		s.committed = Position{Seq: first.base, Segment: first.base, Offset: headerSize}
	case pos.Seq >= s.nextSeq:
		// Everything is delivered (or the tail holding the position was
		// cut: then what is gone had been delivered).
		a := s.active()
		s.committed = Position{Seq: s.nextSeq, Segment: a.base, Offset: a.size}
	default:
		s.committed = s.locate(pos)
		if g := s.segmentOf(s.committed.Segment); g == nil || s.committed.Offset > g.size || s.committed.Offset < headerSize {
			return nil, fmt.Errorf("%w: position %+v is not on an entry", ErrCorruptPosition, pos)
		}
	}
	s.syncedSeq = s.nextSeq
	s.syncedSeg = s.active()
	s.syncedOff = s.active().size
	s.cursor = s.committed
	if !havePos || s.committed != pos {
		if err := s.writePosition(s.committed); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Recovery reports what Open found and truncated.
func (s *Spool) Recovery() Recovery { return s.rec }

func (s *Spool) active() *segment { return s.segs[len(s.segs)-1] }

// segmentOf finds the segment with base; mu must be held (or Open running).
func (s *Spool) segmentOf(base uint64) *segment {
	for _, g := range s.segs {
		if g.base == base {
			return g
		}
	}
	return nil
}

func segmentName(dir string, base uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, segmentSuffix))
}

// recoverSegment checks a segment, truncating it at its first bad entry. It
// returns the segment (nil if its header was torn and the file removed), the
// number of good entries and the bytes cut.
func recoverSegment(path string, base uint64) (*segment, int64, int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(data) < headerSize || string(data[:4]) != segmentMagic ||
		crc32.Checksum(data[:16], crcTable) != binary.BigEndian.Uint32(data[16:20]) {
		// Created but its header never made it to disk: nothing in it
		// was ever acknowledged (entries are synced after the header).
		if err := os.Remove(path); err != nil {
			return nil, 0, 0, err
		}
		return nil, 0, int64(len(data)), atomicfile.SyncDir(filepath.Dir(path))
	}
	if data[4] != version {
		return nil, 0, 0, fmt.Errorf("%w %d in %s", ErrVersion, data[4], path)
	}
	if got := binary.BigEndian.Uint64(data[8:16]); got != base {
		return nil, 0, 0, fmt.Errorf("tracker/spool: %s has base seq %d in its header", path, got)
	}
	off := int64(headerSize)
	var n int64
	for {
		e, ok := parseEntry(data[off:])
		if !ok {
			break
		}
		off += e
		n++
	}
	cut := int64(len(data)) - off
	if cut > 0 {
		if err := os.Truncate(path, off); err != nil {
			return nil, 0, 0, err
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, 0, 0, err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return nil, 0, 0, err
		}
	}
	return &segment{base: base, path: path, size: off}, n, cut, nil
}

// parseEntry returns the length of the whole entry at the start of b, or
// false if there is no complete entry with a good CRC.
func parseEntry(b []byte) (int64, bool) {
	if len(b) < entryHeaderSize {
		return 0, false
	}
	n := binary.BigEndian.Uint32(b[4:8])
	if n > MaxEntryBytes || int64(len(b)) < entryHeaderSize+int64(n) {
		return 0, false
	}
	end := entryHeaderSize + int(n)
	if crc32.Checksum(b[4:end], crcTable) != binary.BigEndian.Uint32(b[0:4]) {
		return 0, false
	}
	return int64(end), true
}

// newSegment creates, fsyncs and activates a segment starting at base; mu
// must be held (or Open running). The previous active segment is sealed by
// the caller.
func (s *Spool) newSegment(base uint64) error {
	path := segmentName(s.dir, base)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	var h [headerSize]byte
	copy(h[:4], segmentMagic)
	h[4] = version
	binary.BigEndian.PutUint64(h[8:16], base)
	binary.BigEndian.PutUint32(h[16:20], crc32.Checksum(h[:16], crcTable))
	if _, err := f.Write(h[:]); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := atomicfile.SyncDir(s.dir); err != nil {
		f.Close()
		return err
	}
	s.segs = append(s.segs, &segment{base: base, path: path, size: headerSize, f: f})
	s.total += headerSize
	return nil
}

// Append writes the payloads as consecutive entries and returns once they
// are on disk (fsynced). It fails with ErrSpoolFull, without writing
// anything, when they do not fit in MaxBytes. Concurrent appends share
// fsyncs.
func (s *Spool) Append(payloads ...[]byte) error {
	if len(payloads) == 0 {
		return nil
	}
	need := int64(0)
	for _, p := range payloads {
		if len(p) > MaxEntryBytes {
			return ErrTooLarge
		}
		need += entryHeaderSize + int64(len(p))
	}
	buf := make([]byte, 0, need)
	now := time.Now().UnixMilli()
	for _, p := range payloads {
		var h [entryHeaderSize]byte
		binary.BigEndian.PutUint32(h[4:8], uint32(len(p)))
		binary.BigEndian.PutUint64(h[8:16], uint64(now))
		start := len(buf)
		buf = append(buf, h[:]...)
		buf = append(buf, p...)
		binary.BigEndian.PutUint32(buf[start:], crc32.Checksum(buf[start+4:], crcTable))
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		return err
	}
	if s.active().size > headerSize && s.active().size+need > s.opts.SegmentBytes {
		if s.total+need+headerSize > s.opts.MaxBytes {
			s.mu.Unlock()
			return ErrSpoolFull
		}
		if err := s.rotate(); err != nil {
			s.err = err
			s.mu.Unlock()
			return err
		}
	}
	if s.total+need > s.opts.MaxBytes {
		s.mu.Unlock()
		return ErrSpoolFull
	}
	a := s.active()
	if _, err := a.f.Write(buf); err != nil {
		s.err = fmt.Errorf("tracker/spool: write %s: %w", a.path, err)
		s.mu.Unlock()
		return s.err
	}
	a.size += need
	s.total += need
	s.nextSeq += uint64(len(payloads))
	mine := s.nextSeq
	s.mu.Unlock()

	return s.syncUpTo(mine)
}

// syncUpTo returns once every entry with seq < seq is durable, fsyncing
// itself unless another appender's fsync already covered it.
func (s *Spool) syncUpTo(seq uint64) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	if s.syncedSeq >= seq {
		s.mu.Unlock()
		return nil
	}
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		return err
	}
	a := s.active()
	target, off := s.nextSeq, a.size
	s.mu.Unlock()

	err := a.f.Sync() // the fsync everyone waiting behind syncMu shares

	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && target > s.syncedSeq { // else rotate synced it
		// After a failed fsync the page cache cannot be trusted: stop.
		s.err = fmt.Errorf("tracker/spool: fsync %s: %w", a.path, err)
		return s.err
	}
	s.syncs++
	if target > s.syncedSeq {
		s.syncedSeq = target
		s.syncedSeg, s.syncedOff = a, off
		s.cond.Broadcast()
	}
	return nil
}

// rotate seals the active segment (fsynced, its write handle closed) and
// starts a new one; mu must be held, syncMu need not be. A concurrent
// syncUpTo that took the old segment may then fail to fsync the closed
// handle: it ignores that error, since this Sync covered its entries.
func (s *Spool) rotate() error {
	a := s.active()
	if err := a.f.Sync(); err != nil {
		return err
	}
	a.f.Close()
	a.f = nil
	s.syncedSeq = s.nextSeq
	if err := s.newSegment(s.nextSeq); err != nil {
		return err
	}
	s.syncedSeg, s.syncedOff = s.active(), headerSize
	s.cond.Broadcast()
	return nil
}

// locate returns p, or, if p's segment was deleted (p was at its very end),
// the start of the first segment after it. mu must be held (or Open
// running).
func (s *Spool) locate(p Position) Position {
	if s.segmentOf(p.Segment) != nil {
		return p
	}
	for _, g := range s.segs {
		if g.base >= p.Seq {
			return Position{Seq: g.base, Segment: g.base, Offset: headerSize}
		}
	}
	a := s.active()
	return Position{Seq: s.nextSeq, Segment: a.base, Offset: a.size}
}

// Next returns up to max entries (and about maxBytes of payload, at least
// one entry) after the consumer's cursor, waiting until there is at least
// one or until stop is closed (then it returns nil, nil). Entries are
// returned once; Rewind goes back to the committed position.
func (s *Spool) Next(stop <-chan struct{}, max int, maxBytes int) ([]Entry, error) {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	for {
		seg, limit, ok, err := s.readable(stop)
		if err != nil || !ok {
			return nil, err
		}
		if seg == nil { // move on to the next segment
			continue
		}
		entries, err := s.readFrom(seg, limit, max, maxBytes)
		if err != nil || len(entries) > 0 {
			return entries, err
		}
	}
}

// readable waits until there is something to read at the cursor and says
// from which segment up to which offset. It returns seg == nil after
// moving the cursor to the next segment. readMu must be held.
func (s *Spool) readable(stop <-chan struct{}) (*segment, int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var wake chan struct{}
	for {
		if s.closed {
			return nil, 0, false, ErrClosed
		}
		if s.cursor.Seq < s.syncedSeq {
			break
		}
		if wake == nil && stop != nil {
			wake = make(chan struct{})
			go func(w chan struct{}) {
				select {
				case <-stop:
					s.mu.Lock()
					s.cond.Broadcast()
					s.mu.Unlock()
				case <-w:
				}
			}(wake)
			defer close(wake)
		}
		select {
		case <-stop:
			return nil, 0, false, nil
		default:
		}
		s.cond.Wait()
	}
	s.cursor = s.locate(s.cursor)
	var seg, nextSeg *segment
	for i, g := range s.segs {
		if g.base == s.cursor.Segment {
			seg = g
			if i+1 < len(s.segs) {
				nextSeg = s.segs[i+1]
			}
		}
	}
	if seg == nil {
		return nil, 0, false, fmt.Errorf("tracker/spool: cursor %+v on a deleted segment", s.cursor)
	}
	limit := seg.size
	if seg == s.syncedSeg {
		limit = s.syncedOff
	}
	if s.cursor.Offset >= limit {
		if nextSeg == nil || seg == s.syncedSeg {
			return nil, 0, false, fmt.Errorf("tracker/spool: cursor %+v beyond synced data", s.cursor)
		}
		s.cursor = Position{Seq: nextSeg.base, Segment: nextSeg.base, Offset: headerSize}
		return nil, 0, true, nil
	}
	return seg, limit, true, nil
}

// readFrom parses entries of seg from the cursor up to limit. readMu must
// be held.
func (s *Spool) readFrom(seg *segment, limit int64, max, maxBytes int) ([]Entry, error) {
	if s.rf == nil || s.rfBase != seg.base {
		if s.rf != nil {
			s.rf.Close()
		}
		f, err := os.Open(seg.path)
		if err != nil {
			return nil, err
		}
		s.rf, s.rfBase = f, seg.base
	}
	n := limit - s.cursor.Offset
	if n > int64(maxBytes)+entryHeaderSize {
		n = int64(maxBytes) + entryHeaderSize
	}
	if n < entryHeaderSize {
		n = entryHeaderSize
	}
	buf := make([]byte, n)
	if _, err := s.rf.ReadAt(buf, s.cursor.Offset); err != nil {
		return nil, err
	}
	var out []Entry
	off := 0
	for len(out) < max {
		b := buf[off:]
		if len(b) < entryHeaderSize {
			break
		}
		ln := int(binary.BigEndian.Uint32(b[4:8]))
		if ln > MaxEntryBytes {
			return nil, fmt.Errorf("%w at %s offset %d", ErrCorrupt, seg.path, s.cursor.Offset)
		}
		if len(b) < entryHeaderSize+ln {
			if len(out) > 0 {
				break
			}
			// One entry larger than maxBytes: read it whole.
			buf = make([]byte, entryHeaderSize+ln)
			if _, err := s.rf.ReadAt(buf, s.cursor.Offset); err != nil {
				return nil, err
			}
			b, off = buf, 0
		}
		if _, ok := parseEntry(b); !ok {
			return nil, fmt.Errorf("%w at %s offset %d", ErrCorrupt, seg.path, s.cursor.Offset)
		}
		e := Entry{
			Seq:        s.cursor.Seq,
			AppendedAt: time.UnixMilli(int64(binary.BigEndian.Uint64(b[8:16]))),
			Data:       b[entryHeaderSize : entryHeaderSize+ln : entryHeaderSize+ln],
		}
		off += entryHeaderSize + ln
		s.cursor.Seq++
		s.cursor.Offset += int64(entryHeaderSize + ln)
		e.Next = s.cursor
		out = append(out, e)
		if off >= len(buf) {
			break
		}
	}
	return out, nil
}

// Rewind moves the consumer's cursor back to the committed position, so
// that Next returns the uncommitted entries again.
func (s *Spool) Rewind() {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	s.mu.Lock()
	s.cursor = s.locate(s.committed)
	s.mu.Unlock()
}

// Commit records that every entry before p was delivered: the checkpoint
// is written atomically, then segments wholly before p are deleted.
func (s *Spool) Commit(p Position) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if p.Seq <= s.committed.Seq {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	if err := s.writePosition(p); err != nil {
		return err
	}
	s.mu.Lock()
	var drop []*segment
	for len(s.segs) > 1 && s.segs[1].base <= p.Seq {
		drop = append(drop, s.segs[0])
		s.total -= s.segs[0].size
		s.segs = s.segs[1:]
	}
	s.committed = s.locate(p)
	s.mu.Unlock()
	for _, g := range drop {
		if g.f != nil {
			g.f.Close()
		}
		if err := os.Remove(g.path); err != nil {
			return err
		}
	}
	return nil
}

// Stats returns the spool's size and positions.
func (s *Spool) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Bytes: s.total, Segments: len(s.segs), Appended: s.nextSeq, Committed: s.committed.Seq, Syncs: s.syncs}
}

// Close closes the files. Appends and reads after it fail with ErrClosed;
// a blocked Next returns.
func (s *Spool) Close() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cond.Broadcast()
	var err error
	for _, g := range s.segs {
		if g.f != nil {
			if e := g.f.Close(); e != nil && err == nil {
				err = e
			}
		}
	}
	s.mu.Unlock()
	s.readMu.Lock()
	if s.rf != nil {
		s.rf.Close()
	}
	s.readMu.Unlock()
	if s.lock != nil {
		s.lock.Close()
	}
	return err
}

func (s *Spool) writePosition(p Position) error {
	var b [positionSize]byte
	copy(b[:4], positionMagic)
	b[4] = version
	binary.BigEndian.PutUint64(b[8:16], p.Seq)
	binary.BigEndian.PutUint64(b[16:24], p.Segment)
	binary.BigEndian.PutUint64(b[24:32], uint64(p.Offset))
	binary.BigEndian.PutUint32(b[32:36], crc32.Checksum(b[:32], crcTable))
	return atomicfile.WriteFile(filepath.Join(s.dir, positionFile), b[:])
}

func readPosition(path string) (Position, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Position{}, false, nil
	}
	if err != nil {
		return Position{}, false, err
	}
	if len(b) != positionSize || string(b[:4]) != positionMagic ||
		crc32.Checksum(b[:32], crcTable) != binary.BigEndian.Uint32(b[32:36]) {
		return Position{}, false, fmt.Errorf("%w: %s (delete it to replay the whole spool)", ErrCorruptPosition, path)
	}
	if b[4] != version {
		return Position{}, false, fmt.Errorf("%w %d in %s", ErrVersion, b[4], path)
	}
	return Position{
		Seq:     binary.BigEndian.Uint64(b[8:16]),
		Segment: binary.BigEndian.Uint64(b[16:24]),
		Offset:  int64(binary.BigEndian.Uint64(b[24:32])),
	}, true, nil
}
