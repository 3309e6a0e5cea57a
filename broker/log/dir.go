package log

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// Files of a log dir, named as Kafka names them.
const (
	RecoveryPointFile  = "recovery-point-offset-checkpoint"
	LogStartOffsetFile = "log-start-offset-checkpoint"
	// CleanShutdownFile exists only between a clean Close and the next
	// OpenDir: its presence means no log needs a recovery scan.
	CleanShutdownFile = ".kafka_cleanshutdown"
)

// DirConfig configures a log dir and its background work. Names in the
// comments are the broker properties.
type DirConfig struct {
	Path string
	// Defaults is the topic configuration for logs that have none of their
	// own.
	Defaults Config
	// ConfigFor returns a partition's topic configuration; nil uses Defaults.
	ConfigFor func(TopicPartition) Config
	// CheckpointInterval: log.flush.offset.checkpoint.interval.ms.
	CheckpointInterval time.Duration
	// RetentionCheckInterval: log.retention.check.interval.ms.
	RetentionCheckInterval time.Duration
	// FlushCheckInterval: log.flush.scheduler.interval.ms, how often flush.ms
	// is checked.
	FlushCheckInterval time.Duration
	// RecoveryThreads: num.recovery.threads.per.data.dir.
	RecoveryThreads int
	// CleanerEnable: log.cleaner.enable, whether compacted logs are cleaned
	// (on in DefaultDirConfig, as in Kafka).
	CleanerEnable bool
	// CleanerBackoff: log.cleaner.backoff.ms, the cleaner's sleep when no
	// log needs cleaning; 0 is DefaultCleanerBackoff.
	CleanerBackoff time.Duration
	// CleanerBackoffNow, when set, is read before each sleep instead of
	// CleanerBackoff: log.cleaner.backoff.ms is a dynamic broker config.
	CleanerBackoffNow func() time.Duration
	Logger            *slog.Logger
	// OnFlush is told how long each fsync of a log's segments took (the
	// broker's log flush time metric); nil is fine.
	OnFlush func(time.Duration)
	// OnFailure is told, once and on its own goroutine, the I/O error that
	// took the dir offline (see offline.go); nil is fine.
	OnFailure func(error)
}

// DefaultDirConfig is Kafka's broker defaults for path.
func DefaultDirConfig(path string) DirConfig {
	return DirConfig{
		Path:                   path,
		Defaults:               DefaultConfig(),
		CheckpointInterval:     time.Minute,
		RetentionCheckInterval: 5 * time.Minute,
		FlushCheckInterval:     time.Second,
		RecoveryThreads:        2,
		CleanerEnable:          true,
		CleanerBackoff:         DefaultCleanerBackoff,
	}
}

// Dir is a log dir (one of log.dirs): the partition logs in it, its offset
// checkpoints, and the background flushing and retention of its logs.
//
// Safe for concurrent use. Logs returned by Log and Create stay valid until
// Delete or Close.
type Dir struct {
	cfg    DirConfig
	logger *slog.Logger

	mu   sync.Mutex
	logs map[TopicPartition]*Log

	stop chan struct{}
	done sync.WaitGroup

	// cleanStart is whether the last stop was clean (the marker was there).
	cleanStart bool
	// health is shared with the logs: the first I/O error fails the dir.
	health *health
}

// CleanStart is whether the directory's last stop was clean: otherwise its
// logs were recovered, and what was not flushed before the crash may be
// gone.
func (d *Dir) CleanStart() bool { return d.cleanStart }

// OpenDir opens every partition log in the directory, recovering those that
// need it, and starts the background work.
func OpenDir(cfg DirConfig) (*Dir, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.Path, 0o755); err != nil {
		return nil, fmt.Errorf("broker/log: log dir %s: %w", cfg.Path, err)
	}
	d := &Dir{cfg: cfg, logger: cfg.Logger.With("log_dir", cfg.Path), logs: map[TopicPartition]*Log{}, stop: make(chan struct{})}
	d.health = &health{fail: d.fail}
	marker := filepath.Join(cfg.Path, CleanShutdownFile)
	_, err := os.Stat(marker)
	clean := err == nil
	recovery, err := ReadOffsetCheckpoint(filepath.Join(cfg.Path, RecoveryPointFile))
	if err != nil {
		// A lost recovery point only costs a longer scan.
		d.logger.Warn("ignoring unreadable checkpoint; scanning every log", "err", err)
		recovery, clean = map[TopicPartition]int64{}, false
	}
	starts, err := ReadOffsetCheckpoint(filepath.Join(cfg.Path, LogStartOffsetFile))
	if err != nil {
		d.logger.Warn("ignoring unreadable checkpoint; log start offsets fall back to the first segment", "err", err)
		starts = map[TopicPartition]int64{}
	}
	d.cleanStart = clean
	if err := d.openAll(recovery, starts, clean); err != nil {
		d.closeLogs()
		return nil, err
	}
	// From here on a crash must lead to recovery.
	if err := os.Remove(marker); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.closeLogs()
		return nil, err
	}
	d.logger.Info("log dir loaded", "partitions", len(d.logs), "clean_shutdown", clean)
	d.done.Add(1)
	go d.background()
	if cfg.CleanerEnable {
		d.done.Add(1)
		go d.runCleaner()
	}
	return d, nil
}

func (d *Dir) configFor(tp TopicPartition) Config {
	if d.cfg.ConfigFor != nil {
		return d.cfg.ConfigFor(tp)
	}
	return d.cfg.Defaults
}

// Path is the log dir's directory.
func (d *Dir) Path() string { return d.cfg.Path }

// MetadataDir is the directory of the replicated cluster metadata in the
// first log dir (broker/cluster's Raft log and snapshots): a log dir lists it
// but never opens it as a partition.
const MetadataDir = "__cluster_metadata"

func (d *Dir) openAll(recovery, starts map[TopicPartition]int64, clean bool) error {
	ents, err := os.ReadDir(d.cfg.Path)
	if err != nil {
		return err
	}
	var tps []TopicPartition
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if e.Name() == MetadataDir {
			continue // the controller quorum's, not a partition
		}
		tp, err := ParseDirName(e.Name())
		if err != nil {
			d.logger.Warn("skipping a directory that is not a partition", "dir", e.Name())
			continue
		}
		tps = append(tps, tp)
	}
	work := make(chan TopicPartition)
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var errs []error
	for range max(d.cfg.RecoveryThreads, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tp := range work {
				l, err := Open(filepath.Join(d.cfg.Path, tp.String()), d.configFor(tp), Options{
					RecoveryPoint:  recovery[tp],
					LogStartOffset: starts[tp],
					CleanShutdown:  clean,
					Logger:         d.logger,
					OnFlush:        d.cfg.OnFlush,
					health:         d.health,
				})
				errMu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("broker/log: open %s: %w", tp, err))
				} else {
					d.logs[tp] = l
				}
				errMu.Unlock()
			}
		}()
	}
	for _, tp := range tps {
		work <- tp
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}

// Log is the open log of tp.
func (d *Dir) Log(tp TopicPartition) (*Log, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.logs[tp]
	return l, ok
}

// Logs is every open log, ordered by topic and partition.
func (d *Dir) Logs() []*Log {
	d.mu.Lock()
	out := make([]*Log, 0, len(d.logs))
	for _, l := range d.logs {
		out = append(out, l)
	}
	d.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].tp, out[j].tp
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return out
}

// Create opens the log of tp, creating it if it does not exist.
func (d *Dir) Create(tp TopicPartition, cfg Config) (*Log, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.health.check(); err != nil {
		return nil, err
	}
	if l, ok := d.logs[tp]; ok {
		return l, nil
	}
	l, err := Open(filepath.Join(d.cfg.Path, tp.String()), cfg, Options{Logger: d.logger, CleanShutdown: true, OnFlush: d.cfg.OnFlush, health: d.health})
	if err != nil {
		return nil, d.health.noteDevice(err)
	}
	d.logs[tp] = l
	return l, nil
}

// Delete removes the log of tp and its files.
func (d *Dir) Delete(tp TopicPartition) error {
	d.mu.Lock()
	l, ok := d.logs[tp]
	delete(d.logs, tp)
	d.mu.Unlock()
	if !ok {
		return nil
	}
	if d.Offline() != nil {
		// Nothing is removed from a failed dir: the next start, with the
		// dir repaired, deletes what the metadata no longer has.
		l.releaseOffline()
		return nil
	}
	return l.Delete()
}

// WriteCheckpoints saves every log's recovery point and start offset.
func (d *Dir) WriteCheckpoints() error {
	if err := d.health.check(); err != nil {
		return err
	}
	rec, starts := map[TopicPartition]int64{}, map[TopicPartition]int64{}
	for _, l := range d.Logs() {
		rec[l.tp] = l.RecoveryPoint()
		starts[l.tp] = l.LogStartOffset()
	}
	return d.health.noteIO(errors.Join(
		WriteOffsetCheckpoint(filepath.Join(d.cfg.Path, RecoveryPointFile), rec, true),
		WriteOffsetCheckpoint(filepath.Join(d.cfg.Path, LogStartOffsetFile), starts, true),
	))
}

func (d *Dir) background() {
	defer d.done.Done()
	every := func(iv time.Duration) *time.Ticker {
		if iv <= 0 {
			iv = time.Duration(1<<63 - 1)
		}
		return time.NewTicker(iv)
	}
	flush, ckpt, ret := every(d.cfg.FlushCheckInterval), every(d.cfg.CheckpointInterval), every(d.cfg.RetentionCheckInterval)
	defer flush.Stop()
	defer ckpt.Stop()
	defer ret.Stop()
	for {
		select {
		case <-d.stop:
			return
		default:
		}
		if d.Offline() != nil {
			<-d.stop // a failed dir is never written again
			return
		}
		select {
		case <-d.stop:
			return
		case <-flush.C:
			for _, l := range d.Logs() {
				if err := l.flushIfDue(); err != nil && !errors.Is(err, ErrClosed) {
					d.logger.Error("flush failed", "partition", l.tp.String(), "err", err)
				}
			}
		case <-ckpt.C:
			if err := d.WriteCheckpoints(); err != nil {
				d.logger.Error("writing checkpoints failed", "err", err)
			}
		case <-ret.C:
			for _, l := range d.Logs() {
				if _, err := l.EnforceRetention(); err != nil && !errors.Is(err, ErrClosed) {
					d.logger.Error("retention failed", "partition", l.tp.String(), "err", err)
				}
			}
		}
	}
}

func (d *Dir) closeLogs() error {
	var errs []error
	for _, l := range d.Logs() {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// Close stops the background work, flushes and closes every log, writes the
// checkpoints and, only if all of that succeeded, the clean-shutdown marker.
func (d *Dir) Close() error {
	close(d.stop)
	d.done.Wait()
	if d.Offline() != nil {
		return d.closeOffline()
	}
	err := d.closeLogs()
	if err != nil && d.Offline() != nil {
		// The last flush failed the dir: nothing more is written.
		return d.closeOffline()
	}
	if err == nil {
		err = d.WriteCheckpoints()
	}
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(d.cfg.Path, CleanShutdownFile), []byte("{\"version\":0}\n"))
}
