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
	// fileCost estimates what an open file holds besides its pending
	// rows (fileCost): counted against maxMemory per open file, so that
	// many identity values at once make smaller files, not an
	// out-of-memory.
	fileCost int64
	// distinct counts the (hour, values) combinations the unit met, up
	// to manyCombinations: past it the worker warns.
	distinct map[writerKey]struct{}
}

// Per open file: the write buffer, and an estimate of the writer's state
// (its column encoders' buffers, per leaf column, and the rest).
// TestHourWritersManyValues checks the heap against the cap with it: 4,000
// values under 8 MiB grew it by 21 MiB at most (was 425 MiB uncounted,
// with a 256 KiB buffer per file).
const (
	fileBuffer     = 64 << 10
	fileBaseCost   = 32 << 10
	leafColumnCost = 64 << 10
	// maxOpenFiles caps a unit's open files whatever the memory cap: each
	// is a file descriptor (an HDFS pipeline on HDFS).
	maxOpenFiles = 512
	// manyCombinations of hour and identity values in one unit say the
	// partition column has too many distinct values for files: most are
	// small (docs/iceberg.md).
	manyCombinations = 1000
)

// costOfFile is the estimate of an open file of schema, beside its rows.
func costOfFile(schema *arrow.Schema) int64 {
	return fileBuffer + fileBaseCost + leafColumnCost*int64(leafColumns(schema.Fields()))
}

func leafColumns(fields []arrow.Field) int {
	n := 0
	for _, f := range fields {
		switch t := f.Type.(type) {
		case *arrow.StructType:
			n += leafColumns(t.Fields())
		case arrow.ListLikeType:
			n += leafColumns([]arrow.Field{t.ElemField()})
		default:
			n++
		}
	}
	return n
}

// Combinations is how many (hour, identity values) combinations the
// unit's rows had, counted up to manyCombinations+1.
func (hw *hourWriters) Combinations() int { return len(hw.distinct) }

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
		if hw.distinct == nil {
			hw.distinct = map[writerKey]struct{}{}
		}
		if len(hw.distinct) <= manyCombinations {
			hw.distinct[key] = struct{}{}
		}
		// Room for one more open file first: the cap holds with it.
		if err := hw.capMemory(1); err != nil {
			return err
		}
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
	return hw.capMemory(0)
}

// capMemory completes the files holding the most rows until the open
// ones, and extra files about to be opened, hold less than the cap (rows
// pending in the writers and each file's fileCost) and are at most
// maxOpenFiles.
func (hw *hourWriters) capMemory(extra int) error {
	if hw.fileCost == 0 {
		hw.fileCost = costOfFile(hw.schema)
	}
	for len(hw.open) > 0 {
		n := len(hw.open) + extra
		total := int64(n) * hw.fileCost
		// The file holding the most rows in memory; when none holds any
		// (all written out), the one with the most bytes in its file.
		most, written := int64(-1), int64(-1)
		var largest writerKey
		for k, f := range hw.open {
			total += f.pending
			if b := f.w.Bytes(); f.pending > most || f.pending == most && b > written {
				most, written, largest = f.pending, b, k
			}
		}
		if total <= hw.maxMemory && n <= maxOpenFiles {
			return nil
		}
		if err := hw.complete(largest); err != nil {
			return err
		}
	}
	return nil
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
	f := &bufferedFile{Writer: bufio.NewWriterSize(raw, fileBuffer), f: raw}
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
