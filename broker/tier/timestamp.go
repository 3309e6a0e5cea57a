package tier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"sort"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/fsys"
)

// ListOffsets by timestamp in the remote range.

// timeIndexEntry is an entry of Kafka's time index: timestamp int64,
// relative offset int32. An entry (T, O) says the largest timestamp of
// the segment became T at the batch holding offset O: every record before
// it is older than T.
const timeIndexEntry = 12

// OffsetForTimestamp is ListOffsets by timestamp for the offsets remote
// storage holds below below (the local log start, from which the local
// log answers): the first record at or after the remote log start whose
// timestamp is at least ts, with that timestamp. ok is false when no
// remote segment below below has one, or the manager has never seen the
// partition (the caller decides whether that is a tiered partition not
// passed yet). It waits for HDFS, up to Config.ListOffsetsTimeout, through the
// chunk cache (a ListOffsets is answered on its connection's goroutine).
//
// With the manifest not loaded (a restart while HDFS is down, a leader
// just elected or fenced) but a cached one holding segments below below,
// it returns ErrUnavailable as Read does: the local log would answer a
// later offset and the caller would skip the remote records silently
// (review 3).
func (m *Manager) OffsetForTimestamp(tp log.TopicPartition, ts, below int64) (offset, timestamp int64, ok bool, err error) {
	return m.OffsetForTimestampWithin(tp, ts, below, m.cfg.ListOffsetsTimeout)
}

// OffsetForTimestampWithin is OffsetForTimestamp waiting at most timeout
// (capped at Config.ListOffsetsTimeout) for remote storage: ListOffsets v10's
// TimeoutMs (KIP-1075).
func (m *Manager) OffsetForTimestampWithin(tp log.TopicPartition, ts, below int64, timeout time.Duration) (offset, timestamp int64, ok bool, err error) {
	if timeout <= 0 || timeout > m.cfg.ListOffsetsTimeout {
		timeout = m.cfg.ListOffsetsTimeout
	}
	p := m.lookup(tp)
	if p == nil {
		return 0, 0, false, nil
	}
	man := p.manifest.Load()
	if man == nil {
		if c := p.cached.Load(); c != nil && len(c.Segments) > 0 && c.Segments[0].BaseOffset < below {
			return 0, 0, false, fmt.Errorf("%w: the remote metadata of %s is not loaded yet", ErrUnavailable, tp)
		}
		return 0, 0, false, nil
	}
	fs, err := m.store()
	if err != nil {
		return 0, 0, false, err
	}
	deadline := time.Now().Add(timeout)
	i := sort.Search(len(man.Segments), func(i int) bool { return man.Segments[i].EndOffset >= man.LogStartOffset })
	// Timestamps need not grow with offsets (CreateTime from several
	// producers): a segment whose maximum reaches ts may hold no such
	// record at or after the log start (DeleteRecords inside it), and a
	// later one does; so go on to the next candidate rather than hand
	// the question to the local log.
	for ; i < len(man.Segments) && man.Segments[i].BaseOffset < below; i++ {
		if man.Segments[i].MaxTimestamp < ts {
			continue
		}
		offset, timestamp, ok, err = m.segmentOffsetForTimestamp(fs, p, man, man.Segments[i], ts, deadline)
		if err != nil || ok {
			return offset, timestamp, ok, err
		}
	}
	return 0, 0, false, nil
}

// segmentOffsetForTimestamp is OffsetForTimestamp within one remote
// segment.
func (m *Manager) segmentOffsetForTimestamp(fs fsys.FS, p *partition, man *Manifest, seg SegmentMetadata, ts int64, deadline time.Time) (offset, timestamp int64, ok bool, err error) {
	await := func(w <-chan struct{}) error {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case <-w:
			return nil
		case <-t.C:
			return fmt.Errorf("%w: remote storage did not answer in time", ErrUnavailable)
		}
	}
	from := max(seg.BaseOffset, man.LogStartOffset)
	if size, has := seg.Files[suffixTimeIndex]; has && size > 0 {
		name := path.Join(p.dir, seg.FileName(suffixTimeIndex))
		for {
			idx, w, err := m.cache.get(chunkKey{p.dir, seg.FileName(""), suffixTimeIndex, 0}, func() ([]byte, error) { return fs.ReadFile(name) }, size)
			if err != nil {
				return 0, 0, false, err
			}
			if w == nil {
				from = max(from, timeLookup(idx, seg.BaseOffset, ts))
				break
			}
			if err := await(w); err != nil {
				return 0, 0, false, err
			}
		}
	}
	// Read on from there, batch by batch, within the segment.
	for from <= seg.EndOffset {
		if time.Now().After(deadline) {
			return 0, 0, false, fmt.Errorf("%w: remote storage did not answer within %v", ErrUnavailable, m.cfg.ListOffsetsTimeout)
		}
		data, w, err := m.Read(p.tp, from, m.maxRead(), true)
		if errors.Is(err, ErrNotRemote) {
			return 0, 0, false, nil // deleted meanwhile
		}
		if err != nil {
			return 0, 0, false, err
		}
		if w != nil {
			if err := await(w); err != nil {
				return 0, 0, false, err
			}
			continue
		}
		if len(data) == 0 {
			break
		}
		for rest := data; len(rest) > 0; {
			size := 0
			if len(rest) >= record.LogOverhead {
				size = record.LogOverhead + int(int32(binary.BigEndian.Uint32(rest[8:12])))
			}
			if size > len(rest) || size < record.HeaderSize {
				// Read returns whole batches only: anything else is a
				// malformed segment, and reading it again would spin
				// (review 8).
				return 0, 0, false, fmt.Errorf("%w: a malformed batch in the remote segment %d of %s at offset %d", ErrUnavailable, seg.BaseOffset, p.tp, from)
			}
			b := record.Batch(rest[:size])
			rest = rest[size:]
			from = b.LastOffset() + 1
			if b.LastOffset() < man.LogStartOffset || b.MaxTimestamp() < ts {
				continue
			}
			if b.LogAppendTime() {
				return max(b.BaseOffset(), man.LogStartOffset), b.MaxTimestamp(), true, nil
			}
			// Bounded as a producer's batch is (remote bytes are
			// only as trusted as HDFS's writers), not by the 256 MiB
			// that DecodeRecords allows: refused past the bound,
			// never held.
			maxBytes := 0
			if l := p.log.Load(); l != nil {
				maxBytes = l.Config().MaxMessageBytes
			}
			recs, err := b.DecodeRecordsWithin(record.DecompressLimit(len(b), maxBytes))
			if err != nil {
				return 0, 0, false, fmt.Errorf("the remote segment %d of %s, batch at offset %d: %w", seg.BaseOffset, p.tp, b.BaseOffset(), err)
			}
			for i := range recs {
				if o, t := b.RecordOffset(&recs[i]), b.RecordTimestamp(&recs[i]); t >= ts && o >= man.LogStartOffset {
					return o, t, true, nil
				}
			}
		}
	}
	return 0, 0, false, nil
}

// timeLookup is the offset to scan from for ts in a Kafka time index:
// that of the last entry whose timestamp is at most ts, or base.
func timeLookup(idx []byte, base, ts int64) int64 {
	n := len(idx) / timeIndexEntry
	i := sort.Search(n, func(i int) bool { return int64(binary.BigEndian.Uint64(idx[i*timeIndexEntry:])) > ts })
	if i == 0 {
		return base
	}
	return base + int64(int32(binary.BigEndian.Uint32(idx[(i-1)*timeIndexEntry+8:])))
}
