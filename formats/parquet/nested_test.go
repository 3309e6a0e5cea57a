package parquet

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/tributary-io/tributary/formats/parquet/pqread"
)

// nested has the nestings allTypes lacks: structs in lists and maps, lists
// in structs in lists, with nulls and empties at every level.
var nested = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "items", Nullable: true, Type: arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "sku", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "qty", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "codes", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	))},
	{Name: "byKey", Nullable: true, Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	))},
	{Name: "grid", Nullable: true, Type: arrow.ListOf(arrow.ListOf(arrow.BinaryTypes.String))},
}, nil)

func nestedRows() []map[string]any {
	item := func(sku any, qty int32, codes any) map[string]any {
		return map[string]any{"sku": sku, "qty": qty, "codes": codes}
	}
	return []map[string]any{
		{"id": int64(1), "items": []any{item("a", 1, []any{int64(1), int64(2)}), item(nil, 2, nil), nil, item("", 0, []any{})},
			"byKey": []kv{{"k", map[string]any{"x": int32(5)}}, {"n", nil}, {"e", map[string]any{}}},
			"grid":  []any{[]any{"p", nil}, nil, []any{}, []any{"q"}}},
		{"id": int64(2)},
		{"id": int64(3), "items": []any{}, "byKey": []kv{}, "grid": []any{}},
		{"id": int64(4), "items": []any{nil}, "grid": []any{nil, nil}},
	}
}

// TestNestedEngines writes the nested rows with both engines and reads
// them back with xitongsys: both files read the same, and as written.
func TestNestedEngines(t *testing.T) {
	dir := t.TempDir()
	var got [][]string
	for _, e := range Engines {
		path := filepath.Join(dir, string(e)+".parquet")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w, err := NewWriter(f, nested, Options{Engine: e, PageBytes: 64})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			rec := buildRecord(memory.DefaultAllocator, nested, nestedRows())
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		r, err := pqread.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := r.Read(100)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		var js []string
		for _, row := range rows {
			b, err := json.Marshal(row)
			if err != nil {
				t.Fatal(err)
			}
			js = append(js, string(b))
		}
		got = append(got, js)
	}
	if len(got[0]) != 8 {
		t.Fatalf("%d rows: %v", len(got[0]), got[0])
	}
	for i := range got[0] {
		if got[0][i] != got[1][i] {
			t.Errorf("row %d:\n%s: %s\n%s: %s", i, Engines[0], got[0][i], Engines[1], got[1][i])
		}
	}

	// pyarrow tells a null list from an empty one, which xitongsys does
	// not: the rows it reads must be the same from both files too.
	py := pyarrowPython(t)
	var lines [][]string
	for _, e := range Engines {
		out, err := exec.Command(py, filepath.Join("testdata", "pyarrow_read.py"), filepath.Join(dir, string(e)+".parquet")).Output()
		if err != nil {
			t.Fatalf("pyarrow_read.py: %v", err)
		}
		lines = append(lines, strings.Split(strings.TrimSpace(string(out)), "\n")[1:])
	}
	want := `{"id": 1, "items": [{"sku": "a", "qty": 1, "codes": [1, 2]}, {"sku": null, "qty": 2, "codes": null}, null, {"sku": "", "qty": 0, "codes": []}], "byKey": [["k", {"x": 5}], ["n", null], ["e", {"x": null}]], "grid": [["p", null], null, [], ["q"]]}`
	if len(lines[0]) != 8 || lines[0][0] != want {
		t.Errorf("pyarrow reads %s's first row as\n%s\nwant\n%s", Engines[0], lines[0][0], want)
	}
	if !slices.Equal(lines[0], lines[1]) {
		t.Errorf("pyarrow reads the engines' files differently:\n%s\n%s", strings.Join(lines[0], "\n"), strings.Join(lines[1], "\n"))
	}
}
