package log

import (
	"io"
	"os"
	"time"
)

// What the log offers tiered storage (broker/tier, KIP-405): its closed
// segments to upload, and a view of what is uploaded, which decides what
// local retention may delete.
//
// With a TierView set and remote.storage.enable on, the log keeps two
// retentions, as Kafka's UnifiedLog does: local.retention.ms/bytes bound the
// segments kept on this disk (-2: retention.ms/bytes), and a segment leaves
// the disk only once its upload is durable (it ends below UploadedEnd),
// whatever retention says. Total retention (retention.ms/bytes) is then the
// tier's to enforce, on the remote copies. LogStartOffset stays the local
// log start: the first offset this disk holds.

// TierView is what the log knows of its remote copy.
type TierView struct {
	// UploadedEnd is one past the last offset whose segment is durably
	// in remote storage (registered in the remote metadata); -1 for none.
	UploadedEnd func() int64
}

// SetTierView turns on tiered retention for this log; nil turns it off.
func (l *Log) SetTierView(v *TierView) { l.tier.Store(v) }

// tiered is the tier view when remote storage governs this log's local
// retention, else nil. A compacted log is never tiered (CreateTopics and
// AlterConfigs refuse the combination, as Kafka does; a broker-wide
// log.cleanup.policy=compact can still reach here).
func (l *Log) tiered(cfg *Config) *TierView {
	if v := l.tier.Load(); v != nil && cfg.RemoteStorage && !cfg.Compact && v.UploadedEnd != nil {
		return v
	}
	return nil
}

// localRetention is the retention that applies to this disk: the local
// one for a tiered log (bounded by the total, as Kafka requires), else the
// total.
func localRetention(cfg *Config, tiered bool) (ms time.Duration, bytes int64) {
	ms, bytes = cfg.RetentionMs, cfg.RetentionBytes
	if !tiered {
		return ms, bytes
	}
	if cfg.LocalRetentionMs != -2 && (ms < 0 || (cfg.LocalRetentionMs >= 0 && cfg.LocalRetentionMs < ms)) {
		ms = cfg.LocalRetentionMs
	}
	if cfg.LocalRetentionBytes != -2 && (bytes < 0 || (cfg.LocalRetentionBytes >= 0 && cfg.LocalRetentionBytes < bytes)) {
		bytes = cfg.LocalRetentionBytes
	}
	return ms, bytes
}

// ClosedSegment is a segment that is no longer active, held open for an
// upload: its files stay readable, whatever retention does, until Release.
type ClosedSegment struct {
	Base int64 // base offset
	// Next is the next segment's base offset: the segment's offsets are
	// [Base, Next), Kafka's end offset being Next-1.
	Next         int64
	Size         int64 // bytes of the .log
	MaxTimestamp int64 // largest batch max timestamp, -1 for none
	// Index and TimeIndex are the .index and .timeindex entries, in
	// Kafka's format (the files' bytes without preallocation).
	Index, TimeIndex []byte
	seg              *segment
}

// Reader reads the segment's .log bytes.
func (c *ClosedSegment) Reader() io.Reader { return io.NewSectionReader(c.seg.log, 0, c.Size) }

// File is the segment's open .log file (for ReadAt).
func (c *ClosedSegment) File() *os.File { return c.seg.log }

// Release lets the segment close; the ClosedSegment must not be used after.
func (c *ClosedSegment) Release() {
	if c.seg != nil {
		c.seg.release()
		c.seg = nil
	}
}

// ClosedSegments holds and returns the closed segments (every one but the
// active) whose base offset is at least from and whose offsets all lie
// below upTo, oldest first. The caller releases each.
func (l *Log) ClosedSegments(from, upTo int64) ([]ClosedSegment, error) {
	segs, err := l.acquireSegments()
	if err != nil {
		return nil, err
	}
	var out []ClosedSegment
	for i, s := range segs {
		if i == len(segs)-1 || s.base < from || segs[i+1].base > upTo || s.size.Load() == 0 {
			s.release()
			continue
		}
		ix, err1 := s.offsets.entries()
		tx, err2 := s.times.entries()
		if err1 != nil || err2 != nil {
			s.release()
			for j := range out {
				out[j].Release()
			}
			for _, r := range segs[i+1:] {
				r.release()
			}
			if err1 != nil {
				return nil, err1
			}
			return nil, err2
		}
		out = append(out, ClosedSegment{Base: s.base, Next: segs[i+1].base, Size: s.size.Load(),
			MaxTimestamp: s.largestTimestamp(), Index: append([]byte(nil), ix...), TimeIndex: append([]byte(nil), tx...), seg: s})
	}
	return out, nil
}

// SizeFrom is the bytes of the segments whose base offset is at least from:
// for tiered retention, the part of the log not yet in remote storage.
func (l *Log) SizeFrom(from int64) int64 {
	var n int64
	for _, s := range l.segments() {
		if s.base >= from {
			n += s.size.Load()
		}
	}
	return n
}
