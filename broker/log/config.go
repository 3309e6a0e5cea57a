package log

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tributary-io/tributary/broker/record"
)

// Config is a partition log's topic-level configuration. Field names follow
// Kafka's topic config names, which are what operators set; DefaultConfig
// holds Kafka's defaults.
type Config struct {
	SegmentBytes           int64         // segment.bytes
	SegmentMs              time.Duration // segment.ms
	SegmentIndexBytes      int           // segment.index.bytes: the largest .index before a roll
	IndexIntervalBytes     int           // index.interval.bytes
	MaxMessageBytes        int           // max.message.bytes
	RetentionMs            time.Duration // retention.ms; negative keeps data forever
	RetentionBytes         int64         // retention.bytes; negative means no size limit
	Compact                bool          // cleanup.policy contains compact
	Delete                 bool          // cleanup.policy contains delete
	DeleteRetentionMs      time.Duration // delete.retention.ms: how long tombstones outlive cleaning
	MinCleanableDirtyRatio float64       // min.cleanable.dirty.ratio
	MinCompactionLagMs     time.Duration // min.compaction.lag.ms
	FlushMessages          int64         // flush.messages: fsync after this many messages
	FlushMs                time.Duration // flush.ms: fsync when the oldest unflushed data is this old
	LogAppendTime          bool          // message.timestamp.type=LogAppendTime
	// Compression is compression.type: the codec batches are stored with,
	// or CompressionProducer to store them as the producer sent them.
	Compression record.Codec
	// message.timestamp.before.max.ms and .after.max.ms: how far behind and
	// ahead of the broker's clock a CreateTime record's timestamp may be.
	TimestampBeforeMaxMs, TimestampAfterMaxMs int64
	FileDeleteDelayMs                         time.Duration // file.delete.delay.ms: grace for readers of deleted segments
	// Tiered storage (KIP-405, tier.go): remote.storage.enable, and
	// local.retention.ms / local.retention.bytes, the retention of this
	// disk when the log is tiered; -2 means retention.ms / retention.bytes.
	RemoteStorage       bool
	LocalRetentionMs    time.Duration
	LocalRetentionBytes int64
}

// CompressionProducer is compression.type=producer.
const CompressionProducer record.Codec = -1

// DefaultConfig is Apache Kafka's topic defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:           1 << 30,
		SegmentMs:              7 * 24 * time.Hour,
		SegmentIndexBytes:      10 << 20,
		IndexIntervalBytes:     4096,
		MaxMessageBytes:        1048588,
		RetentionMs:            7 * 24 * time.Hour,
		RetentionBytes:         -1,
		Delete:                 true,
		DeleteRetentionMs:      24 * time.Hour,
		MinCleanableDirtyRatio: 0.5,
		FlushMessages:          math.MaxInt64,
		FlushMs:                time.Duration(math.MaxInt64),
		FileDeleteDelayMs:      time.Minute,
		Compression:            CompressionProducer,
		// Kafka's are unbounded and one hour: the broker sets them from
		// its config; a log a tool writes directly bounds nothing.
		TimestampBeforeMaxMs: math.MaxInt64,
		TimestampAfterMaxMs:  math.MaxInt64,
		LocalRetentionMs:     -2,
		LocalRetentionBytes:  -2,
	}
}

// CleanupPolicy renders the policy as Kafka's cleanup.policy value.
func (c Config) CleanupPolicy() string {
	var p []string
	if c.Delete {
		p = append(p, "delete")
	}
	if c.Compact {
		p = append(p, "compact")
	}
	return strings.Join(p, ",")
}

// SetCleanupPolicy parses Kafka's cleanup.policy ("delete", "compact",
// "compact,delete").
func (c *Config) SetCleanupPolicy(v string) error {
	c.Compact, c.Delete = false, false
	for _, p := range strings.Split(v, ",") {
		switch strings.TrimSpace(p) {
		case "delete":
			c.Delete = true
		case "compact":
			c.Compact = true
		default:
			return fmt.Errorf("broker/log: cleanup.policy %q: want delete, compact or compact,delete", v)
		}
	}
	return nil
}

// Validate names the first setting that is out of range.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, name string, v any, want string) {
		if !ok {
			errs = append(errs, fmt.Errorf("%s=%v: %s", name, v, want))
		}
	}
	check(c.SegmentBytes >= 14, "segment.bytes", c.SegmentBytes, "must be at least 14")
	check(c.SegmentMs >= time.Millisecond, "segment.ms", c.SegmentMs.Milliseconds(), "must be at least 1")
	check(c.SegmentIndexBytes >= 4*entrySize, "segment.index.bytes", c.SegmentIndexBytes, fmt.Sprintf("must be at least %d", 4*entrySize))
	check(c.IndexIntervalBytes >= 0, "index.interval.bytes", c.IndexIntervalBytes, "must not be negative")
	check(c.MaxMessageBytes >= 0, "max.message.bytes", c.MaxMessageBytes, "must not be negative")
	check(c.FlushMessages >= 1, "flush.messages", c.FlushMessages, "must be at least 1")
	check(c.FlushMs >= 0, "flush.ms", c.FlushMs.Milliseconds(), "must not be negative")
	check(c.MinCleanableDirtyRatio >= 0 && c.MinCleanableDirtyRatio <= 1, "min.cleanable.dirty.ratio", c.MinCleanableDirtyRatio, "must be between 0 and 1")
	check(c.Compact || c.Delete, "cleanup.policy", c.CleanupPolicy(), "must name delete, compact or both")
	check(c.Compression >= CompressionProducer && c.Compression <= record.CodecZstd, "compression.type", c.Compression, "must be producer or a codec")
	check(c.TimestampBeforeMaxMs >= 0, "message.timestamp.before.max.ms", c.TimestampBeforeMaxMs, "must not be negative")
	check(c.TimestampAfterMaxMs >= 0, "message.timestamp.after.max.ms", c.TimestampAfterMaxMs, "must not be negative")
	check(c.DeleteRetentionMs >= 0, "delete.retention.ms", c.DeleteRetentionMs.Milliseconds(), "must not be negative")
	check(c.LocalRetentionMs >= -2, "local.retention.ms", c.LocalRetentionMs, "must be at least -2")
	check(c.LocalRetentionBytes >= -2, "local.retention.bytes", c.LocalRetentionBytes, "must be at least -2")
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("broker/log: invalid config: %w", err)
	}
	return nil
}
