package parquet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/tributary-io/tributary/formats/parquet/pqread"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// variant is one way of writing the round-trip file.
type variant struct {
	name string
	opts Options
}

func variants() []variant {
	var vs []variant
	for _, c := range Codecs {
		vs = append(vs, variant{string(c), Options{Codec: c}})
		vs = append(vs, variant{string(c) + "-plain", Options{Codec: c, NoDictionary: true, NoStatistics: true}})
	}
	return append(vs,
		// What Hive and Spark see: no Arrow schema to restore types from.
		variant{"no-arrow-schema", Options{NoArrowSchema: true}},
		// A row group per batch, several pages per column.
		variant{"small-groups", Options{RowGroupBytes: 1, PageBytes: 64, DictionaryPageBytes: 64}},
		variant{"levels", Options{Codec: Zstd, Level: 19}},
		variant{"dictionary-columns", Options{DictionaryColumns: []string{"s", "l_s.list.element", "m_s.key_value.key", "st.url"}}},
		// The other engine, with and without its defaults.
		variant{"pqarrow", Options{Engine: PQArrow}},
		variant{"pqarrow-plain", Options{Engine: PQArrow, Codec: Zstd, NoDictionary: true, NoStatistics: true}},
		variant{"pqarrow-small-groups", Options{Engine: PQArrow, RowGroupBytes: 1, PageBytes: 64, DictionaryPageBytes: 64}},
	)
}

const batches = 3

// writeAllTypes writes allRows batches times into dir/<name>.parquet.
func writeAllTypes(t *testing.T, dir string, v variant) (string, Stats) {
	t.Helper()
	// Batches from a checked allocator; the writer on Go's heap, since
	// pqarrow v15 does not Release every page buffer (the GC frees them).
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	path := filepath.Join(dir, v.name+".parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := NewWriter(f, allTypes, v.opts)
	if err != nil {
		t.Fatal(err)
	}
	for range batches {
		rec := buildRecord(mem, allTypes, allRows())
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	st, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := f.Stat(); fi.Size() != st.Bytes {
		t.Errorf("%s: Close reports %d bytes, the file has %d", v.name, st.Bytes, fi.Size())
	}
	if want := int64(batches * len(allRows())); st.Rows != want {
		t.Errorf("%s: Close reports %d rows, want %d", v.name, st.Rows, want)
	}
	mem.AssertSize(t, 0)
	return path, st
}

// expected is canonRow of every row written by writeAllTypes.
func expected() []map[string]any {
	var out []map[string]any
	for range batches {
		for _, r := range allRows() {
			out = append(out, canonRow(allTypes, func(name string) any { return r[name] }))
		}
	}
	return out
}

func compareRows(t *testing.T, who string, got, want []map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d", who, len(got), len(want))
	}
	bad := 0
	for i := range min(len(got), len(want)) {
		for _, f := range allTypes.Fields() {
			g, w := got[i][f.Name], want[i][f.Name]
			if !reflect.DeepEqual(g, w) {
				gj, _ := json.Marshal(g)
				wj, _ := json.Marshal(w)
				t.Errorf("%s: row %d column %s:\n got %.300s\nwant %.300s", who, i, f.Name, gj, wj)
				if bad++; bad > 20 {
					t.Fatal("too many differences")
				}
			}
		}
	}
}

// TestRoundTripXitongsys writes every type with every codec and reads the
// files back with xitongsys/parquet-go (through pqread), value by value.
func TestRoundTripXitongsys(t *testing.T) {
	dir := t.TempDir()
	want := expected()
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			path, st := writeAllTypes(t, dir, v)
			f, err := pqread.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.NumRows() != st.Rows {
				t.Errorf("footer: %d rows, wrote %d", f.NumRows(), st.Rows)
			}
			if f.RowGroups() != st.RowGroups {
				t.Errorf("footer: %d row groups, Close reported %d", f.RowGroups(), st.RowGroups)
			}
			if strings.HasSuffix(v.name, "small-groups") && f.RowGroups() != batches {
				t.Errorf("%d row groups, want one per batch (%d)", f.RowGroups(), batches)
			}
			checkLogicalTypes(t, f.Schema())
			var got []map[string]any
			for {
				rows, err := f.Read(4)
				if err != nil {
					t.Fatal(err)
				}
				if len(rows) == 0 {
					break
				}
				for _, r := range rows {
					got = append(got, canonRow(allTypes, func(name string) any { x, _ := r.Get(name); return x }))
				}
			}
			compareRows(t, "xitongsys "+v.name, got, nullListsEmpty(want))
		})
	}
}

// checkLogicalTypes checks the annotations Hive and Spark rely on.
func checkLogicalTypes(t *testing.T, root *pqread.Node) {
	t.Helper()
	want := map[string]string{
		"s":     "OPTIONAL BYTE_ARRAY STRING",
		"s_req": "REQUIRED BYTE_ARRAY STRING",
		"i32":   "OPTIONAL INT32 INT(32)",
		"i64":   "OPTIONAL INT64 INT(64)",
		"f32":   "OPTIONAL FLOAT ",
		"f64":   "OPTIONAL DOUBLE ",
		"b":     "OPTIONAL BOOLEAN ",
		"ts_ms": "OPTIONAL INT64 TIMESTAMP(MILLIS,UTC)",
		"ts_us": "OPTIONAL INT64 TIMESTAMP(MICROS,UTC)",
		"d":     "OPTIONAL INT32 DATE",
		"bin":   "OPTIONAL BYTE_ARRAY ",
		"l_s":   "OPTIONAL  LIST",
		"m_s":   "OPTIONAL  MAP",
		"st":    "OPTIONAL  ",
	}
	for _, c := range root.Children {
		w, ok := want[c.Name]
		if !ok {
			continue
		}
		if got := c.Repetition + " " + c.Physical + " " + c.Logical; got != w {
			t.Errorf("column %s: %q, want %q", c.Name, got, w)
		}
	}
}

// pyarrowPython finds a python with pyarrow (testbroker.Python).
func pyarrowPython(t *testing.T) string { return testbroker.Python(t, "pyarrow") }

// pyFile is one file as testdata/pyarrow_read.py prints it.
type pyFile struct {
	File      string            `json:"file"`
	Rows      int64             `json:"rows"`
	RowGroups int               `json:"row_groups"`
	Types     map[string]string `json:"types"`
	Parquet   string            `json:"parquet"`
	rows      []map[string]any
}

// readPyarrow reads files with testdata/pyarrow_read.py.
func readPyarrow(t *testing.T, py string, paths ...string) []*pyFile {
	t.Helper()
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", "pyarrow_read.py")}, paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyarrow_read.py: %v\n%s", err, stderr.Bytes())
	}
	var files []*pyFile
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatalf("pyarrow_read.py: %v: %.200s", err, sc.Bytes())
		}
		if _, ok := m["file"]; ok {
			f := new(pyFile)
			if err := json.Unmarshal(sc.Bytes(), f); err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
			continue
		}
		if len(files) == 0 {
			t.Fatal("pyarrow_read.py: a row before any file")
		}
		cur := files[len(files)-1]
		cur.rows = append(cur.rows, canonRow(allTypes, func(name string) any { return m[name] }))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return files
}

// TestRoundTripPyarrow reads the same files with pyarrow (Arrow C++), from
// the venv of scripts/python-deps.sh, and checks the Arrow types it
// restores as well as every value.
func TestRoundTripPyarrow(t *testing.T) {
	py := pyarrowPython(t)
	dir := t.TempDir()
	var paths []string
	for _, v := range variants() {
		p, _ := writeAllTypes(t, dir, v)
		paths = append(paths, p)
	}
	want := expected()
	wantTypes := map[string]string{
		"s": "string", "s_req": "string", "i32": "int32", "i64": "int64", "f32": "float", "f64": "double",
		"b": "bool", "ts_ms": "timestamp[ms, tz=UTC]", "ts_us": "timestamp[us, tz=UTC]", "d": "date32[day]",
		"bin": "binary", "l_s": "list<element: string>", "l_i64": "list<element: int64>",
		"m_s": "map<string, string>", "m_f64": "map<string, double>",
	}
	files := readPyarrow(t, py, paths...)
	if len(files) != len(paths) {
		t.Fatalf("pyarrow read %d files, want %d", len(files), len(paths))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f.File), ".parquet")
		for col, w := range wantTypes {
			got := f.Types[col]
			// pyarrow names a map's entries after the column: "map<string, string ('m_s')>".
			if i := strings.Index(got, " ('"); i > 0 && strings.HasSuffix(got, "')>") {
				got = got[:i] + ">"
			}
			if got != w && !(strings.HasPrefix(w, "list<") && strings.Replace(got, "item", "element", 1) == w) {
				t.Errorf("%s: pyarrow reads %s as %s, want %s", name, col, got, w)
			}
		}
		if !strings.Contains(f.Parquet, "ts_ms (Timestamp(isAdjustedToUTC=true, timeUnit=milliseconds") ||
			!strings.Contains(f.Parquet, "ts_us (Timestamp(isAdjustedToUTC=true, timeUnit=microseconds") ||
			!strings.Contains(f.Parquet, "s (String)") {
			t.Errorf("%s: Parquet logical types as pyarrow prints them:\n%s", name, f.Parquet)
		}
		compareRows(t, "pyarrow "+name, f.rows, want)
	}
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		n := w.n
		w.n = 0
		return n, errDiskFull
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriterErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	rec := buildRecord(mem, allTypes, allRows())
	defer rec.Release()
	_ = mem // the writers use Go's allocator: after a failed write pqarrow may not free its buffers

	t.Run("io error", func(t *testing.T) {
		w, err := NewWriter(&failingWriter{n: 100}, allTypes, Options{RowGroupBytes: 1})
		if err != nil {
			t.Fatal(err)
		}
		werr := w.Write(rec)
		_, cerr := w.Close()
		if !errors.Is(werr, errDiskFull) && !errors.Is(cerr, errDiskFull) {
			t.Errorf("Write: %v, Close: %v; want the disk-full error from one of them", werr, cerr)
		}
	})
	t.Run("schema mismatch", func(t *testing.T) {
		other := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
		w, err := NewWriter(&bytes.Buffer{}, other, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err == nil {
			t.Error("a batch of another schema was accepted")
		}
	})
	t.Run("closed", func(t *testing.T) {
		var buf bytes.Buffer
		w, _ := NewWriter(&buf, allTypes, Options{})
		st1, err1 := w.Close()
		st2, err2 := w.Close()
		if err1 != nil || err2 != nil || st1 != st2 || st1.Rows != 0 || st1.Bytes != int64(buf.Len()) {
			t.Errorf("Close twice: %v %v, %v %v (%d bytes in the buffer)", st1, err1, st2, err2, buf.Len())
		}
		if err := w.Write(rec); !errors.Is(err, ErrClosed) {
			t.Errorf("Write after Close: %v", err)
		}
	})
	t.Run("bad options", func(t *testing.T) {
		for _, o := range []Options{{Codec: "lz5"}, {Codec: Gzip, Level: 10}, {RowGroupBytes: -1}} {
			if _, err := NewWriter(&bytes.Buffer{}, allTypes, o); err == nil {
				t.Errorf("%+v accepted", o)
			}
		}
	})
}

// nullListsEmpty returns rows with null lists and maps made empty, as
// xitongsys/parquet-go reads them (see pqread).
func nullListsEmpty(rows []map[string]any) []map[string]any {
	var fix func(dt arrow.DataType, v any) any
	fix = func(dt arrow.DataType, v any) any {
		switch dt := dt.(type) {
		case *arrow.MapType:
			if v == nil {
				return [][2]any{}
			}
		case *arrow.ListType:
			if v == nil {
				return []any{}
			}
		case *arrow.StructType:
			if m, ok := v.(map[string]any); ok {
				out := map[string]any{}
				for _, f := range dt.Fields() {
					out[f.Name] = fix(f.Type, m[f.Name])
				}
				return out
			}
		}
		return v
	}
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		out[i] = map[string]any{}
		for _, f := range allTypes.Fields() {
			out[i][f.Name] = fix(f.Type, r[f.Name])
		}
	}
	return out
}
