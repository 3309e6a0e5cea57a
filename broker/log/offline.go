package log

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A log dir that fails an I/O operation goes offline, as Kafka's
// LogDirFailureChannel takes it: the first append, roll, flush, truncation,
// index write, segment creation or checkpoint write that returns an I/O
// error (EIO, ENOSPC, EROFS, ...; Kafka counts every IOException) marks the
// whole dir failed. Creating a partition's log fails the dir only for an
// error of the device or file system (isDeviceError): a file in the way or
// a permission is retried by the replica manager instead (its Failures),
// with the dir still serving its other partitions. From then on
//
//   - nothing in it is written again until the broker restarts: every log
//     in it is closed for writes (appends answer ErrClosed, or
//     ErrLogDirOffline for the dir's own operations), its background
//     flushing, checkpointing, retention and cleaning stop, and Close
//     neither flushes nor writes the checkpoints or the clean-shutdown
//     marker (the next start recovers the dir from its last checkpoint, as
//     after a crash);
//   - the failing write was not acknowledged: the append that met the error
//     returns it, and an append after it never reaches the file;
//   - DirConfig.OnFailure is told once, on its own goroutine, so that the
//     broker takes the dir's partitions offline and tells the controller.
//
// Readers are left alone: the segments stay mapped and open (a reader inside
// one finishes), and the broker stops sending readers there.

// ErrLogDirOffline is the error of an operation on a failed log dir:
// KAFKA_STORAGE_ERROR to clients.
var ErrLogDirOffline = fmt.Errorf("broker/log: log dir offline: %w", kerr.KafkaStorageError)

// health is a log dir's failure state, shared with the logs in it.
type health struct {
	err  atomic.Pointer[error]
	fail func(error) // the dir's; never blocks
}

// check is ErrLogDirOffline once the dir has failed. h may be nil (a log
// opened outside a Dir).
func (h *health) check() error {
	if h == nil || h.err.Load() == nil {
		return nil
	}
	return ErrLogDirOffline
}

// noteIO takes the dir offline when err is an I/O error, and returns err.
// It may be called with a Log's mu held.
func (h *health) noteIO(err error) error {
	if h != nil && IsIOError(err) {
		h.fail(err)
	}
	return err
}

// noteDevice takes the dir offline when err says the device or file system
// failed (isDeviceError), and returns err: creating a log, where a file in
// the way or a permission is the replica manager's to retry (broker/replica
// Manager.Failures), not the dir's failure.
func (h *health) noteDevice(err error) error {
	if h != nil && isDeviceError(err) {
		h.fail(err)
	}
	return err
}

// isDeviceError is whether err is the device's or file system's: an I/O
// error, a full or read-only file system, a quota, a device gone.
func isDeviceError(err error) bool {
	for _, e := range []syscall.Errno{syscall.EIO, syscall.ENOSPC, syscall.EROFS, syscall.EDQUOT, syscall.ENXIO, syscall.ENODEV, syscall.EUCLEAN} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// IsIOError is whether err is a failure of the file system (what Kafka
// sees as an IOException), as opposed to a closed log, bad input or a
// missing file another goroutine removed on purpose.
func IsIOError(err error) bool {
	if err == nil || errors.Is(err, ErrClosed) || errors.Is(err, ErrLogDirOffline) ||
		errors.Is(err, os.ErrClosed) || errors.Is(err, fs.ErrNotExist) {
		return false
	}
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se) || errors.As(err, &errno)
}

// Offline is the error that took the dir offline, nil while it is healthy.
func (d *Dir) Offline() error {
	if p := d.health.err.Load(); p != nil {
		return *p
	}
	return nil
}

// fail takes the dir offline after err, once. It never blocks: it may be
// called with a log's mu held.
func (d *Dir) fail(err error) {
	if !d.health.err.CompareAndSwap(nil, &err) {
		return
	}
	d.logger.Error("log dir failed: taking it offline; its partitions stop serving here and lead elsewhere, and nothing is written to it until the broker restarts",
		"err", err) // d.logger names the log_dir
	// Not counted in d.done: Close may be waiting on it already.
	go func() {
		for _, l := range d.Logs() {
			l.closeForWrites()
		}
		if d.cfg.OnFailure != nil {
			d.cfg.OnFailure(err)
		}
	}()
}

// closeForWrites stops every write to l: appends and the rest answer
// ErrClosed, and segments waiting out file.delete.delay.ms stay where they
// are. Readers keep their segments.
func (l *Log) closeForWrites() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	for _, t := range l.pendingDeletes {
		t.Stop()
	}
	clear(l.pendingDeletes)
	// The index entries not yet written stay in memory only: closing the
	// segment later must not write them (recovery rebuilds them).
	for _, s := range l.segments() {
		for _, ix := range []*index{s.offsets.index, s.times.index} {
			if ix.file != nil {
				ix.file.Close()
				ix.file = nil
			}
		}
	}
	l.wakeLocked()
}

// releaseOffline drops the log's segments without writing anything (Close
// of a failed dir).
func (l *Log) releaseOffline() {
	l.closeForWrites()
	if l.shut.Swap(true) {
		return
	}
	l.closeSegments()
}

// closeOffline is Close for a failed dir: the background work stops and the
// files are released, and nothing is written.
func (d *Dir) closeOffline() error {
	for _, l := range d.Logs() {
		l.releaseOffline()
	}
	return nil
}
