package tier

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/internal/atomicfile"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// Config configures a Manager. The names in comments are broker properties.
type Config struct {
	// URI is rsm.config.storage.uri: hdfs://namenode:port/path or file:///path.
	URI string
	// User is rsm.config.storage.hdfs.user.
	User   string
	NodeID int32
	// Interval is remote.log.manager.task.interval.ms.
	Interval time.Duration
	// CacheBytes bounds the read-ahead cache of remote segment bytes.
	CacheBytes int64
	// ChunkBytes is the unit of remote reads and of the cache.
	ChunkBytes int64
	// Grace is rsm.config.storage.cleanup.grace.ms: how long a
	// superseded manifest version, the segment files only it names, and
	// files no version names (an upload interrupted or refused) stay in
	// remote storage before the leader removes them (gc.go). The
	// broker setting is at least 1 s; tests set less here (zero removes
	// them at the leader's next pass).
	Grace time.Duration
	// PassTimeout (tributary.tier.pass.timeout.ms) bounds one
	// partition's work in a pass (its remote calls and uploads): past it
	// the pass moves on, the partition counts as unavailable and is
	// skipped until the stuck work returns, so that a slow or silent
	// remote store never holds the tier loop of every partition. It also
	// bounds a follower's AuxState read.
	PassTimeout time.Duration
	// CallTimeout (tributary.tier.delete.records.timeout.ms) bounds
	// DeleteRecords' wait for the partition and its commit, and a chunk
	// load when ChunkTimeout is 0.
	CallTimeout time.Duration
	// ChunkTimeout (rsm.config.fetch.chunk.timeout.ms) bounds a remote
	// read's chunk load: past it its readers fail retriably and its slot
	// is freed.
	ChunkTimeout time.Duration
	// ListOffsetsTimeout (remote.list.offsets.request.timeout.ms) bounds
	// a ListOffsets by timestamp's wait for remote storage.
	ListOffsetsTimeout time.Duration
	// IOTimeout (rsm.config.storage.hdfs.io.timeout.ms) is the store's
	// fsys.Options.IOTimeout: how long one read or write on an HDFS
	// connection waits for the peer before the call fails and the
	// connection is closed. The timeouts above free the caller; this one
	// frees the stuck call itself, its goroutine and its connection.
	IOTimeout time.Duration
	Logger    *slog.Logger
	Now       func() time.Time
}

// DefaultCacheBytes and DefaultChunkBytes size the remote read cache;
// DefaultGrace is Config.Grace's default.
const (
	DefaultCacheBytes = 128 << 20
	DefaultChunkBytes = 4 << 20
	DefaultGrace      = 10 * time.Minute
	// A pass uploads a group of segments: minutes at worst.
	DefaultPassTimeout = 5 * time.Minute
	DefaultCallTimeout = 30 * time.Second
	// Kafka's remote.list.offsets.request.timeout.ms default.
	DefaultListOffsetsTimeout = 30 * time.Second
)

// Target is a partition this broker leads and whose topic has
// remote.storage.enable, as the server sees it at one pass.
type Target struct {
	TP          log.TopicPartition
	TopicID     string
	Log         *log.Log
	LeaderEpoch int32
	// Bound: only segments wholly below it are uploaded (the last stable
	// offset, which is at most the high watermark), so that nothing a
	// consumer cannot yet see, or that a new leader could truncate, goes
	// to remote storage.
	Bound int64
	// Follower is a partition this broker replicates but does not lead:
	// the manager only reads its remote metadata, so that local
	// retention on this disk removes what is remote (follow.go).
	Follower bool
	// ProducerSnapshot is the producer state as of offset next, the end of
	// a segment being uploaded (ok false when the log cannot rebuild it):
	// the .snapshot a follower starting there takes as its own. nil
	// uploads the newest snapshot at or below next, as it is.
	ProducerSnapshot func(next int64) (data []byte, ok bool, err error)
}

// Manager uploads closed segments, applies total retention to remote
// segments, removes deleted topics' remote data, and serves remote reads.
type Manager struct {
	cfg    Config
	logger *slog.Logger
	cache  *chunkCache

	fs       atomic.Pointer[fsBox] // nil until the store is reachable
	openMu   sync.Mutex
	openNext time.Time // when opening the store is tried again; openMu

	mu    sync.Mutex
	parts map[log.TopicPartition]*partition
	// topics are the remote directories of the topics seen tiered since
	// the start, by topic id: one whose id leaves the metadata is deleted.
	topics map[string]string

	stop atomic.Pointer[<-chan struct{}] // Run's stop

	// uploaded counts segments and bytes uploaded, for metrics and tests.
	uploadedSegments, uploadedBytes atomic.Int64
	// passErrors counts the partition passes that failed (PassErrors).
	passErrors atomic.Int64
}

type fsBox struct{ fsys.FS }

// partition is the tier state of one partition.
type partition struct {
	tp      log.TopicPartition
	dir     string // remote directory, relative to the root
	topicID string

	manifest atomic.Pointer[Manifest] // nil until loaded
	// cached is the local copy of the manifest, read when the partition
	// is first seen: while remote storage cannot be reached, it keeps the
	// log start offset where it was, and reads below the local log start
	// fail with a retriable error rather than OFFSET_OUT_OF_RANGE (which
	// would make consumers reset their position).
	cached atomic.Pointer[Manifest]
	log    atomic.Pointer[log.Log]

	// txns are the parsed .txnindex entries of remote segments, by
	// segment file name (FileName(""), so a replaced segment is never
	// answered from its predecessor's): a read_committed fetch searches
	// every remote segment from its offset on (AbortedTxns), and keeping
	// the few bytes per aborted transaction here means that search never
	// depends on the chunk cache holding all the indexes at once.
	txnMu sync.Mutex
	txns  map[string][]remotelog.AbortedTxn

	// ioMu orders the manifest writes and file removals of the partition
	// (only the Run goroutine takes it today).
	ioMu  sync.Mutex
	epoch atomic.Int32 // the leader epoch of the latest pass
	// follower: the manifest was read as a follower's (not loaded, not
	// swept); ioMu.
	follower bool
	// loaded: the manifest was loaded (and swept) as a leader since the
	// partition was last followed; ioMu.
	loaded bool
	// fenced: manifest.json was seen to be the fence; ioMu.
	fenced bool
	// versions are manifest versions read or written, by sequence (they
	// never change), for gc; gcNext is when gc runs next. ioMu.
	versions map[int64]*Manifest
	gcNext   time.Time
	// busy: a pass's work for the partition runs (it may have outlived
	// its PassTimeout).
	busy    atomic.Bool
	backoff time.Duration
	// failing: the partition's passes fail on remote storage
	// (remoteFailure), and none has succeeded since (FailingPartitions);
	// failingSince is when the failures began (Run's goroutine).
	failing      atomic.Bool
	failingSince time.Time
	next         time.Time // no work before this after a failure
}

// New returns a Manager; Run does the work.
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.CacheBytes <= 0 {
		cfg.CacheBytes = DefaultCacheBytes
	}
	if cfg.ChunkBytes <= 0 {
		cfg.ChunkBytes = DefaultChunkBytes
	}
	if cfg.PassTimeout <= 0 {
		cfg.PassTimeout = DefaultPassTimeout
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.ChunkTimeout <= 0 {
		cfg.ChunkTimeout = cfg.CallTimeout
	}
	if cfg.ListOffsetsTimeout <= 0 {
		cfg.ListOffsetsTimeout = DefaultListOffsetsTimeout
	}
	m := &Manager{cfg: cfg, logger: cfg.Logger.With("component", "tier"), parts: map[log.TopicPartition]*partition{}, topics: map[string]string{}}
	m.cache = newChunkCache(cfg.CacheBytes, cfg.ChunkBytes, cfg.ChunkTimeout)
	return m
}

// RemoteDir is a partition's remote directory, relative to the root.
func RemoteDir(topic, topicID string, partition int32) string {
	return remotelog.Dir(topic, topicID, partition)
}

// store returns the remote file system, opening it when it is not open;
// failures are retried at most every few seconds.
func (m *Manager) store() (fsys.FS, error) {
	if b := m.fs.Load(); b != nil {
		return b.FS, nil
	}
	m.openMu.Lock()
	defer m.openMu.Unlock()
	if b := m.fs.Load(); b != nil {
		return b.FS, nil
	}
	if now := time.Now(); now.Before(m.openNext) {
		return nil, fmt.Errorf("%w: %s is not reachable yet", ErrUnavailable, m.cfg.URI)
	}
	fs, err := fsys.Open(m.cfg.URI, fsys.Options{User: m.cfg.User, Log: m.logger, IOTimeout: m.cfg.IOTimeout})
	if err != nil {
		m.openNext = time.Now().Add(2 * time.Second)
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	m.fs.Store(&fsBox{fs})
	m.logger.Info("remote storage open", "uri", m.cfg.URI)
	return fs, nil
}

// ErrUnavailable is remote storage that cannot be reached: a retriable
// condition; errors.Is(err, kerr.KafkaStorageError) holds too, which is
// what a fetch answers (clients retry it).
var ErrUnavailable error = unavailable{}

type unavailable struct{}

func (unavailable) Error() string { return "broker/tier: remote storage unavailable" }
func (unavailable) Unwrap() error { return kerr.KafkaStorageError }

// Close closes the store.
func (m *Manager) Close() error {
	if b := m.fs.Swap(nil); b != nil {
		return b.Close()
	}
	return nil
}

// Run does a pass every Interval until stop is closed. targets lists the
// partitions to tier now; live says whether a topic id is still in the
// metadata.
func (m *Manager) Run(stop <-chan struct{}, targets func() []Target, live func(topicID string) bool) {
	m.stop.Store(&stop)
	tick := time.NewTicker(m.cfg.Interval)
	defer tick.Stop()
	for {
		m.Pass(targets(), live)
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// Pass does one round of work: for each target, load its remote metadata,
// upload what is due, and apply total retention remotely; then delete the
// remote data of topics that are gone.
func (m *Manager) Pass(targets []Target, live func(topicID string) bool) {
	seen := map[log.TopicPartition]bool{}
	for _, t := range targets {
		if m.stopped() {
			return
		}
		seen[t.TP] = true
		p := m.partitionFor(t)
		if now := m.cfg.Now(); now.Before(p.next) {
			continue
		}
		if p.busy.Load() {
			// A pass that timed out is still in a remote call: a second
			// would only queue behind it on ioMu.
			m.logger.Warn("tiered storage: skipping the partition: an earlier pass's remote call has not returned", "partition", t.TP.String())
			continue
		}
		p.busy.Store(true)
		err := m.bounded(m.cfg.PassTimeout, func() error {
			defer p.busy.Store(false)
			return m.work(p, t)
		})
		if errors.Is(err, errStopped) {
			return
		}
		if err != nil {
			m.passErrors.Add(1)
			if remoteFailure(err) && !p.failing.Swap(true) {
				// Once per outage, at error level: the retries below are
				// warnings, and what an operator must learn is that
				// nothing of the partition goes remote and its disk
				// fills (local retention waits for the uploads).
				p.failingSince = m.cfg.Now()
				m.logger.Error("tiered storage: remote storage is failing for the partition: no uploads, local retention keeps what is not uploaded",
					"partition", t.TP.String(), "uri", m.cfg.URI, "err", err)
			}
			p.backoff = min(max(2*p.backoff, m.cfg.Interval), 30*time.Second)
			p.next = m.cfg.Now().Add(p.backoff)
			m.logger.Warn("tiered storage: will retry", "partition", t.TP.String(), "retry_in", p.backoff, "err", err)
			continue
		}
		if p.failing.Swap(false) {
			m.logger.Info("tiered storage: remote storage answers again for the partition", "partition", t.TP.String(),
				"failed_for", m.cfg.Now().Sub(p.failingSince).Round(time.Millisecond))
		}
		p.backoff, p.next = 0, time.Time{}
	}
	m.mu.Lock()
	for tp, p := range m.parts {
		if !seen[tp] {
			// No longer led here, or no longer tiered: local retention
			// falls back to the total retention, which keeps more.
			if l := p.log.Load(); l != nil {
				l.SetTierView(nil)
			}
			delete(m.parts, tp)
		}
	}
	var gone []string
	for id, dir := range m.topics {
		if live != nil && !live(id) {
			gone = append(gone, dir)
			delete(m.topics, id)
		}
	}
	m.mu.Unlock()
	for _, dir := range gone {
		m.deleteTopic(dir)
	}
}

func (m *Manager) deleteTopic(dir string) {
	fs, err := m.store()
	if err == nil {
		err = fs.RemoveAll(dir)
	}
	if err != nil {
		// Not retried in this version: the directory stays, and no
		// topic reads it (a new topic of the same name has a new id).
		m.logger.Warn("tiered storage: removing a deleted topic's remote data", "dir", dir, "err", err)
		return
	}
	m.logger.Info("tiered storage: removed a deleted topic's remote data", "dir", dir)
}

func (m *Manager) partitionFor(t Target) *partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.parts[t.TP]
	if !ok || p.topicID != t.TopicID {
		p = &partition{tp: t.TP, dir: RemoteDir(t.TP.Topic, t.TopicID, t.TP.Partition), topicID: t.TopicID}
		if data, err := os.ReadFile(filepath.Join(t.Log.Dir(), LocalManifestFile)); err == nil {
			if man, err := parseManifest(data); err == nil && man.TopicID == t.TopicID {
				p.cached.Store(man)
			}
		}
		m.parts[t.TP] = p
	}
	m.topics[t.TopicID] = path.Dir(p.dir)
	if p.log.Swap(t.Log) != t.Log {
		t.Log.SetTierView(&log.TierView{UploadedEnd: func() int64 {
			if man := p.manifest.Load(); man != nil {
				return man.UploadedEnd()
			}
			return -1
		}})
	}
	return p
}

func (m *Manager) lookup(tp log.TopicPartition) *partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parts[tp]
}

// work loads, uploads and expires one partition.
func (m *Manager) work(p *partition, t Target) error {
	fs, err := m.store()
	if err != nil {
		return err
	}
	p.ioMu.Lock()
	defer p.ioMu.Unlock()
	if t.Follower {
		return m.follow(fs, p, t)
	}
	if p.follower {
		// Just elected: load and sweep as a leader does, whatever was
		// read as a follower. The follower's manifest stays what readers
		// use until then: its local log was trimmed by it, so without it
		// the remote range would answer OFFSET_OUT_OF_RANGE and
		// consumers would reset past it (review 2).
		p.follower = false
		p.loaded = false
		p.fenced = false
	}
	p.epoch.Store(t.LeaderEpoch)
	if !p.loaded || p.manifest.Load() == nil {
		if err := m.load(fs, p, t); err != nil {
			return err
		}
	}
	if !p.fenced {
		if err := m.fence(fs, p, t); err != nil {
			return err
		}
	}
	if man := p.manifest.Load(); man.Sequence == 0 || man.LeaderEpoch < t.LeaderEpoch {
		// The first write of a new leader epoch, before any upload:
		// from here on a deposed leader's commit finds a newer epoch
		// and writes nothing.
		if err := m.commit(fs, p, t.Log, man, func(next *Manifest) (*Manifest, error) { return next, nil }); err != nil {
			return err
		}
		m.logger.Info("tiered storage: the remote manifest carries this leader's epoch", "partition", t.TP.String(), "leader_epoch", t.LeaderEpoch, "version", p.manifest.Load().Sequence)
	}
	if !p.fenced {
		if err := m.fence(fs, p, t); err != nil {
			return err
		}
	}
	n, err := m.upload(fs, p, t)
	if err != nil {
		return err
	}
	if err := m.expire(fs, p, t); err != nil {
		return err
	}
	if err := m.gc(fs, p, t); err != nil {
		return err
	}
	if n > 0 {
		// What is now remote may leave the disk at once rather than at
		// the next retention check.
		if _, err := t.Log.EnforceRetention(); err != nil && !errors.Is(err, log.ErrClosed) {
			return err
		}
	}
	return nil
}

// load reads the partition's newest manifest as its leader. The work
// then claims it for this leader's epoch (work), and gc removes, after
// the grace period, what interrupted uploads left.
func (m *Manager) load(fs fsys.FS, p *partition, t Target) error {
	man, err := remotelog.ReadLatest(fs, p.dir)
	if err != nil {
		return fmt.Errorf("%w: read the manifest of %s: %v", ErrUnavailable, t.TP, err)
	}
	known := p.cached.Load()
	if known != nil && known.TopicID != t.TopicID {
		known = nil
	}
	if man == nil {
		if known != nil && len(known.Segments) > 0 {
			// Remote storage lost the metadata (removed by hand, or a
			// different storage root): starting empty would upload from
			// the local log start and leave everything below it
			// unreachable, and gc would remove the segment files.
			m.logger.Error("tiered storage: no manifest in remote storage, but this broker knows one with segments; refusing to start the partition's remote log afresh",
				"partition", t.TP.String(), "known_segments", len(known.Segments), "known_uploaded_end", known.UploadedEnd())
			return fmt.Errorf("%w: %s: no remote manifest, but %d remote segments known", ErrUnavailable, t.TP, len(known.Segments))
		}
		man = &Manifest{Version: remotelog.ManifestVersion, Topic: t.TP.Topic, TopicID: t.TopicID, Partition: t.TP.Partition, LogStartOffset: -1}
	}
	if man.TopicID != t.TopicID {
		return fmt.Errorf("%w: %s: the remote manifest is topic id %s's", ErrUnavailable, t.TP, man.TopicID)
	}
	if known != nil && (man.LeaderEpoch < known.LeaderEpoch || man.Sequence < known.Sequence) {
		// Older than what this broker saw (versions removed or put
		// back by hand: a commit never writes one). Adopting it would
		// let gc remove the newer segments' files, and this broker
		// (and its followers) may have trimmed what only those hold.
		// Nothing is removed or uploaded until an operator restores
		// the newer one.
		m.logger.Error("tiered storage: the remote manifest is older than one this broker saw; refusing to load it",
			"partition", t.TP.String(), "remote_leader_epoch", man.LeaderEpoch, "known_leader_epoch", known.LeaderEpoch,
			"remote_version", man.Sequence, "known_version", known.Sequence,
			"remote_uploaded_end", man.UploadedEnd(), "known_uploaded_end", known.UploadedEnd())
		return fmt.Errorf("%w: %s: the remote manifest (version %d, leader epoch %d) is older than version %d, leader epoch %d, seen before",
			ErrUnavailable, t.TP, man.Sequence, man.LeaderEpoch, known.Sequence, known.LeaderEpoch)
	}
	if man.LeaderEpoch > t.LeaderEpoch {
		// A newer leader wrote it: this broker's metadata is behind
		// (it is no longer the leader, or will not be told it is yet).
		return fmt.Errorf("%w: %w: %s: written at leader epoch %d, above this broker's %d", ErrUnavailable, errFenced, t.TP, man.LeaderEpoch, t.LeaderEpoch)
	}
	// Versions remembered while this broker led before are gone or
	// going, removed by the leaders since: kept, they would never be
	// pruned (gc drops only what it lists).
	p.versions = nil
	p.remember(man)
	if man.Sequence > 0 {
		m.writeLocalManifest(t.Log, man)
	}
	p.publish(man)
	p.loaded = true
	m.logger.Info("tiered storage: partition loaded", "partition", t.TP.String(), "remote_segments", len(man.Segments),
		"remote_log_start_offset", man.LogStartOffset, "uploaded_end", man.UploadedEnd(), "version", man.Sequence, "leader_epoch", man.LeaderEpoch)
	return nil
}

// fence puts the fence (remotelog.Fence) in manifest.json, so that an
// earlier build leading the partition fails rather than sweeping this
// build's files: before the claim when there is no manifest.json (before
// anything it could sweep exists), after it when a legacy manifest is
// there (its segments must be in version 1 before it is replaced).
func (m *Manager) fence(fs fsys.FS, p *partition, t Target) error {
	state, err := remotelog.ReadFence(fs, p.dir)
	if err != nil {
		return fmt.Errorf("%w: read %s of %s: %v", ErrUnavailable, remotelog.LegacyManifestFile, t.TP, err)
	}
	switch {
	case state == remotelog.FenceInPlace:
	case state == remotelog.FenceLegacy && p.manifest.Load().Sequence == 0:
		return nil // not claimed yet: after the claim
	default:
		if err := remotelog.WriteFence(fs, p.dir); err != nil {
			return fmt.Errorf("%w: write the fence of %s: %v", ErrUnavailable, t.TP, err)
		}
		m.logger.Info("tiered storage: manifest.json is now the fence earlier builds refuse", "partition", t.TP.String(), "replaced", state == remotelog.FenceLegacy)
	}
	p.fenced = true
	return nil
}

// commit writes the partition's next manifest version, change applied to
// base (the version this broker holds), as a compare-and-swap
// (remotelog.Commit): durable in remote storage first, then cached
// locally and published to readers and to local retention. When another
// writer took the version, change is applied to theirs, unless it was
// written at a newer leader epoch: leadership moved, this broker writes
// nothing and reloads at its next pass.
func (m *Manager) commit(fs fsys.FS, p *partition, l *log.Log, base *Manifest, change func(*Manifest) (*Manifest, error)) error {
	epoch := p.epoch.Load()
	var out *Manifest
	err := m.bounded(0, func() error {
		var err error
		out, err = remotelog.Commit(fs, p.dir, base, epoch, change)
		return err
	})
	if errors.Is(err, remotelog.ErrFenced) {
		p.manifest.Store(nil)
		p.loaded = false
		m.logger.Warn("tiered storage: a newer leader wrote the remote manifest; not writing it", "partition", l.TopicPartition().String(), "leader_epoch", epoch, "err", err)
		// Retriable for a client (DeleteRecords): the new leader
		// answers it.
		return fmt.Errorf("%w: %w: %v", ErrUnavailable, errFenced, err)
	}
	if err != nil {
		if errors.Is(err, errHole) || errors.Is(err, errStopped) {
			return err
		}
		return fmt.Errorf("%w: write the manifest of %s: %v", ErrUnavailable, l.TopicPartition(), err)
	}
	p.remember(out)
	m.writeLocalManifest(l, out)
	p.publish(out)
	return nil
}

// remember keeps a manifest version for gc.
func (p *partition) remember(man *Manifest) {
	if man.Sequence == 0 {
		return
	}
	if p.versions == nil {
		p.versions = map[int64]*Manifest{}
	}
	p.versions[man.Sequence] = man
}

// publish makes man what readers and local retention use, and the
// fallback (cached) for when the manifest is dropped (fenced) or not
// loaded yet.
func (p *partition) publish(man *Manifest) {
	p.cached.Store(man)
	p.manifest.Store(man)
}

// errFenced is a manifest a newer leader wrote since this broker read it.
var errFenced = errors.New("broker/tier: the remote manifest was written by a newer leader")

// remoteFailure says whether a failed pass is remote storage failing (down,
// refusing, too slow, or its metadata unusable), which the outage alarm
// (the "remote storage is failing" log line and FailingPartitions) is for.
// A leader change (errFenced), an upload that would leave a hole
// (errHole) and the local log's own errors (retention, reading a local
// segment) fail the pass too, but an operator sent to look at HDFS for
// them would find nothing there: they are the pass's "will retry"
// warnings and PassErrors only.
func remoteFailure(err error) bool {
	return errors.Is(err, ErrUnavailable) && !errors.Is(err, errFenced)
}

// errStopped is a pass cut short by the manager's stop.
var errStopped = errors.New("broker/tier: stopping")

// bounded runs f, returning early with errStopped when the manager stops,
// and with ErrUnavailable (errTimedOut) after timeout (0: none): a hung
// remote call must not hang the broker's shutdown, nor the tier loop of
// the other partitions. f goes on alone until it fails or the process
// exits; the caller must not start another f that would wait on it.
func (m *Manager) bounded(timeout time.Duration, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case err := <-done:
		return err
	case <-m.stopCh():
		return errStopped
	case <-expired:
		return fmt.Errorf("%w: %w after %v", ErrUnavailable, errTimedOut, timeout)
	}
}

// errTimedOut is remote work that did not return within its timeout.
var errTimedOut = errors.New("broker/tier: remote storage did not answer")

// lockWithin takes mu unless it stays held for d (a pass stuck in a
// remote call holds it).
func lockWithin(mu *sync.Mutex, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !mu.TryLock() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func (m *Manager) stopCh() <-chan struct{} {
	if c := m.stop.Load(); c != nil {
		return *c
	}
	return nil
}

func (m *Manager) stopped() bool {
	select {
	case <-m.stopCh():
		return true
	default:
		return false
	}
}

// writeLocalManifest caches the manifest beside the partition's segments,
// for operators and tools (it is never trusted over the remote one).
func (m *Manager) writeLocalManifest(l *log.Log, man *Manifest) {
	if err := atomicfile.WriteFile(filepath.Join(l.Dir(), LocalManifestFile), man.Encode()); err != nil && !errors.Is(err, os.ErrNotExist) {
		m.logger.Warn("tiered storage: caching the manifest locally", "partition", l.TopicPartition().String(), "err", err)
	}
}

// LogStart is the partition's log start offset counting remote storage,
// and whether it has remote segments at all.
func (m *Manager) LogStart(tp log.TopicPartition) (int64, bool) {
	p := m.lookup(tp)
	if p == nil {
		return 0, false
	}
	man := p.manifest.Load()
	if man == nil {
		man = p.cached.Load()
	}
	if man == nil || len(man.Segments) == 0 {
		return 0, false
	}
	return man.LogStartOffset, true
}

// DeleteRecords raises the partition's remote log start to offset
// (DeleteRecords on a tiered partition), committed in the manifest before
// it returns, so that remote reads and a restarted broker never serve
// below it; retention removes the segments wholly below it.
func (m *Manager) DeleteRecords(tp log.TopicPartition, offset int64) error {
	p := m.lookup(tp)
	if p == nil {
		return nil
	}
	if !lockWithin(&p.ioMu, m.cfg.CallTimeout) {
		return fmt.Errorf("%w: %w: %s is busy with remote work for over %v", ErrUnavailable, errTimedOut, tp, m.cfg.CallTimeout)
	}
	// The work keeps ioMu until it returns, also when the client's
	// answer went on timeout: nothing else writes the partition's state
	// meanwhile.
	return m.bounded(m.cfg.CallTimeout, func() error {
		defer p.ioMu.Unlock()
		return m.deleteRecords(p, tp, offset)
	})
}

// deleteRecords is DeleteRecords' work, under ioMu.
func (m *Manager) deleteRecords(p *partition, tp log.TopicPartition, offset int64) error {
	man := p.manifest.Load()
	if man == nil {
		if c := p.cached.Load(); c != nil && len(c.Segments) > 0 && c.LogStartOffset < offset {
			return fmt.Errorf("%w: the remote metadata of %s is not loaded yet", ErrUnavailable, tp)
		}
		return nil
	}
	if len(man.Segments) == 0 || man.LogStartOffset >= offset {
		return nil
	}
	if p.follower || !p.loaded {
		// Just elected: the manifest is still the one read as a
		// follower, and this broker has not claimed it for its epoch.
		return fmt.Errorf("%w: the remote metadata of %s is not loaded as its leader yet", ErrUnavailable, tp)
	}
	l := p.log.Load()
	fs, err := m.store()
	if err != nil {
		return err
	}
	return m.commit(fs, p, l, man, func(next *Manifest) (*Manifest, error) {
		next.LogStartOffset = max(next.LogStartOffset, offset)
		return next, nil
	})
}

// UploadedEnd is one past the last remote offset of the partition, -1
// when it has none (or its metadata is not loaded).
func (m *Manager) UploadedEnd(tp log.TopicPartition) (int64, error) {
	p := m.lookup(tp)
	if p == nil {
		return -1, nil
	}
	if man := p.manifest.Load(); man != nil {
		return man.UploadedEnd(), nil
	}
	if c := p.cached.Load(); c != nil && len(c.Segments) > 0 {
		// Not "nothing tiered": the answer is not known yet (review 3).
		return -1, fmt.Errorf("%w: the remote metadata of %s is not loaded yet", ErrUnavailable, tp)
	}
	return -1, nil
}

// Seen is whether the manager has been given the partition since it
// started: until then it knows nothing of its remote segments.
func (m *Manager) Seen(tp log.TopicPartition) bool {
	return m.lookup(tp) != nil
}

// Loaded is whether the partition's remote metadata is loaded: until then
// "nothing uploaded" is not known (a restart, a leader just elected).
func (m *Manager) Loaded(tp log.TopicPartition) bool {
	p := m.lookup(tp)
	return p != nil && p.manifest.Load() != nil
}

// RemoteSize is the bytes of a partition's remote segments.
func (m *Manager) RemoteSize(tp log.TopicPartition) int64 {
	if p := m.lookup(tp); p != nil {
		if man := p.manifest.Load(); man != nil {
			return man.Size()
		}
	}
	return 0
}

// FailingPartitions is how many partitions' passes fail on remote
// storage (remoteFailure), from the first such failure to the next pass
// that succeeds: their
// uploads (or, on a follower, the metadata reads that let local
// retention remove what is remote) wait for remote storage, and their
// local logs grow. An alert above 0 is the outage alarm.
func (m *Manager) FailingPartitions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, p := range m.parts {
		if p.failing.Load() {
			n++
		}
	}
	return n
}

// PassErrors is how many partition passes have failed since the start.
func (m *Manager) PassErrors() int64 { return m.passErrors.Load() }

// Uploaded is how many segments and bytes this manager has uploaded.
func (m *Manager) Uploaded() (segments, bytes int64) {
	return m.uploadedSegments.Load(), m.uploadedBytes.Load()
}
