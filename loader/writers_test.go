package loader

import (
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/tributary-io/tributary/formats/parquet"
	"github.com/tributary-io/tributary/internal/fsys"
)

// Events spread over many hours at once (a backfill, late events) must not
// hold a row group per hour in memory: past the cap, the largest open file
// is completed early, and every row is still written once.
func TestHourWritersCapMemory(t *testing.T) {
	fs, err := fsys.Open(t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String}}, nil)
	const capBytes = 1 << 20
	hw := &hourWriters{
		fs: fs, dir: "staging", topic: "t", partition: 0, schema: schema,
		opts: parquet.Options{RowGroupBytes: 64 << 20}, target: 1 << 30, maxMemory: capBytes, loc: time.UTC,
		open: map[writerKey]*hourFile{},
	}
	base := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	payload := string(make([]byte, 1000))
	var offset int64
	for batch := range 200 {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		offs := make([]int64, 100)
		for i := range offs {
			b.Append(payload)
			offs[i] = offset
			offset++
		}
		col := b.NewArray()
		rec := array.NewRecord(schema, []arrow.Array{col}, 100)
		if err := hw.write(base.Add(time.Duration(batch%48)*time.Hour), nil, rec, offs); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		col.Release()
		var pending int64
		for _, f := range hw.open {
			pending += f.pending
		}
		if pending > capBytes {
			t.Fatalf("after batch %d the open files hold %d bytes, over the cap %d", batch, pending, capBytes)
		}
	}
	files, err := hw.close()
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, f := range files {
		rows += f.Rows
	}
	if rows != offset {
		t.Fatalf("%d rows in the files, %d written", rows, offset)
	}
	if len(files) <= 48 {
		t.Fatalf("%d files for 48 hours: the cap completed none early", len(files))
	}
	t.Logf("%d rows in %d files over 48 hours with a %d-byte cap", rows, len(files), capBytes)
}

// --partition-by on a column with many distinct values (a user id): each
// value is an open file, whose buffer and writer state the cap counts
// too, so 4,000 values under an 8 MiB cap keep the heap bounded and the
// open files few, and every row is still written once.
func TestHourWritersManyValues(t *testing.T) {
	t.Parallel()
	fs, err := fsys.Open(t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "user", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	const capBytes = 8 << 20
	hw := &hourWriters{fs: fs, dir: "s", topic: "t", schema: schema, opts: parquet.Options{RowGroupBytes: 64 << 20},
		target: 256 << 20, maxMemory: capBytes, loc: time.UTC, open: map[writerKey]*hourFile{}}
	defer hw.abort()
	gw := &groupWriter{hw: hw, loc: time.UTC, cols: []string{"user"}}
	const n, batch = 4000, 1000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	peak := int64(0)
	for round := range 1 {
		for lo := 0; lo < n; lo += batch {
			ub := array.NewInt64Builder(memory.DefaultAllocator)
			sb := array.NewStringBuilder(memory.DefaultAllocator)
			offs := make([]int64, batch)
			times := make([]int64, batch)
			for i := range batch {
				ub.Append(int64(lo + i))
				sb.Append("x")
				offs[i] = int64(round*n + lo + i)
				times[i] = 1714521600000
			}
			u, s := ub.NewArray(), sb.NewArray()
			rec := array.NewRecord(schema, []arrow.Array{u, s}, batch)
			if err := gw.write(rec, offs, times); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			u.Release()
			s.Release()
			runtime.GC()
			runtime.ReadMemStats(&after)
			peak = max(peak, int64(after.HeapInuse)-int64(before.HeapInuse))
			if len(hw.open) > maxOpenFiles || int64(len(hw.open))*hw.fileCost > capBytes {
				t.Fatalf("%d files open, each counted %d bytes, under a %d-byte cap", len(hw.open), hw.fileCost, capBytes)
			}
		}
	}
	open := len(hw.open)
	files, err := hw.close()
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, f := range files {
		rows += f.Rows
	}
	t.Logf("%d files open at most, %d files, heap in use grew by %d MiB at most (cap %d MiB); %d combinations counted", open, len(files), peak>>20, capBytes>>20, hw.Combinations())
	if rows != n {
		t.Fatalf("%d rows in the files, %d written", rows, n)
	}
	// The heap also holds what the race detector and the other tests of
	// the package running beside this one allocate (19–33 MiB measured);
	// without the cap it grew by 425 MiB.
	if peak > 8*capBytes {
		t.Fatalf("heap in use grew by %d MiB under a %d MiB cap", peak>>20, capBytes>>20)
	}
	if hw.Combinations() <= manyCombinations {
		t.Fatalf("%d combinations counted; want past %d (the worker warns)", hw.Combinations(), manyCombinations)
	}
}
