package iceberg

import (
	"context"
	"fmt"
	"math/rand"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/tributary-io/tributary/formats/parquet"
)

// writeLarge writes rows of offsets [from, to) with a 1 KiB random payload
// each, uncompressed, in row groups of about rowGroup bytes.
func writeLarge(t *testing.T, c *Catalog, table string, from, to int64, rowGroup int64) NewFile {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, smallSchema)
	defer b.Release()
	rnd := rand.New(rand.NewSource(from))
	payload := make([]byte, 1024)
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	for o := from; o < to; o++ {
		for i := range payload {
			payload[i] = letters[rnd.Intn(len(letters))]
		}
		b.Field(0).(*array.StringBuilder).Append(string(payload))
		b.Field(1).(*array.Int32Builder).Append(0)
		b.Field(2).(*array.Int64Builder).Append(o)
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(baseHour)*3600e6 + o))
	}
	rec := b.NewRecord()
	defer rec.Release()
	tm := time.Unix(int64(baseHour)*3600, 0).UTC()
	name := fmt.Sprintf("%s/dt=%s/hr=%s/%s+0+%d+%d.parquet", table, tm.Format("2006-01-02"), tm.Format("15"), table, from, to-1)
	w, err := c.FS.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := parquet.NewWriter(w, smallSchema, parquet.Options{Codec: parquet.None, NoDictionary: true, RowGroupBytes: rowGroup})
	if err != nil {
		t.Fatal(err)
	}
	// In batches, as the loader writes: a row group ends between them.
	for off := int64(0); off < rec.NumRows(); off += 256 {
		part := rec.NewSlice(off, min(off+256, rec.NumRows()))
		err := pw.Write(part)
		part.Release()
		if err != nil {
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

// peakHeap runs fn while sampling the live heap (the GC made eager), and
// returns how far it rose above where it was before.
func peakHeap(fn func()) (rise uint64) {
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	if peak < base {
		return 0
	}
	return peak - base
}

// Compaction, an overwrite's rewrite and a scan hold one row group of a
// file, not the file: two files of 12 MiB in row groups of about 256 KiB,
// larger than the compaction's read-ahead budget (4 MiB), are compacted
// into one of 25 MiB, which is scanned and then rewritten by an overwrite,
// each with the heap rising by less than 3/4 of the file it reads (whole
// files, as before, held the file's bytes and its decoded table: twice
// the file). Not parallel: the heap is the process's.
func TestRowGroupStreaming(t *testing.T) {
	c, _ := localCatalog(t)
	c.prefetchBytes = 4 << 20
	const table = "big"
	const rows = 12 << 10 // 1 KiB each: 12 MiB a file
	s, last, _, err := Evolve(smallSchema, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{PropRowGroupSize: strconv.Itoa(1 << 20), PropTargetFileSize: strconv.Itoa(256 << 20)}
	if _, err := c.Create(table, s, last, "_event_time", props); err != nil {
		t.Fatal(err)
	}
	var files []NewFile
	for i := range 2 {
		files = append(files, writeLarge(t, c, table, int64(i*rows), int64((i+1)*rows), 1<<20))
	}
	if _, _, err := c.Append(Append{Dir: table, Schema: smallSchema, Files: files}); err != nil {
		t.Fatal(err)
	}
	fileBytes := uint64(files[0].Bytes)
	t.Logf("2 files of %d bytes, %d rows each", fileBytes, rows)

	var res *CompactResult
	rise := peakHeap(func() {
		res, err = c.CompactTable(context.Background(), table, Compact{})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compaction: %d files into %d, heap rose %.1f MiB", res.Rewritten, res.Written, float64(rise)/(1<<20))
	if res.Rewritten != 2 || res.Written != 1 || res.Rows != 2*rows {
		t.Fatalf("compaction: %+v", res)
	}
	if rise > fileBytes*3/4 {
		t.Errorf("compaction of %d-byte files raised the heap by %d bytes: more than 3/4 of a file", fileBytes, rise)
	}

	tb, err := c.Load(table)
	if err != nil {
		t.Fatal(err)
	}
	var seen int64
	next := int64(0)
	rise = peakHeap(func() {
		err = c.Scan(context.Background(), tb.Metadata.Current(), func(_ string, rec arrow.Record) error {
			offs := rec.Column(2).(*array.Int64)
			for i := 0; i < offs.Len(); i++ {
				if offs.Value(i) != next {
					return fmt.Errorf("offset %d after %d", offs.Value(i), next-1)
				}
				next++
			}
			seen += rec.NumRows()
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("scan of the %d-row compacted file: heap rose %.1f MiB", seen, float64(rise)/(1<<20))
	if seen != 2*rows {
		t.Fatalf("scan read %d rows, want %d", seen, 2*rows)
	}
	if rise > 2*fileBytes*3/4 {
		t.Errorf("a scan of a %d-byte file raised the heap by %d bytes: more than 3/4 of the file", 2*fileBytes, rise)
	}

	// An overwrite of one offset rewrites the compacted file (its range
	// covers more) without it, row group by row group.
	var snap *Snapshot
	rise = peakHeap(func() {
		_, snap, err = c.Rewrite(Rewrite{Dir: table, Operation: "overwrite",
			Overwrite: &OffsetFilter{Topic: table, Partition: 0, From: 100, To: 101}})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("overwrite: %v, heap rose %.1f MiB", snap.Summary, float64(rise)/(1<<20))
	if snap.Summary["added-records"] != strconv.Itoa(2*rows-1) {
		t.Errorf("overwrite kept %s rows, want %d", snap.Summary["added-records"], 2*rows-1)
	}
	if rise > 2*fileBytes*3/4 {
		t.Errorf("an overwrite of a %d-byte file raised the heap by %d bytes: more than 3/4 of the file", 2*fileBytes, rise)
	}
}
