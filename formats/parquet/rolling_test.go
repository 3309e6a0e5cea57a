package parquet

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/tributary-io/tributary/formats/parquet/pqread"
)

func TestRollingWriter(t *testing.T) {
	for _, e := range Engines {
		t.Run(string(e), func(t *testing.T) { testRollingWriter(t, e) })
	}
}

func testRollingWriter(t *testing.T, e Engine) {
	dir := t.TempDir()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	const target = 256 << 10
	var rolled []FileStats
	open := func(n int) (io.WriteCloser, error) {
		return os.Create(filepath.Join(dir, fmt.Sprintf("part-%05d.parquet", n)))
	}
	r, err := NewRollingWriter(allTypes, Options{Engine: e, Codec: None, NoDictionary: true, PageBytes: 4 << 10}, target, open, func(fs FileStats) { rolled = append(rolled, fs) })
	if err != nil {
		t.Fatal(err)
	}
	const n = 60
	for range n {
		rec := buildRecord(mem, allTypes, allRows())
		if err := r.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	files, err := r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 || len(rolled) != len(files) {
		t.Fatalf("%d files, %d roll callbacks; want several of each, equal", len(files), len(rolled))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(files) {
		t.Errorf("%d files on disk, %d reported: an empty file was left", len(entries), len(files))
	}
	var rows int64
	for i, fs := range files {
		path := filepath.Join(dir, fmt.Sprintf("part-%05d.parquet", i))
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != fs.Bytes {
			t.Errorf("file %d: %d bytes on disk, %d reported", i, fi.Size(), fs.Bytes)
		}
		// Every file but the last ends within one batch (~68 KiB
		// uncompressed) and a footer of the target. The footer is not
		// small here: the column statistics hold the 30 KB strings of
		// allRows as minimum and maximum.
		footer := footerLen(t, path)
		if i < len(files)-1 && (fs.Bytes < target || fs.Bytes-footer > target+72<<10) {
			t.Errorf("file %d: %d bytes (footer %d), target %d", i, fs.Bytes, footer, target)
		}
		f, err := pqread.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if f.NumRows() != fs.Rows {
			t.Errorf("file %d: footer says %d rows, reported %d", i, f.NumRows(), fs.Rows)
		}
		got, err := f.Read(1)
		f.Close()
		if err != nil || len(got) != 1 {
			t.Fatalf("file %d: first row: %v %v", i, got, err)
		}
		if s, _ := got[0].Get("s_req"); s != "a" {
			t.Errorf("file %d starts mid-batch: s_req %.20q", i, s)
		}
		rows += fs.Rows
	}
	if rows != n*int64(len(allRows())) {
		t.Errorf("%d rows in all files, wrote %d", rows, n*len(allRows()))
	}
	if _, err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestRollingWriterNoRows(t *testing.T) {
	opened := 0
	r, _ := NewRollingWriter(allTypes, Options{}, 1<<20, func(int) (io.WriteCloser, error) { opened++; return nil, nil }, nil)
	files, err := r.Close()
	if err != nil || len(files) != 0 || opened != 0 {
		t.Errorf("no rows: %d files, %d opened, %v", len(files), opened, err)
	}
}

// footerLen is the size of the footer of the Parquet file at path: its
// metadata, their length and the magic bytes.
func footerLen(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 12 || string(b[len(b)-4:]) != "PAR1" {
		t.Fatalf("%s: not a Parquet file: %v", path, err)
	}
	return int64(binary.LittleEndian.Uint32(b[len(b)-8:])) + 8
}
