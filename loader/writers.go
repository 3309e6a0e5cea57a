package loader

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"sort"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/util"

	"github.com/tributary-io/tributary/formats/parquet"
	"github.com/tributary-io/tributary/internal/fsys"
)

// hourWriters are the open Parquet files of one unit, one per event hour
// (and combination of identity partition values, partition.go).
// Files roll at the target size, and when the rows they buffer together pass
// the memory cap, the largest is completed early: many hours open at once
// (a backfill, late events) make smaller files instead of an out-of-memory.
//
// Not safe for concurrent use: one unit, one goroutine.
type hourWriters struct {
	fs        fsys.FS
	dir       string // the attempt's staging directory
	topic     string
	partition int32
	schema    *arrow.Schema
	opts      parquet.Options
	target    int64
	maxMemory int64
	loc       *time.Location

	open  map[writerKey]*hourFile
	files []FileEntry
	seq   int
}

// writerKey names an open file: its hour (Unix ms) and identity values.
type writerKey struct {
	hour   int64
	values string
}

type hourFile struct {
	hour        time.Time
	values      IdentityValues
	tmp         string
	f           io.WriteCloser
	w           *parquet.Writer
	first, last int64
	// pending estimates the memory the writer holds: the Arrow size of the
	// rows given to it since it last wrote to the file.
	pending   int64
	lastBytes int64
}

// write appends rec, whose rows all belong to hour, have the identity
// values (nil without identity partitioning) and carry offsets.
func (hw *hourWriters) write(hour time.Time, values IdentityValues, rec arrow.Record, offsets []int64) error {
	key := writerKey{hour: hour.UnixMilli()}
	if len(values) > 0 {
		b, _ := json.Marshal(values) // map keys sorted: one name per combination
		key.values = string(b)
	}
	f := hw.open[key]
	if f == nil {
		var err error
		if f, err = hw.create(hour); err != nil {
			return err
		}
		f.values = values
		hw.open[key] = f
		f.first = offsets[0]
	}
	if err := f.w.Write(rec); err != nil {
		return fmt.Errorf("writing %s: %w", f.tmp, err)
	}
	f.last = offsets[len(offsets)-1]
	if b := f.w.Bytes(); b != f.lastBytes {
		f.lastBytes, f.pending = b, 0
	} else {
		f.pending += util.TotalRecordSize(rec)
	}
	if f.w.Bytes()+f.w.Buffered() >= hw.target {
		return hw.complete(key)
	}
	return hw.capMemory()
}

// capMemory completes the largest files until the open ones hold less than
// the cap.
func (hw *hourWriters) capMemory() error {
	for {
		var total, most int64
		var largest writerKey
		found := false
		for k, f := range hw.open {
			total += f.pending
			if f.pending > most {
				most, largest, found = f.pending, k, true
			}
		}
		if total <= hw.maxMemory || !found {
			return nil
		}
		if err := hw.complete(largest); err != nil {
			return err
		}
	}
}

func (hw *hourWriters) create(hour time.Time) (*hourFile, error) {
	hw.seq++
	tmp := fmt.Sprintf("%s/%06d.parquet.tmp", hw.dir, hw.seq)
	raw, err := hw.fs.Create(tmp)
	if err != nil {
		return nil, fmt.Errorf("creating %s/%s: %w", hw.fs, tmp, err)
	}
	// The Parquet footer is written field by field: unbuffered, each
	// field was a system call on a local disk, and a unit split by
	// identity values completes many files.
	f := &bufferedFile{Writer: bufio.NewWriterSize(raw, 256<<10), f: raw}
	w, err := parquet.NewWriter(f, hw.schema, hw.opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &hourFile{hour: hour, tmp: tmp, f: f, w: w}, nil
}

// complete writes the footer of an hour's file and gives it its final name
// in the staging directory.
func (hw *hourWriters) complete(key writerKey) error {
	f := hw.open[key]
	delete(hw.open, key)
	st, err := f.w.Close()
	if err != nil {
		f.f.Close()
		return fmt.Errorf("completing %s: %w", f.tmp, err)
	}
	if err := f.f.Close(); err != nil {
		return fmt.Errorf("closing %s/%s: %w", hw.fs, f.tmp, err)
	}
	final := path.Join(hourDir(hw.topic, f.hour), dataFileName(hw.topic, hw.partition, f.first, f.last))
	staged := path.Join(hw.dir, final)
	if err := hw.fs.Rename(f.tmp, staged); err != nil {
		return fmt.Errorf("staging %s: %w", final, err)
	}
	hw.files = append(hw.files, FileEntry{
		Path: final, Staged: staged, Topic: hw.topic, Partition: hw.partition,
		First: f.first, Last: f.last, Rows: st.Rows, Bytes: st.Bytes, Hour: key.hour, HourEnd: f.hour.Add(time.Hour).UTC(),
		Identity: f.values,
	})
	return nil
}

// close completes every open file and returns all files, by name.
func (hw *hourWriters) close() ([]FileEntry, error) {
	keys := make([]writerKey, 0, len(hw.open))
	for k := range hw.open {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].hour < keys[j].hour || keys[i].hour == keys[j].hour && keys[i].values < keys[j].values
	})
	for _, k := range keys {
		if err := hw.complete(k); err != nil {
			return nil, err
		}
	}
	sort.Slice(hw.files, func(i, j int) bool { return hw.files[i].Path < hw.files[j].Path })
	return hw.files, nil
}

// abort closes the open files without completing them; the attempt's
// directory is removed by the caller.
func (hw *hourWriters) abort() {
	for k, f := range hw.open {
		f.f.Close()
		delete(hw.open, k)
	}
}

// bufferedFile is a file written through a buffer, flushed on Close.
type bufferedFile struct {
	*bufio.Writer
	f io.WriteCloser
}

func (b *bufferedFile) Close() error {
	err := b.Flush()
	if cerr := b.f.Close(); err == nil {
		err = cerr
	}
	return err
}
