package producer

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// Snapshots are the producer snapshot files of one partition directory,
// <20-digit offset>.snapshot beside the segments, as in Kafka.
//
// Not safe for concurrent use: the partition serializes its calls. The
// partition's log does not know these files; it only removes leftover *.tmp
// files when it opens, which include the temporary file of a snapshot write
// that a crash interrupted.
type Snapshots struct {
	dir     string
	logger  *slog.Logger
	offsets []int64 // the snapshots on disk, ascending
}

// SnapshotFileName is the name of the snapshot at offset.
func SnapshotFileName(offset int64) string { return fmt.Sprintf("%020d%s", offset, SnapshotSuffix) }

func parseSnapshotName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, SnapshotSuffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	return off, err == nil && off >= 0
}

// OpenSnapshots lists the snapshots in a partition directory and removes
// the temporary files of interrupted writes.
func OpenSnapshots(dir string, logger *slog.Logger) (*Snapshots, error) {
	if logger == nil {
		logger = slog.Default()
	}
	s := &Snapshots{dir: dir, logger: logger}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("broker/producer: list snapshots: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, SnapshotSuffix+".tmp") {
			os.Remove(filepath.Join(dir, name))
			continue
		}
		if off, ok := parseSnapshotName(name); ok && e.Type().IsRegular() {
			s.offsets = append(s.offsets, off)
		}
	}
	slices.Sort(s.offsets)
	return s, nil
}

// Offsets are the offsets of the snapshots on disk, ascending.
func (s *Snapshots) Offsets() []int64 { return slices.Clone(s.offsets) }

// Latest is the offset of the newest snapshot.
func (s *Snapshots) Latest() (int64, bool) {
	if len(s.offsets) == 0 {
		return 0, false
	}
	return s.offsets[len(s.offsets)-1], true
}

func (s *Snapshots) path(offset int64) string { return filepath.Join(s.dir, SnapshotFileName(offset)) }

// Path is the file of the snapshot at offset.
func (s *Snapshots) Path(offset int64) string { return s.path(offset) }

// Load is how a partition's producer state starts: from the newest usable
// snapshot at or below the log end, with the offset from which the log's
// batches must be replayed into it (Kafka's
// ProducerStateManager.truncateAndReload).
//
// Snapshots past logEnd describe batches the log no longer has (a
// truncation, or an unflushed tail lost in a crash) and are deleted. A
// corrupt snapshot is logged and deleted and the next older one is tried; one
// that cannot be read for another reason is logged and skipped. Without a
// usable snapshot the state is empty and the replay starts at logStart. An
// error is returned only when a file cannot be deleted.
func (s *Snapshots) Load(logStart, logEnd int64) (*State, int64, error) {
	for _, off := range s.offsets {
		if off > logEnd {
			s.logger.Warn("deleting producer snapshot past the log end", "snapshot", SnapshotFileName(off), "log_end_offset", logEnd)
		}
	}
	if err := s.DeleteAbove(logEnd); err != nil {
		return nil, 0, err
	}
	for i := len(s.offsets) - 1; i >= 0; i-- {
		off := s.offsets[i]
		st, err := ReadSnapshot(s.path(off))
		if err == nil {
			return st, off, nil
		}
		s.logger.Warn("ignoring unusable producer snapshot", "snapshot", SnapshotFileName(off), "err", err)
		if errors.Is(err, ErrCorruptSnapshot) || errors.Is(err, os.ErrNotExist) {
			if err := s.remove(off); err != nil {
				return nil, 0, err
			}
		}
	}
	return NewState(), logStart, nil
}

// ReadSnapshot reads and decodes one snapshot file.
func ReadSnapshot(path string) (*State, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	st, err := DecodeSnapshot(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return st, nil
}

// Write stores data, from EncodeSnapshot, as the snapshot at offset,
// replacing one already there. The write is atomic: the bytes go to
// <name>.tmp, are fsynced, and the file is renamed into place and the
// directory fsynced, so a crash leaves the old set of snapshots or the new
// one, never a partial file under a snapshot's name.
func (s *Snapshots) Write(offset int64, data []byte) error {
	final := s.path(offset)
	if err := atomicfile.WriteFile(final, data); err != nil {
		return fmt.Errorf("broker/producer: write snapshot %s: %w", final, err)
	}
	if i, found := slices.BinarySearch(s.offsets, offset); !found {
		s.offsets = slices.Insert(s.offsets, i, offset)
	}
	return nil
}

// DeleteAbove deletes the snapshots past offset: after the log was
// truncated to offset, they describe batches it no longer has.
func (s *Snapshots) DeleteAbove(offset int64) error {
	var errs []error
	for len(s.offsets) > 0 && s.offsets[len(s.offsets)-1] > offset {
		errs = append(errs, s.remove(s.offsets[len(s.offsets)-1]))
	}
	return errors.Join(errs...)
}

// Retain deletes the snapshots below logStart and all but the newest keep,
// but never the newest: it may hold producers whose batches the log no
// longer has, which no replay could rebuild.
func (s *Snapshots) Retain(logStart int64, keep int) error {
	var errs []error
	for len(s.offsets) > 1 && (s.offsets[0] < logStart || len(s.offsets) > max(keep, 1)) {
		errs = append(errs, s.remove(s.offsets[0]))
	}
	return errors.Join(errs...)
}

// remove deletes the snapshot at offset and forgets it, even when the file
// is already gone.
func (s *Snapshots) remove(offset int64) error {
	if i, found := slices.BinarySearch(s.offsets, offset); found {
		s.offsets = slices.Delete(s.offsets, i, i+1)
	}
	if err := os.Remove(s.path(offset)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("broker/producer: delete snapshot: %w", err)
	}
	return nil
}
