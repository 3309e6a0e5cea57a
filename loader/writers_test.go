package loader

import (
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
