package tier

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// producerSnapshot names the partition directory's producer snapshots,
// <offset>.snapshot.
const producerSnapshot = ".snapshot"

// uploadGroup is how many segments are uploaded at once, and registered
// by one manifest write: on HDFS each file costs a few NameNode round
// trips, which parallel streams overlap.
const uploadGroup = 4

// upload copies every closed segment not yet remote and below the bound,
// oldest first, a group at a time, registering each group as soon as its
// segments are whole. It returns how many it uploaded.
func (m *Manager) upload(fs fsys.FS, p *partition, t Target) (int, error) {
	man := p.manifest.Load()
	from := man.UploadedEnd()
	// From the segment holding the uploaded end: after a leader change
	// this broker's segment boundaries are not the old leader's, and the
	// segment spanning the end must go up whole (overlapping the remote
	// one before it), or its offsets past the end would be in no remote
	// segment once local retention deletes it.
	segs, err := t.Log.ClosedSegments(0, t.Bound)
	if err != nil {
		return 0, err
	}
	defer func() {
		for i := range segs {
			segs[i].Release()
		}
	}()
	todo := segs[:0:0]
	for _, s := range segs {
		if from < 0 || s.Next > from {
			todo = append(todo, s)
		}
	}
	n := 0
	for len(todo) > 0 {
		if m.stopped() {
			return n, errStopped
		}
		group := todo[:min(uploadGroup, len(todo))]
		todo = todo[len(group):]
		metas := make([]SegmentMetadata, len(group))
		errs := make([]error, len(group))
		var wg sync.WaitGroup
		for i := range group {
			wg.Add(1)
			go func() {
				defer wg.Done()
				metas[i], errs[i] = m.uploadSegment(fs, p, t, &group[i])
			}()
		}
		if err := m.bounded(0, func() error { wg.Wait(); return nil }); err != nil {
			return n, err
		}
		// Only an unbroken run from the uploaded end is registered.
		ok := 0
		for ok < len(group) && errs[ok] == nil {
			ok++
		}
		if ok > 0 {
			before := p.manifest.Load()
			add := metas[:ok]
			logStart := t.Log.LogStartOffset()
			err := m.commit(fs, p, t.Log, before, func(next *Manifest) (*Manifest, error) {
				return register(next, add, logStart)
			})
			if errors.Is(err, errHole) {
				m.logger.Error("tiered storage: the local log starts past the uploaded end; not registering a segment that would leave a hole",
					"partition", t.TP.String(), "err", err)
			}
			if err != nil {
				return n, err
			}
			if gone := replaced(before, p.manifest.Load()); len(gone) > 0 {
				// Their files go with gc, once no manifest version
				// kept for readers names them.
				m.cache.dropSegments(p.dir, gone)
			}
			for _, s := range group[:ok] {
				m.uploadedSegments.Add(1)
				m.uploadedBytes.Add(s.Size)
			}
			n += ok
			m.logger.Debug("tiered storage: uploaded segments", "partition", t.TP.String(), "from", group[0].Base, "to", group[ok-1].Next-1)
		}
		if ok < len(group) {
			return n, errs[ok]
		}
	}
	return n, nil
}

// register adds the uploaded segments add (an unbroken run, oldest
// first) to next. A segment starting at or below a remote one's base
// covers it (its end is past theirs): it replaces them. When next
// already reaches past them (another writer of this epoch registered
// more meanwhile), nothing changes.
func register(next *Manifest, add []SegmentMetadata, logStart int64) (*Manifest, error) {
	last := add[len(add)-1]
	if next.UploadedEnd() > last.EndOffset {
		return next, nil
	}
	if len(next.Segments) == 0 && (next.LogStartOffset < 0 || next.LogStartOffset > add[0].BaseOffset) {
		// Not below the local log start: DeleteRecords or retention
		// may have moved it inside the segment.
		next.LogStartOffset = max(add[0].BaseOffset, logStart)
	}
	keep := next.Segments[:0:0]
	for _, s := range next.Segments {
		if s.BaseOffset < add[0].BaseOffset {
			keep = append(keep, s)
		}
	}
	if len(keep) > 0 && add[0].BaseOffset > keep[len(keep)-1].EndOffset+1 {
		// The local log starts past the uploaded end (it was trimmed by
		// a manifest since lost, review 4): registering would leave
		// offsets in no segment, which readers would skip. Nothing here
		// can fill the hole.
		return nil, fmt.Errorf("%w: a segment at %d would leave a hole after the uploaded end %d", errHole, add[0].BaseOffset, keep[len(keep)-1].EndOffset+1)
	}
	next.Segments = append(keep, add...)
	return next, nil
}

// errHole is an upload that would leave offsets in no remote segment.
var errHole = errors.New("broker/tier: the segment would leave a hole in the remote log")

// replaced are the segments of before that after no longer names.
func replaced(before, after *Manifest) []SegmentMetadata {
	if before == nil || after == nil {
		return nil
	}
	still := map[string]bool{}
	for _, s := range after.Segments {
		still[s.FileName("")] = true
	}
	var out []SegmentMetadata
	for _, s := range before.Segments {
		if !still[s.FileName("")] {
			out = append(out, s)
		}
	}
	return out
}

// uploadSegment writes the segment's files under names of their own
// (SegmentMetadata.FileName: base offset and upload id); the segment is
// not registered yet. A name is never reused, so no upload, retried,
// concurrent or a deposed leader's, writes over a file a manifest names;
// what is never registered is removed by gc.
func (m *Manager) uploadSegment(fs fsys.FS, p *partition, t Target, seg *log.ClosedSegment) (SegmentMetadata, error) {
	meta := SegmentMetadata{ID: remotelog.NewSegmentID(), BaseOffset: seg.Base, EndOffset: seg.Next - 1, MaxTimestamp: seg.MaxTimestamp,
		Size: seg.Size, BrokerID: m.cfg.NodeID, LeaderEpoch: t.LeaderEpoch, State: CopySegmentFinished, Files: map[string]int64{},
		MaxMessageBytes: t.Log.Config().MaxMessageBytes}
	epochs := epochsUpTo(t.Log.LeaderEpochs(), seg.Next)
	for _, e := range epochs {
		if e.StartOffset >= seg.Base {
			meta.LeaderEpochs = append(meta.LeaderEpochs, EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset})
		} else {
			// The epoch the segment starts in.
			meta.LeaderEpochs = []EpochEntry{{Epoch: e.Epoch, StartOffset: seg.Base}}
		}
	}
	files := []upFile{
		{suffixLog, seg.Reader(), seg.Size},
		{suffixIndex, bytes.NewReader(seg.Index), int64(len(seg.Index))},
		{suffixTimeIndex, bytes.NewReader(seg.TimeIndex), int64(len(seg.TimeIndex))},
	}
	ck := epochCheckpoint(epochs)
	files = append(files, upFile{suffixEpochs, bytes.NewReader(ck), int64(len(ck))})
	dir := t.Log.Dir()
	if t.ProducerSnapshot != nil {
		data, ok, err := t.ProducerSnapshot(seg.Next)
		if err != nil {
			return meta, fmt.Errorf("producer state of %s at %d: %w", t.TP, seg.Next, err)
		}
		if ok {
			files = append(files, upFile{suffixSnapshot, bytes.NewReader(data), int64(len(data))})
			meta.ProducerState = remotelog.ProducerStateExact
		}
	} else if snap, ok := snapshotFor(dir, seg.Next); ok {
		// Read whole now: the partition may replace its snapshots.
		if data, err := os.ReadFile(snap); err == nil {
			files = append(files, upFile{suffixSnapshot, bytes.NewReader(data), int64(len(data))})
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, SegmentFileName(seg.Base, suffixTxnIndex))); err == nil && len(data) > 0 {
		files = append(files, upFile{suffixTxnIndex, bytes.NewReader(data), int64(len(data))})
	}
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		meta.Files[f.suffix] = f.size
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := writeRemote(fs, path.Join(p.dir, meta.FileName(f.suffix)), f.r, f.size); err != nil {
				errs[i] = fmt.Errorf("%w: upload %s of %s: %v", ErrUnavailable, meta.FileName(f.suffix), t.TP, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return meta, err
	}
	meta.EventTimeMs = m.cfg.Now().UnixMilli()
	return meta, nil
}

type upFile struct {
	suffix string
	r      io.Reader
	size   int64
}

// writeRemote writes a file under its final name: it is read only once
// a manifest names it, which happens after every file of the segment is
// closed (HDFS makes a file whole and visible at close), and the name is
// the upload's own, so there is nothing to replace (Create refuses an
// existing name).
func writeRemote(fs fsys.FS, name string, r io.Reader, size int64) error {
	w, err := fs.Create(name)
	if err != nil {
		return err
	}
	n, err := io.Copy(w, r)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("wrote %d bytes of %d", n, size)
	}
	if err != nil {
		fs.RemoveAll(name)
	}
	return err
}

// epochsUpTo are the leader-epoch entries that start below next: the
// leader-epoch cache as it stood at the segment's end.
func epochsUpTo(all []log.EpochEntry, next int64) []log.EpochEntry {
	var out []log.EpochEntry
	for _, e := range all {
		if e.StartOffset < next {
			out = append(out, e)
		}
	}
	return out
}

// epochCheckpoint is Kafka's leader-epoch-checkpoint format: version 0,
// the entry count, then "epoch startOffset" lines.
func epochCheckpoint(entries []log.EpochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

// snapshotFor is the newest producer snapshot at or below next in the
// partition directory: the producer state as of the segment's end, or
// older (the state is then rebuilt from the segments after it).
func snapshotFor(dir string, next int64) (string, bool) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", false
	}
	best := int64(-1)
	for _, e := range ents {
		digits, ok := strings.CutSuffix(e.Name(), producerSnapshot)
		if !ok || len(digits) != 20 {
			continue
		}
		if off, err := strconv.ParseInt(digits, 10, 64); err == nil && off <= next && off > best {
			best = off
		}
	}
	if best < 0 {
		return "", false
	}
	return filepath.Join(dir, SegmentFileName(best, producerSnapshot)), true
}

// expire applies the topic's total retention (retention.ms,
// retention.bytes) to the remote segments, oldest first: the manifest
// without them is written, and gc removes their files after the grace
// period.
func (m *Manager) expire(fs fsys.FS, p *partition, t Target) error {
	cfg := t.Log.Config()
	man := p.manifest.Load()
	if !cfg.Delete || len(man.Segments) == 0 {
		return nil
	}
	now := m.cfg.Now().UnixMilli()
	total := man.Size() + t.Log.SizeFrom(man.UploadedEnd())
	n := 0
	for ; n < len(man.Segments); n++ {
		s := man.Segments[n]
		byTime := cfg.RetentionMs >= 0 && s.MaxTimestamp >= 0 && now-s.MaxTimestamp > cfg.RetentionMs.Milliseconds()
		bySize := cfg.RetentionBytes >= 0 && total-s.Size >= cfg.RetentionBytes
		byStart := s.EndOffset < man.LogStartOffset
		if !byTime && !bySize && !byStart {
			break
		}
		total -= s.Size
	}
	if n == 0 {
		return nil
	}
	err := m.commit(fs, p, t.Log, man, func(next *Manifest) (*Manifest, error) {
		// Applied to another writer's version, the same segments go
		// (those it still has).
		cut := 0
		for cut < len(next.Segments) && next.Segments[cut].EndOffset <= man.Segments[n-1].EndOffset {
			cut++
		}
		if cut > 0 {
			next.LogStartOffset = max(next.LogStartOffset, next.Segments[cut-1].EndOffset+1)
		}
		next.Segments = next.Segments[cut:]
		return next, nil
	})
	if err != nil {
		return err
	}
	next := p.manifest.Load()
	// Their files go with gc, once no manifest version kept for readers
	// names them (a loader may be reading them).
	m.cache.dropSegments(p.dir, replaced(man, next))
	var errs []error
	m.logger.Info("tiered storage: retention deleted remote segments", "partition", t.TP.String(), "segments", n, "remote_log_start_offset", next.LogStartOffset, "version", next.Sequence)
	// The total retention also bounds the disk: what it removed remotely
	// is gone locally too.
	if next.LogStartOffset > t.Log.LogStartOffset() {
		if err := t.Log.DeleteRecordsBefore(min(next.LogStartOffset, t.Log.LogEndOffset())); err != nil && !errors.Is(err, log.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
