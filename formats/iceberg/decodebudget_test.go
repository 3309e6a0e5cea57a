package iceberg

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/tributary-io/tributary/formats/parquet"
)

// writeBomb writes a data file of rows rows whose string column is one
// value of valueLen bytes, dictionary-encoded and compressed, in one row
// group: a few KB on disk that decode to rows*valueLen bytes (its row
// group's declared size is the encoded one, no warning).
func writeBomb(t *testing.T, c *Catalog, name string, rows, valueLen int) NewFile {
	t.Helper()
	const batch = 64 << 10
	n := min(rows, batch)
	b := array.NewRecordBuilder(memory.DefaultAllocator, smallSchema)
	defer b.Release()
	v := strings.Repeat("x", valueLen)
	for i := 0; i < n; i++ {
		b.Field(0).(*array.StringBuilder).Append(v)
		b.Field(1).(*array.Int32Builder).Append(0)
		b.Field(2).(*array.Int64Builder).Append(7)
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(baseHour) * 3600e6))
	}
	rec := b.NewRecord()
	defer rec.Release()
	w, err := c.FS.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := parquet.NewWriter(w, smallSchema, parquet.Options{Codec: parquet.Zstd, RowGroupBytes: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	for written := 0; written < rows; written += n {
		if err := pw.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	st, err := pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return NewFile{Path: name, Records: st.Rows, Bytes: st.Bytes, Hour: baseHour}
}

// A few KB of Parquet that decode to 256 MiB in one row group: a scan and
// a compaction (of smaller ones) decode it a batch at a time, the heap rising by tens of
// MiB, not by the row group (490 MiB when a row group was decoded whole).
// A file whose single batch needs more than the decode budget (values of
// 1 MiB) is refused with an error naming it, before it takes the memory.
// Not parallel: the heap is the process's.
func TestDecodeBudget(t *testing.T) {
	c, _ := localCatalog(t)
	const table = "bomb"
	const rows = 128 << 10
	files := []NewFile{writeBomb(t, c, table+"/data/a.parquet", rows, 2048)}
	t.Logf("a file of %d bytes, %d rows of 2 KiB each (256 MiB decoded)", files[0].Bytes, rows)
	if files[0].Bytes > 64<<10 {
		t.Fatalf("the bomb file is %d bytes: want a small one", files[0].Bytes)
	}
	if _, _, err := c.Append(Append{Dir: table, Schema: smallSchema, TimeColumn: "_event_time", Files: files}); err != nil {
		t.Fatal(err)
	}
	tb, err := c.Load(table)
	if err != nil {
		t.Fatal(err)
	}
	const bound = 64 << 20
	var seen int64
	rise := peakHeap(func() {
		err = c.Scan(context.Background(), tb.Metadata.Current(), func(_ string, rec arrow.Record) error {
			seen += rec.NumRows()
			return nil
		})
	})
	t.Logf("scan: %d rows, heap rose %.1f MiB", seen, float64(rise)/(1<<20))
	if err != nil || seen != rows {
		t.Fatalf("scan: %d rows, %v", seen, err)
	}
	if rise > bound {
		t.Errorf("a scan of a file decoding to 256 MiB raised the heap by %d MiB, want under %d", rise>>20, bound>>20)
	}

	// The compaction reads its inputs by the same batches; smaller bombs
	// (48 MiB decoded each; 256 MiB with TRIBUTARY_TEST_LONG=1) keep it
	// short: its output is written whole.
	const table2 = "bomb2"
	rows2 := 24 << 10
	if os.Getenv("TRIBUTARY_TEST_LONG") != "" {
		rows2 = 128 << 10
	}
	// Two copies of one bomb: writing it is the slow part.
	a := writeBomb(t, c, table2+"/data/a.parquet", rows2, 2048)
	bytes, err := c.FS.ReadFile(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	b := a
	b.Path = table2 + "/data/b.parquet"
	if err := c.FS.WriteFileAtomic(b.Path, bytes); err != nil {
		t.Fatal(err)
	}
	files = []NewFile{a, b}
	if _, _, err := c.Append(Append{Dir: table2, Schema: smallSchema, TimeColumn: "_event_time", Files: files}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var res *CompactResult
	rise = peakHeap(func() {
		res, err = c.CompactTable(context.Background(), table2, Compact{})
	})
	t.Logf("compaction: %+v in %v, heap rose %.1f MiB", res, time.Since(start), float64(rise)/(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != int64(2*rows2) {
		t.Fatalf("compaction: %+v", res)
	}
	if rise > 32<<20 {
		t.Errorf("compacting 2 files decoding to %d MiB each raised the heap by %d MiB, want under 32", rows2*2048>>20, rise>>20)
	}

	// 64 values of 1 MiB: one batch is 64 MiB, over a budget of 16 MiB.
	wide := writeBomb(t, c, "wide/data/w.parquet", 64, 1<<20)
	if _, _, err := c.Append(Append{Dir: "wide", Schema: smallSchema, TimeColumn: "_event_time", Files: []NewFile{wide}}); err != nil {
		t.Fatal(err)
	}
	tb, err = c.Load("wide")
	if err != nil {
		t.Fatal(err)
	}
	c.DecodeBudget = 16 << 20
	rise = peakHeap(func() {
		err = c.Scan(context.Background(), tb.Metadata.Current(), func(string, arrow.Record) error { return nil })
	})
	t.Logf("scan of a %d-byte file of 1 MiB values with a 16 MiB budget: %v; heap rose %.1f MiB", wide.Bytes, err, float64(rise)/(1<<20))
	var o overBudget
	if !errors.As(err, &o) || !strings.Contains(err.Error(), "w.parquet: row group 0: refused") {
		t.Fatalf("scan over the decode budget: %v, want the file refused", err)
	}
	if rise > 32<<20 {
		t.Errorf("the refused scan raised the heap by %d MiB", rise>>20)
	}
	c.DecodeBudget = 0
	if err := c.Scan(context.Background(), tb.Metadata.Current(), func(string, arrow.Record) error { return nil }); err != nil {
		t.Fatalf("the same file within the default budget: %v", err)
	}
}
