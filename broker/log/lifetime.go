package log

import "math"

// Segment lifetime: when a segment's files may be closed and its indexes
// unmapped.
//
// Readers take no lock (see Log), so the appender cannot know who is inside
// a segment it replaces. A timer (file.delete.delay.ms) is not an answer: a
// topic may set it to 0, and a fetch to a slow consumer can hold a file
// range for as long as its socket takes. So every segment carries a count
// of its holders, refs:
//
//	              openSegment: refs = 1 (the Log's reference)
//	                       │
//	reader ── acquire ──►  refs += 1 ──► reads file / index ──► release: refs -= 1
//	                       │
//	Log removes it from its list (retention, DeleteRecords, TruncateTo,
//	ResetTo, the cleaner's swap): files renamed .deleted, and after
//	file.delete.delay.ms (or at Close/Delete) unlinked, then
//	dropOwner: refs -= 1
//	                       │
//	whoever brings refs to 0 ── CAS 0 → dead ──► close: munmap the
//	indexes, close the .log (exactly once)
//
// A reader finds a segment in the published list and then acquires it, and
// between the two the Log may have dropped its reference and the last reader
// may have closed it. acquire is therefore one atomic add that fails when
// the count is dead (hugely negative): the reader then loads the list again,
// where the segment no longer is. A count that reached zero and has not yet
// been marked dead may still be acquired: its files are open, and the
// reader's release is then the one that closes them. That keeps the read
// path at one atomic add to acquire and one to release, never a lock.
//
// An unlinked file stays readable through its open descriptor, so the
// unlink need not wait for readers; only close and munmap must.
const segDead = math.MinInt64 / 2

// acquire takes a reader's reference; false means the segment is closed
// (or closing) and the caller must look it up again.
func (s *segment) acquire() bool {
	if s.refs.Add(1) > 0 {
		return true
	}
	s.refs.Add(-1) // stays far below zero: a dead count never comes back
	return false
}

// release drops a reference taken by acquire (or the Log's, through
// dropOwner), closing the files when it was the last.
func (s *segment) release() {
	if s.refs.Add(-1) == 0 && s.refs.CompareAndSwap(0, segDead) {
		err := s.close()
		if o := s.owner; o != nil {
			if err != nil {
				o.logger.Warn("closing a removed segment", "base_offset", s.base, "err", err)
			}
			if h := o.testSegmentClosed; h != nil {
				h(s)
			}
		}
	}
}

// dropOwner drops the Log's reference, once; l is told of the close.
func (s *segment) dropOwner(l *Log) {
	if !s.ownerDropped.CompareAndSwap(false, true) {
		return
	}
	s.owner = l // published to the last releaser by the atomic add below
	s.release()
}

// acquireAll acquires every segment of segs, or none: false when one of
// them is closed.
func acquireAll(segs []*segment) bool {
	for i, s := range segs {
		if !s.acquire() {
			releaseAll(segs[:i])
			return false
		}
	}
	return true
}

func releaseAll(segs []*segment) {
	for _, s := range segs {
		s.release()
	}
}

// acquireSegments is a snapshot of the segment list with every segment
// acquired; the caller releases them with releaseAll. A closed log's list
// keeps its closed segments, so it is ErrClosed rather than a retry.
func (l *Log) acquireSegments() ([]*segment, error) {
	for {
		segs := l.segments()
		if acquireAll(segs) {
			return segs, nil
		}
		if l.shut.Load() {
			return nil, ErrClosed
		}
	}
}
