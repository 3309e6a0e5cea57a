package log

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/record"
)

// ErrOffsetOutOfRange is a read or truncation outside [LogStartOffset,
// LogEndOffset]; errors.Is(err, kerr.OffsetOutOfRange) holds too.
var ErrOffsetOutOfRange error = offsetOutOfRange{}

type offsetOutOfRange struct{}

func (offsetOutOfRange) Error() string { return "broker/log: offset out of range" }
func (offsetOutOfRange) Unwrap() error { return kerr.OffsetOutOfRange }

// ErrClosed is any call on a closed log.
var ErrClosed = errors.New("broker/log: log is closed")

// Log is one partition's commit log: a directory of segments.
//
// Concurrency: one appender at a time (Append*, TruncateTo, Roll,
// DeleteRecordsBefore, retention, the cleaner's swap, Flush, Close all take
// mu); any number of concurrent readers (Read, OffsetForTimestamp, the offset
// getters), which take no lock. Readers see a copy-on-write list of segments
// and the segments' published sizes, so they never see a partial batch. A
// segment removed while a reader holds it stays open until the reader
// releases it (lifetime.go); file.delete.delay.ms only delays the unlink.
type Log struct {
	dir    string
	tp     TopicPartition
	logger *slog.Logger
	now    func() time.Time

	cfg atomic.Pointer[Config]
	// txns is the partition's view of its transactions, for the cleaner
	// (SetTxnView); nil: no transactions.
	txns atomic.Pointer[TxnView]
	// tier is the log's remote copy (tier.go); nil: not tiered.
	tier atomic.Pointer[TierView]
	// tierWarned is one past the base offset of the segment local retention last
	// said it waits for: said once per segment.
	tierWarned atomic.Int64

	segs  atomic.Pointer[[]*segment] // by base offset; the last is active
	end   atomic.Int64               // log end offset: the next offset to assign
	start atomic.Int64               // log start offset
	// recoveryPoint: everything below it has been fsynced.
	recoveryPoint atomic.Int64

	epochs  *epochCache
	onFlush func(time.Duration) // may be nil
	health  *health             // the log dir's; may be nil

	// shut is closed, for readers, which take no lock: set before the
	// segments' references are dropped, it tells a reader that found a
	// segment closed not to look again.
	shut atomic.Bool

	mu            sync.Mutex
	closed        bool
	unflushedMsgs int64
	firstUnflush  time.Time // when the oldest unflushed append happened
	appended      chan struct{}
	appendedOut   bool // appended was handed to a reader
	// pendingDeletes are segments waiting out file.delete.delay.ms.
	pendingDeletes map[*segment]*time.Timer

	// testSegmentClosed, when set (by tests, right after Open), is called
	// with each segment whose files the last release closed.
	testSegmentClosed func(s *segment)
}

// Options are what a log dir knows about a partition before opening it.
type Options struct {
	// RecoveryPoint is the partition's entry in recovery-point-offset-checkpoint.
	RecoveryPoint int64
	// LogStartOffset is its entry in log-start-offset-checkpoint.
	LogStartOffset int64
	// CleanShutdown says the log dir was closed cleanly, so nothing is scanned.
	CleanShutdown bool
	Logger        *slog.Logger
	// Now is the clock (tests set it).
	Now func() time.Time
	// OnFlush is told how long each flush's fsyncs took; nil is fine.
	OnFlush func(time.Duration)
	// health is the log dir's (offline.go); nil outside a Dir.
	health *health
}

// ParseDirName splits a partition directory name, "topic-3", into its parts.
func ParseDirName(name string) (TopicPartition, error) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return TopicPartition{}, fmt.Errorf("broker/log: %q is not a partition directory (topic-partition)", name)
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return TopicPartition{}, fmt.Errorf("broker/log: %q is not a partition directory (topic-partition)", name)
	}
	return TopicPartition{name[:i], int32(p)}, nil
}

// Open opens or creates the partition log in dir, recovering it as opt says.
func Open(dir string, cfg Config, opt Options) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tp, err := ParseDirName(filepath.Base(dir))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l := &Log{dir: dir, tp: tp, logger: opt.Logger, now: opt.Now, onFlush: opt.OnFlush, health: opt.health, appended: make(chan struct{}), pendingDeletes: map[*segment]*time.Timer{}}
	if l.logger == nil {
		l.logger = slog.Default()
	}
	l.logger = l.logger.With("partition", tp.String())
	if l.now == nil {
		l.now = time.Now
	}
	l.cfg.Store(&cfg)
	if l.epochs, err = loadEpochCache(dir); err != nil {
		// The cache is derived data: rebuild it from the batches.
		l.logger.Warn("rebuilding unreadable leader-epoch-checkpoint", "err", err)
		l.epochs = &epochCache{path: filepath.Join(dir, LeaderEpochFile)}
	}
	if err := l.load(opt); err != nil {
		l.shut.Store(true)
		l.closeSegments()
		return nil, err
	}
	return l, nil
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// TopicPartition is the partition this log holds.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// Config is the log's current configuration.
func (l *Log) Config() Config { return *l.cfg.Load() }

// SetConfig changes the configuration of an open log (AlterConfigs).
func (l *Log) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.cfg.Store(&cfg)
	return nil
}

func (l *Log) segments() []*segment { return *l.segs.Load() }
func (l *Log) active() *segment {
	s := l.segments()
	return s[len(s)-1]
}

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.end.Load() }

// LogStartOffset is the first offset a reader may ask for.
func (l *Log) LogStartOffset() int64 { return l.start.Load() }

// RecoveryPoint is the offset below which everything is fsynced.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint.Load() }

// Size is the bytes of all segments.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segments() {
		n += s.size.Load()
	}
	return n
}

// SegmentCount is the number of segments, the active one included.
func (l *Log) SegmentCount() int { return len(l.segments()) }

// LeaderEpochs is the leader-epoch cache, oldest first.
func (l *Log) LeaderEpochs() []EpochEntry { return l.epochs.snapshot() }

// EndOffsetForEpoch answers OffsetForLeaderEpoch for this log.
func (l *Log) EndOffsetForEpoch(epoch int32) (EpochEntry, bool) {
	return l.epochs.endOffsetFor(epoch, l.LogEndOffset())
}

// Appended returns a channel that is closed at the next append, truncation or
// close. A long-polling fetch waits on it instead of polling on a timer.
func (l *Log) Appended() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.appendedOut = true
	return l.appended
}

// wakeLocked wakes the readers waiting in Appended; mu must be held. A
// channel nobody took needs no replacing, which keeps appends to a log
// without long-polling readers free of allocations here.
func (l *Log) wakeLocked() {
	if !l.appendedOut {
		return
	}
	close(l.appended)
	l.appended = make(chan struct{})
	l.appendedOut = false
}

// AppendInfo describes one successful append.
type AppendInfo struct {
	FirstOffset   int64
	LastOffset    int64
	LogAppendTime int64 // -1 unless the topic uses LogAppendTime
	Batches       int
	Records       int64
}

// AppendAsLeader validates a producer's batches (one or more, back to back),
// assigns them offsets from the log end, stamps them with leaderEpoch (and
// the log append time when the topic asks for it) in place, and appends them.
// Nothing is appended if any batch is invalid.
func (l *Log) AppendAsLeader(batches []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.AppendAsLeaderWithin(batches, leaderEpoch, nil)
}

// AppendAsLeaderWithin is AppendAsLeader spending the decompression of the
// producer's batches from budget, the request's (nil for none).
func (l *Log) AppendAsLeaderWithin(batches []byte, leaderEpoch int32, budget *record.Budget) (AppendInfo, error) {
	return l.appendAsLeader(batches, leaderEpoch, budget, record.FromClient)
}

// AppendFromBroker appends batches this broker wrote itself as the leader
// (transaction markers, which are control batches, and a coordinator's
// transactional offset commits, which carry no sequence): offsets and the
// leader epoch are assigned as for a producer's, but the batches are
// checked as a replica's and stored as they are.
func (l *Log) AppendFromBroker(batches []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.appendAsLeader(batches, leaderEpoch, nil, record.FromReplica)
}

func (l *Log) appendAsLeader(batches []byte, leaderEpoch int32, budget *record.Budget, origin record.Origin) (AppendInfo, error) {
	cfg := l.cfg.Load()
	lim := record.Limits{
		MaxBytes:             cfg.MaxMessageBytes,
		Compact:              cfg.Compact,
		LogAppendTime:        cfg.LogAppendTime,
		NowMs:                l.now().UnixMilli(),
		TimestampBeforeMaxMs: cfg.TimestampBeforeMaxMs,
		TimestampAfterMaxMs:  cfg.TimestampAfterMaxMs,
		Partition:            &l.tp,
		Budget:               budget,
	}
	// Checked before the lock: decompressing and walking every record is
	// the costly part, and it needs nothing of the log's.
	parsed, err := splitValid(batches, origin, lim)
	if err != nil {
		return AppendInfo{}, err
	}
	// What is stored: the producer's batches, or the same records in the
	// topic's compression.type, built before the lock as the check was.
	data, stored := batches, parsed
	if cfg.Compression != CompressionProducer && origin == record.FromClient {
		if data, stored, err = recompress(batches, parsed, cfg.Compression, cfg.MaxMessageBytes); err != nil {
			return AppendInfo{}, err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return AppendInfo{}, ErrClosed
	}
	info := AppendInfo{FirstOffset: l.end.Load(), LogAppendTime: -1}
	now := l.now().UnixMilli()
	next := info.FirstOffset
	for i, b := range stored {
		if p := parsed[i]; &p[0] != &b[0] {
			// The caller reads the offsets of what it sent (the
			// producer state does).
			p.SetBaseOffset(next)
			p.SetPartitionLeaderEpoch(leaderEpoch)
		}
		b.SetBaseOffset(next)
		b.SetPartitionLeaderEpoch(leaderEpoch)
		if cfg.LogAppendTime {
			b.SetLogAppendTime(now)
			info.LogAppendTime = now
		}
		next = b.LastOffset() + 1
		info.Records += int64(b.RecordCount())
	}
	info.LastOffset, info.Batches = next-1, len(stored)
	if err := l.appendLocked(data, stored, cfg); err != nil {
		return AppendInfo{}, err
	}
	if err := l.epochs.assign(leaderEpoch, info.FirstOffset); err != nil {
		return info, err
	}
	return info, nil
}

// AppendAsFollower appends batches copied from the leader's log, keeping
// their offsets and leader epochs. Offsets must follow the log end.
func (l *Log) AppendAsFollower(batches []byte) (AppendInfo, error) {
	parsed, err := splitValid(batches, record.FromReplica, record.Limits{})
	if err != nil {
		return AppendInfo{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return AppendInfo{}, ErrClosed
	}
	info := AppendInfo{FirstOffset: -1, LogAppendTime: -1}
	next := l.end.Load()
	for _, b := range parsed {
		if b.BaseOffset() < next {
			return AppendInfo{}, &record.Error{Kafka: kerr.CorruptMessage,
				Reason: fmt.Sprintf("replicated batch at offset %d is behind the log end %d", b.BaseOffset(), next)}
		}
		if info.FirstOffset < 0 {
			info.FirstOffset = b.BaseOffset()
		}
		next = b.LastOffset() + 1
		info.Records += int64(b.RecordCount())
	}
	info.LastOffset, info.Batches = next-1, len(parsed)
	cfg := l.cfg.Load()
	if err := l.appendLocked(batches, parsed, cfg); err != nil {
		return AppendInfo{}, err
	}
	for _, b := range parsed {
		if err := l.epochs.assign(b.PartitionLeaderEpoch(), b.BaseOffset()); err != nil {
			return info, err
		}
	}
	return info, nil
}

// splitValid splits and checks the batches of one append. A client's
// batches also get the max timestamp their records hold, as Kafka's
// LogValidator writes it.
func splitValid(data []byte, origin record.Origin, lim record.Limits) ([]record.Batch, error) {
	var out []record.Batch
	for rest := data; len(rest) > 0; {
		b, r, ok := record.Split(rest)
		if !ok {
			return nil, &record.Error{Kafka: kerr.CorruptMessage, Reason: fmt.Sprintf("%d trailing bytes are not a whole batch", len(rest))}
		}
		checked, err := record.Check(b, origin, lim)
		if err != nil {
			return nil, err
		}
		if origin == record.FromClient && !lim.LogAppendTime && !b.LogAppendTime() {
			// Harmless if a later batch is refused: the request's
			// bytes are written nowhere then.
			b.SetMaxTimestamp(checked.MaxTimestamp)
		}
		out = append(out, b)
		rest = r
	}
	if len(out) == 0 {
		return nil, &record.Error{Kafka: kerr.CorruptMessage, Reason: "no record batches"}
	}
	return out, nil
}

// recompress rebuilds the batches not already in codec c, as Kafka does
// for a topic whose compression.type is not the producer's; the result must
// still fit max.message.bytes. Batches already in c are kept as they are,
// and when all are, data is returned as it is.
func recompress(data []byte, parsed []record.Batch, c record.Codec, maxBytes int) ([]byte, []record.Batch, error) {
	same := true
	for _, b := range parsed {
		same = same && b.Codec() == c
	}
	if same {
		return data, parsed, nil
	}
	var out []byte
	ends := make([]int, len(parsed))
	for i, b := range parsed {
		if b.Codec() != c {
			var err error
			if b, err = b.Recompress(c); err != nil {
				return nil, nil, err
			}
			if maxBytes > 0 && len(b) > maxBytes {
				return nil, nil, &record.Error{Kafka: kerr.MessageTooLarge, Reason: fmt.Sprintf(
					"the batch is %d bytes compressed with %s (compression.type), more than max.message.bytes=%d", len(b), c, maxBytes)}
			}
		}
		out = append(out, b...)
		ends[i] = len(out)
	}
	stored := make([]record.Batch, len(parsed))
	start := 0
	for i, end := range ends {
		stored[i] = record.Batch(out[start:end:end])
		start = end
	}
	return out, stored, nil
}

// appendLocked writes offset-assigned batches, rolling first when the active
// segment cannot take them. mu must be held.
func (l *Log) appendLocked(data []byte, parsed []record.Batch, cfg *Config) (err error) {
	if err := l.health.check(); err != nil {
		return err
	}
	defer func() { err = l.health.noteIO(err) }()
	first, last := parsed[0], parsed[len(parsed)-1]
	if err := l.maybeRollLocked(int64(len(data)), first, last.LastOffset(), cfg); err != nil {
		return err
	}
	seg := l.active()
	if err := seg.appendBatches(data, int64(cfg.IndexIntervalBytes)); err != nil {
		return err
	}
	l.end.Store(last.LastOffset() + 1)
	if l.unflushedMsgs == 0 {
		l.firstUnflush = l.now()
	}
	for _, b := range parsed {
		l.unflushedMsgs += int64(b.RecordCount())
	}
	l.wakeLocked()
	if l.unflushedMsgs >= cfg.FlushMessages {
		return l.flushLocked()
	}
	return nil
}

// maybeRollLocked starts a new segment when the active one is full by bytes,
// by age (segment.ms, from its first batch's timestamp, as Kafka does), by
// index entries, or by the relative offset range an index entry can hold.
func (l *Log) maybeRollLocked(size int64, first record.Batch, lastOffset int64, cfg *Config) error {
	seg := l.active()
	cur := seg.size.Load()
	if cur == 0 {
		return nil
	}
	full := cur+size > cfg.SegmentBytes ||
		int64(seg.offsets.len()+1)*entrySize > int64(cfg.SegmentIndexBytes) ||
		int64(seg.times.len()+1)*timeEntrySize > int64(cfg.SegmentIndexBytes) ||
		lastOffset-seg.base > math.MaxInt32
	if !full {
		// Kafka measures a segment's age in record time when it can: the
		// incoming batch's timestamp against the segment's first one.
		waited := l.now().Sub(seg.created).Milliseconds()
		if seg.firstTimestamp >= 0 {
			waited = first.MaxTimestamp() - seg.firstTimestamp
		}
		full = waited > cfg.SegmentMs.Milliseconds()
	}
	if !full {
		return nil
	}
	return l.rollLocked(first.BaseOffset())
}

// Roll seals the active segment and starts a new one at the log end, unless
// the active segment is empty.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.active().size.Load() == 0 {
		return nil
	}
	if err := l.health.check(); err != nil {
		return err
	}
	return l.health.noteIO(l.rollLocked(l.end.Load()))
}

func (l *Log) rollLocked(base int64) error {
	old := l.active()
	if err := old.seal(); err != nil {
		return err
	}
	seg, err := openSegment(l.dir, base, true)
	if err == nil {
		seg.created = l.now()
	}
	if err != nil {
		return fmt.Errorf("broker/log: roll %s at %d: %w", l.tp, base, err)
	}
	segs := append(append([]*segment(nil), l.segments()...), seg)
	l.segs.Store(&segs)
	l.logger.Debug("rolled segment", "base_offset", base)
	return nil
}

// Flush fsyncs every segment up to the log end and moves the recovery point
// there. Appends never fsync unless flush.messages or flush.ms ask for it:
// durability comes from replication (KAFKA-615).
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return l.flushLocked()
}

func (l *Log) flushLocked() (err error) {
	if err := l.health.check(); err != nil {
		return err
	}
	defer func() { err = l.health.noteIO(err) }()
	if l.onFlush != nil {
		// Wall time, not l.now: tests that set the clock still want real
		// fsync times reported.
		start := time.Now()
		defer func() { l.onFlush(time.Since(start)) }()
	}
	rp := l.recoveryPoint.Load()
	end := l.end.Load()
	segs := l.segments()
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].base <= rp {
			continue
		}
		if err := s.sync(); err != nil {
			return fmt.Errorf("broker/log: flush %s: %w", l.tp, err)
		}
	}
	l.recoveryPoint.Store(end)
	l.unflushedMsgs = 0
	return nil
}

// flushIfDue fsyncs when the oldest unflushed append is older than flush.ms.
func (l *Log) flushIfDue() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.unflushedMsgs == 0 {
		return nil
	}
	if l.now().Sub(l.firstUnflush) < l.cfg.Load().FlushMs {
		return nil
	}
	return l.flushLocked()
}

// TruncateTo removes every batch that ends at or after offset, for a
// follower whose log diverged from its leader's. The log end becomes offset
// or the base of the batch that straddled it.
func (l *Log) TruncateTo(offset int64) (err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	defer func() { err = l.health.noteIO(err) }()
	if offset >= l.end.Load() {
		return nil
	}
	if offset < l.start.Load() {
		return fmt.Errorf("%w: truncate to %d, below the log start %d", ErrOffsetOutOfRange, offset, l.start.Load())
	}
	segs := l.segments()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
	i = max(i, 0)
	// Drop whole segments after the one holding offset; when offset is that
	// segment's base, it empties and stays as the active one.
	for _, s := range segs[i+1:] {
		if err := l.deleteSegmentLocked(s); err != nil {
			return err
		}
	}
	kept := append([]*segment(nil), segs[:i+1]...)
	seg := kept[i]
	if err := seg.offsets.index.reopenForAppend(); err != nil {
		return err
	}
	if err := seg.times.index.reopenForAppend(); err != nil {
		return err
	}
	newEnd, err := seg.truncateTo(offset, int64(l.cfg.Load().IndexIntervalBytes))
	if err != nil {
		return err
	}
	l.segs.Store(&kept)
	l.end.Store(newEnd)
	l.recoveryPoint.Store(min(l.recoveryPoint.Load(), newEnd))
	l.wakeLocked()
	return l.epochs.truncateFromEnd(newEnd)
}

// ResetTo empties the log and starts it again at offset, for a follower
// whose log ends before its leader's starts (Kafka's
// truncateFullyAndStartAt): nothing it has is worth keeping. An empty log
// (its start at its end) may also move back, to the batch holding its
// leader's log start. A log may move back below its start too: a follower
// told to truncate below it (a log started from remote storage whose new
// leader's history diverges earlier) keeps nothing either. What it may not
// do is reset into the records it holds.
func (l *Log) ResetTo(offset int64) (err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	defer func() { err = l.health.noteIO(err) }()
	end := l.end.Load()
	if start := l.start.Load(); offset == end || offset < end && offset >= start && start != end {
		return fmt.Errorf("broker/log: reset %s to %d: the log holds [%d, %d)", l.tp, offset, l.start.Load(), end)
	}
	// The old files go first: moving back, one of them may bear the new
	// segment's name.
	for _, s := range l.segments() {
		if err := l.deleteSegmentLocked(s); err != nil {
			return err
		}
	}
	seg, err := openSegment(l.dir, offset, true)
	if err != nil {
		return fmt.Errorf("broker/log: reset %s to %d: %w", l.tp, offset, err)
	}
	seg.created = l.now()
	kept := []*segment{seg}
	l.segs.Store(&kept)
	l.start.Store(offset)
	l.end.Store(offset)
	l.recoveryPoint.Store(offset)
	l.wakeLocked()
	return l.epochs.truncateFromEnd(0)
}

// ResetWithEpochs empties the log, starts it again at offset and makes
// epochs its leader-epoch cache: a follower rebuilding its state from
// remote storage (KIP-405), whose log starts where its leader's local log
// does while the epochs of the remote range below stay known. Every entry
// must start at or below offset.
func (l *Log) ResetWithEpochs(offset int64, epochs []EpochEntry) error {
	for _, e := range epochs {
		if e.StartOffset > offset {
			return fmt.Errorf("broker/log: reset %s to %d: leader epoch %d starts past it at %d", l.tp, offset, e.Epoch, e.StartOffset)
		}
	}
	if empty := l.start.Load() == l.end.Load(); !empty || offset != l.end.Load() {
		if err := l.ResetTo(offset); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return l.epochs.replace(epochs)
}

// DeleteRecordsBefore moves the log start offset to offset (DeleteRecords)
// and deletes the segments wholly before it.
func (l *Log) DeleteRecordsBefore(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if offset > l.end.Load() {
		return fmt.Errorf("%w: delete before %d, beyond the log end %d", ErrOffsetOutOfRange, offset, l.end.Load())
	}
	if offset <= l.start.Load() {
		return nil
	}
	return l.advanceStartLocked(offset, true)
}

// advanceStartLocked moves the log start and deletes segments it leaves
// wholly behind, forgetting the leader epochs before it when forgetEpochs.
// mu must be held.
func (l *Log) advanceStartLocked(offset int64, forgetEpochs bool) error {
	l.start.Store(offset)
	segs := l.segments()
	n := 0
	for n+1 < len(segs) && segs[n+1].base <= offset {
		n++
	}
	if n > 0 {
		for _, s := range segs[:n] {
			if err := l.deleteSegmentLocked(s); err != nil {
				return err
			}
		}
		kept := append([]*segment(nil), segs[n:]...)
		l.segs.Store(&kept)
	}
	if !forgetEpochs {
		return nil
	}
	return l.epochs.truncateFromStart(offset)
}

// deleteSegmentLocked renames a segment's files away now, unlinks them
// after file.delete.delay.ms and then drops the Log's reference: the files
// close when the last reader releases the segment (lifetime.go), whatever
// the delay. The caller publishes a segment list without s. mu must be held.
func (l *Log) deleteSegmentLocked(s *segment) error {
	if err := s.markDeleted(); err != nil {
		return err
	}
	l.pendingDeletes[s] = time.AfterFunc(l.cfg.Load().FileDeleteDelayMs, func() {
		// mu orders this after the caller's publication of the new list,
		// even at a delay of 0.
		l.mu.Lock()
		defer l.mu.Unlock()
		if _, pending := l.pendingDeletes[s]; pending {
			delete(l.pendingDeletes, s)
			l.retire(s)
		}
	})
	return nil
}

// retire unlinks a segment marked deleted and drops the Log's reference.
func (l *Log) retire(s *segment) {
	if err := s.unlinkDeleted(); err != nil {
		l.logger.Warn("removing deleted segment", "base_offset", s.base, "err", err)
	}
	s.dropOwner(l)
}

// finishDeletesLocked retires now the segments still waiting for their
// delay: the log is closing. Readers still inside them keep their files
// open until they release them. mu must be held.
func (l *Log) finishDeletesLocked() {
	for s, timer := range l.pendingDeletes {
		timer.Stop()
		l.retire(s)
	}
	clear(l.pendingDeletes)
}

// Close flushes the log and closes its files, and removes at once the
// segments still waiting out file.delete.delay.ms. A segment a reader still
// holds (a Slice not yet released) closes at the reader's release; reads
// that start after Close get ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	err := l.flushLocked()
	if serr := l.active().seal(); err == nil {
		err = serr
	}
	l.closed = true
	l.shut.Store(true)
	l.wakeLocked()
	l.finishDeletesLocked()
	l.mu.Unlock()
	l.closeSegments()
	return err
}

// closeSegments drops the Log's reference to every segment; each closes now,
// or when the last reader inside it releases it. A close error is logged
// then (release), not returned: everything to persist was flushed before.
func (l *Log) closeSegments() {
	p := l.segs.Load()
	if p == nil {
		return
	}
	for _, s := range *p {
		s.dropOwner(l)
	}
}

// Delete closes the log and removes its directory (DeleteTopics). As with
// Close, readers inside a segment keep reading it until they release it.
func (l *Log) Delete() error {
	l.mu.Lock()
	l.closed = true
	l.shut.Store(true)
	l.wakeLocked()
	l.finishDeletesLocked()
	l.mu.Unlock()
	l.closeSegments()
	// Unlinking is safe under readers: their open files and mappings stay
	// valid until they release the segments.
	return os.RemoveAll(l.dir)
}

// SegmentBase is the base offset of the segment holding offset (the first
// segment's for an offset below it), the name of the files that belong
// to that segment, such as a transaction index.
func (l *Log) SegmentBase(offset int64) int64 {
	segs := l.segments()
	if len(segs) == 0 {
		return offset
	}
	i := max(sort.Search(len(segs), func(i int) bool { return segs[i].base > offset })-1, 0)
	return segs[i].base
}

// TxnView is what the cleaner needs to know of a partition's transactions,
// which the partition (broker/replica) keeps: the log knows batches, not
// their outcome.
type TxnView struct {
	// Stable is the last stable offset: cleaning stops below it, so that
	// a record of an undecided transaction never removes an older one.
	Stable func() int64
	// Aborted says whether the transactional batch of producerID at
	// offset belongs to an aborted transaction: the cleaner removes it,
	// and never lets its keys remove older records.
	Aborted func(producerID, offset int64) bool
	// Producers is each active producer's last batch, read once per
	// cleaning: the cleaner keeps that batch, emptied if need be, so
	// that the producer's sequence and epoch survive in the log (Kafka's
	// lastRecordsOfActiveProducers). Nil: none kept.
	Producers func() map[int64]ProducerLast
	// OpenInSnapshots is, for each producer that has an open transaction
	// in some producer snapshot, the lowest such snapshot's offset: a
	// restart may load that snapshot and needs the producer's next marker
	// to close the transaction, so the cleaner keeps every marker of the
	// producer at or past it. Nil: markers are never removed.
	OpenInSnapshots func() map[int64]int64
	// ForgetAborted drops aborted transactions, by producer and marker
	// offset, from the aborted-transaction index (memory and .txnindex
	// files, durably): none of their batches is left, and their markers
	// may go next. The cleaner calls it before it installs the segments
	// it cleaned, so that an index entry never outlives its marker: a
	// read_committed consumer given an entry whose marker is gone would
	// drop the producer's later transactional batches as aborted.
	ForgetAborted func(keys [][2]int64) error
}

// ProducerLast is a producer's last batch in the partition: the last
// offset of its last data batch (-1 when the producer state has none, as
// after a marker that bumped its epoch: then its last marker of the
// current epoch is kept instead) and its epoch.
type ProducerLast struct {
	LastDataOffset int64
	Epoch          int16
}

// SetTxnView gives the cleaner the partition's transactions.
func (l *Log) SetTxnView(v *TxnView) { l.txns.Store(v) }

// cleanBound is the offset cleaning must not pass: the last stable offset
// when the partition has a view of its transactions, else none (-1).
func (l *Log) cleanBound() int64 {
	if v := l.txns.Load(); v != nil && v.Stable != nil {
		return v.Stable()
	}
	return -1
}

// abortedBatch says whether b is a batch of an aborted transaction.
func (l *Log) abortedBatch(b record.Batch) bool {
	v := l.txns.Load()
	return v != nil && v.Aborted != nil && b.Transactional() && !b.Control() && v.Aborted(b.ProducerID(), b.BaseOffset())
}
