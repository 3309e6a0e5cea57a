package remotelog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"

	"github.com/tributary-io/tributary/internal/fsys"
)

// Reading a partition's committed records straight from remote storage,
// for the loader (tributary load run --from-tier).
//
// A read_committed consumer gets from the broker the records of committed
// transactions and of non-transactional producers, never control records
// or aborted ones. ReadCommitted gives the same from the remote segments:
//
//   - a transactional batch covered by an entry of the uploaded .txnindex
//     files (producer, first offset .. abort marker) is aborted and
//     skipped;
//   - a transactional batch no entry covers is committed, unless its
//     transaction's marker is not in remote storage yet (it can lie in a
//     segment still only on the broker): such a batch is held, with
//     everything after it so that records stay in offset order, until its
//     producer's marker is read. When the remote segments end first, or
//     the held records exceed maxHeld, reading stops at the first held
//     offset and the caller reads on from the broker.
//
// ReadCommitted never reads the files of a segment the manifest does not
// name (an upload in progress), and stops at the remote end.

// maxHeld bounds the bytes held while a transaction's outcome is unknown.
const maxHeld = 64 << 20

// ErrBelowStart is an offset below the remote log start: deleted by total
// retention or DeleteRecords.
var ErrBelowStart = errors.New("remotelog: offset below the remote log start")

// Partition is one partition's remote directory.
type Partition struct {
	FS  fsys.FS
	Dir string // Dir(topic, topicID, partition)
}

// Manifest reads the partition's newest manifest; nil and no error when
// the partition has nothing in remote storage. Versions are never
// written over (versions.go), so a read never races with a writer.
func (p *Partition) Manifest() (*Manifest, error) {
	return ReadLatest(p.FS, p.Dir)
}

// ReadCommitted calls fn with the committed records of [from, to), in
// offset order, batch by batch (only the records in the range), read from
// the remote segments of man. It returns the offset it stopped at: to
// when the range was read whole, else the first offset to read from the
// broker. A from below the remote log start is ErrBelowStart, with
// nothing read.
func (p *Partition) ReadCommitted(ctx context.Context, man *Manifest, from, to int64, fn func([]Record) error) (int64, error) {
	if man == nil || len(man.Segments) == 0 || from >= man.UploadedEnd() {
		return from, nil
	}
	if from < man.LogStartOffset {
		return from, fmt.Errorf("%w: %d is below %d", ErrBelowStart, from, man.LogStartOffset)
	}
	r := &committedReader{p: p, man: man, from: from, to: to, fn: fn, loaded: map[int64]bool{}}
	// The indexes of the segments of the range first: most aborted
	// transactions are then known before their records are read.
	for _, s := range man.Segments {
		if s.EndOffset >= from && s.BaseOffset < to {
			if err := r.loadTxnIndex(s); err != nil {
				return from, err
			}
		}
	}
	return r.run(ctx)
}

type committedReader struct {
	p        *Partition
	man      *Manifest
	from, to int64
	fn       func([]Record) error

	// aborted are the entries of the .txnindex files read, by producer,
	// sorted by abort marker (a producer's transactions do not overlap),
	// so that checking a batch is a binary search, not a scan of every
	// abort of the unit's range (review 9).
	aborted map[int64][]AbortedTxn
	loaded  map[int64]bool // segments whose .txnindex is in aborted

	next    int64           // the first offset not yet handed to fn or held
	held    []*Batch        // from the first batch of an undecided transaction on
	heldAt  int64           // the first offset of held[0]
	heldLen int64           // their bytes
	open    map[int64]bool  // producers with an undecided transaction in held
	verdict map[*Batch]bool // held transactional batches decided: true committed
}

func (r *committedReader) loadTxnIndex(s SegmentMetadata) error {
	if r.loaded[s.BaseOffset] {
		return nil
	}
	r.loaded[s.BaseOffset] = true
	if _, ok := s.Files[SuffixTxnIndex]; !ok {
		return nil
	}
	data, err := r.p.FS.ReadFile(path.Join(r.p.Dir, s.FileName(SuffixTxnIndex)))
	if err != nil {
		return err
	}
	entries, err := ParseTxnIndex(data)
	if err != nil {
		return fmt.Errorf("%s: %w", s.FileName(SuffixTxnIndex), err)
	}
	if r.aborted == nil {
		r.aborted = map[int64][]AbortedTxn{}
	}
	for _, e := range entries {
		list := r.aborted[e.ProducerID]
		i := sort.Search(len(list), func(i int) bool { return list[i].LastOffset >= e.LastOffset })
		if i < len(list) && list[i] == e {
			continue
		}
		r.aborted[e.ProducerID] = slices.Insert(list, i, e)
	}
	return nil
}

func (r *committedReader) isAborted(pid, offset int64) bool {
	list := r.aborted[pid]
	i := sort.Search(len(list), func(i int) bool { return list[i].LastOffset >= offset })
	return i < len(list) && list[i].Covers(pid, offset)
}

func (r *committedReader) run(ctx context.Context) (int64, error) {
	r.next = r.from
	r.open = map[int64]bool{}
	r.verdict = map[*Batch]bool{}
	seg, ok := r.man.Find(r.from)
	for ok {
		if err := ctx.Err(); err != nil {
			return r.resume(), err
		}
		if err := r.loadTxnIndex(seg); err != nil {
			return r.resume(), err
		}
		done, err := r.segment(seg)
		if err != nil || done {
			return r.resume(), err
		}
		seg, ok = r.man.Find(seg.EndOffset + 1)
	}
	// The remote end: a transaction still undecided is read from the
	// broker, from its first offset.
	return r.resume(), nil
}

// resume is where the broker takes over: the first held offset, or the
// first offset not read.
func (r *committedReader) resume() int64 {
	if len(r.held) > 0 {
		return min(r.heldAt, r.to)
	}
	return min(r.next, r.to)
}

// segment reads one remote segment; done when the range is read and
// nothing is held, or the held bytes grew past maxHeld.
//
// A segment must hold what the manifest says: its bytes up to Size and
// its offsets up to EndOffset. A .log cut short (a read racing a rename,
// a zombie's overwrite, tampering) is ErrCorrupt, never the end of the
// segment, or the offsets missing from it would be silently skipped
// while the unit reports them read (review 5). An offset index entry
// past the size, or leading past the offset sought, is not trusted: the
// segment is read from its start instead.
func (r *committedReader) segment(s SegmentMetadata) (done bool, err error) {
	name := path.Join(r.p.Dir, s.FileName(SuffixLog))
	pos := int64(0)
	if r.next > s.BaseOffset {
		if idx, err := r.p.FS.ReadFile(path.Join(r.p.Dir, s.FileName(SuffixIndex))); err == nil {
			if p := IndexLookup(idx, s.BaseOffset, r.next); p >= 0 && p < s.Size {
				pos = p
			}
		}
	}
	done, err = r.segmentFrom(s, name, pos)
	if errors.Is(err, errMisindexed) {
		done, err = r.segmentFrom(s, name, 0)
	}
	if errors.Is(err, errMisindexed) {
		err = fmt.Errorf("%w: %s: offset %d is missing", ErrCorrupt, name, r.next)
	}
	return done, err
}

// errMisindexed is a read from an index position whose first batch lies
// past the offset sought.
var errMisindexed = errors.New("remotelog: misindexed")

func (r *committedReader) segmentFrom(s SegmentMetadata, name string, pos int64) (done bool, err error) {
	f, err := r.p.FS.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var src io.Reader = f
	if pos > 0 {
		ra, ok := f.(io.ReaderAt)
		if !ok {
			pos = 0
		} else {
			src = io.NewSectionReader(ra, pos, s.Size-pos)
		}
	}
	br := NewBatchReader(io.LimitReader(src, s.Size-pos))
	br.MaxMessageBytes = s.MaxMessageBytes
	first := true
	for {
		b, err := br.Next()
		if err == io.EOF {
			if pos+br.pos != s.Size || r.next <= s.EndOffset {
				return false, fmt.Errorf("%w: %s ends at byte %d and offset %d; the manifest says %d bytes, offsets to %d",
					ErrCorrupt, name, pos+br.pos, r.next-1, s.Size, s.EndOffset)
			}
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		if first {
			first = false
			if b.BaseOffset > r.next {
				return false, errMisindexed
			}
		}
		if b.LastOffset < r.next {
			continue
		}
		if b.BaseOffset >= r.to && len(r.held) == 0 {
			return true, nil
		}
		if err := r.batch(b); err != nil {
			return false, err
		}
		if r.heldLen > maxHeld {
			return true, nil
		}
	}
}

func (r *committedReader) batch(b *Batch) error {
	r.next = b.LastOffset + 1
	switch {
	case b.Control:
		if !b.Transactional || !r.open[b.ProducerID] {
			return nil
		}
		delete(r.open, b.ProducerID)
		for _, h := range r.held {
			if h.Transactional && h.ProducerID == b.ProducerID {
				if _, ok := r.verdict[h]; !ok {
					r.verdict[h] = b.Commit
				}
			}
		}
		return r.flush()
	case b.Transactional && r.isAborted(b.ProducerID, b.BaseOffset):
		return nil
	case b.Transactional:
		r.open[b.ProducerID] = true
	}
	if len(r.held) == 0 && !b.Transactional {
		return r.emit(b)
	}
	if len(r.held) == 0 {
		r.heldAt = b.BaseOffset
	}
	r.held = append(r.held, b)
	r.heldLen += b.Size()
	return nil
}

// flush hands over the held batches up to the first still undecided.
func (r *committedReader) flush() error {
	for len(r.held) > 0 {
		h := r.held[0]
		if h.Transactional {
			commit, ok := r.verdict[h]
			if !ok {
				r.heldAt = h.BaseOffset
				return nil
			}
			delete(r.verdict, h)
			r.held, r.heldLen = r.held[1:], r.heldLen-h.Size()
			if !commit {
				continue
			}
		} else {
			r.held, r.heldLen = r.held[1:], r.heldLen-h.Size()
		}
		if err := r.emit(h); err != nil {
			return err
		}
	}
	r.held = nil
	return nil
}

// emit hands over the batch's records within [from, to).
func (r *committedReader) emit(b *Batch) error {
	recs := b.Records
	for len(recs) > 0 && recs[0].Offset < r.from {
		recs = recs[1:]
	}
	n := 0
	for n < len(recs) && recs[n].Offset < r.to {
		n++
	}
	if n == 0 {
		return nil
	}
	return r.fn(recs[:n])
}
