package iceberg

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/tributary-io/tributary/formats/parquet"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// idSchema is a loader-like schema with nested fields: user is renamed
// to account (by alias) half way.
func idSchema(user string, aliases ...string) *arrow.Schema {
	var md arrow.Metadata
	if len(aliases) > 0 {
		md = arrow.NewMetadata([]string{AliasesKey}, []string{aliases[0]})
	}
	return arrow.NewSchema([]arrow.Field{
		{Name: user, Type: arrow.BinaryTypes.String, Nullable: true, Metadata: md},
		{Name: "ctx", Nullable: true, Type: arrow.StructOf(
			arrow.Field{Name: "page", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
			arrow.Field{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
		)},
		{Name: "_partition", Type: arrow.PrimitiveTypes.Int32},
		{Name: "_offset", Type: arrow.PrimitiveTypes.Int64},
		{Name: "_event_time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
}

// writeIDs writes offsets [from, to) of partition 0 with schema s (its
// field ids, if any, in its metadata) through engine.
func writeIDs(t *testing.T, c *Catalog, table string, s *arrow.Schema, from, to int64, engine parquet.Engine) NewFile {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for o := from; o < to; o++ {
		b.Field(0).(*array.StringBuilder).Append("user-" + strconv.FormatInt(o, 10))
		sb := b.Field(1).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append("page-" + strconv.FormatInt(o, 10))
		lb := sb.FieldBuilder(1).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).Append("t")
		mb := sb.FieldBuilder(2).(*array.MapBuilder)
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append("k")
		mb.ItemBuilder().(*array.Int64Builder).Append(o)
		b.Field(2).(*array.Int32Builder).Append(0)
		b.Field(3).(*array.Int64Builder).Append(o)
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(baseHour)*3600e6 + o))
	}
	rec := b.NewRecord()
	defer rec.Release()
	tm := time.Unix(int64(baseHour)*3600, 0).UTC()
	name := fmt.Sprintf("%s/dt=%s/hr=%s/%s+0+%d+%d.parquet", table, tm.Format("2006-01-02"), tm.Format("15"), table, from, to-1)
	w, err := c.FS.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := parquet.NewWriter(w, s, parquet.Options{Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	if err := pw.Write(rec); err != nil {
		t.Fatal(err)
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

// plannedIDs is what the loader does at plan time (loader/fieldids.go):
// the table's schema evolved by s, its ids stamped on s.
func plannedIDs(t *testing.T, c *Catalog, table string, s *arrow.Schema) *arrow.Schema {
	t.Helper()
	var prev *Schema
	last := 0
	if tb, err := c.Load(table); err == nil {
		prev, last = tb.Metadata.CurrentSchema(), tb.Metadata.LastColumnID
	}
	next, _, _, err := Evolve(s, prev, last)
	if err != nil {
		t.Fatal(err)
	}
	return WithFieldIDs(s, next)
}

// Issue 24: the data files carry the table's field ids, nested fields
// included, when written and after a compaction, so that
// IcebergGenerics (which resolves columns by id and never consults the
// name mapping) reads them with the mapping removed from the table; and a
// field renamed by alias keeps its id, so the files written before the
// rename read under the new name. pyarrow shows the ids in the files'
// schemas.
func TestFieldIDs(t *testing.T) {
	t.Parallel()
	c, root := localCatalog(t)
	const table = "ids"
	appendFiles := func(s *arrow.Schema, files ...NewFile) {
		t.Helper()
		if _, _, err := c.Append(Append{Dir: table, Schema: s, TimeColumn: "_event_time", Files: files}); err != nil {
			t.Fatal(err)
		}
	}
	v1 := idSchema("user")
	s1 := plannedIDs(t, c, table, v1)
	f1 := writeIDs(t, c, table, s1, 5, 10, parquet.ParquetGo)
	f2 := writeIDs(t, c, table, s1, 10, 15, parquet.ParquetGo)
	appendFiles(s1, f1, f2)

	// The rename: account, formerly user.
	v2 := idSchema("account", "user")
	s2 := plannedIDs(t, c, table, v2)
	f3 := writeIDs(t, c, table, s2, 15, 20, parquet.ParquetGo)
	appendFiles(s2, f3)
	tb, err := c.Load(table)
	if err != nil {
		t.Fatal(err)
	}
	cur := tb.Metadata.CurrentSchema()
	acc, ok := cur.Field("account")
	if !ok || acc.ID != 1 {
		t.Fatalf("after the rename the schema is %+v: want account with user's id 1", cur.Fields)
	}
	if _, ok := cur.Field("user"); ok {
		t.Fatalf("the renamed column user is still in the schema: %+v", cur.Fields)
	}
	var mapping []mapped
	json.Unmarshal([]byte(tb.Metadata.Properties["schema.name-mapping.default"]), &mapping)
	if len(mapping) == 0 || mapping[0].ID != 1 || !slices.Contains(mapping[0].Names, "account") || !slices.Contains(mapping[0].Names, "user") {
		t.Fatalf("name mapping %s: want id 1 under account and user", tb.Metadata.Properties["schema.name-mapping.default"])
	}

	// pyarrow: the field_id of every Parquet schema element, nested
	// ones too (the list and map's repeated groups have none, as Iceberg
	// writes them), and in the Arrow schema's field metadata.
	py := testbroker.Python(t, "pyarrow")
	script := `
import json, re, sys
import pyarrow.parquet as pq
out = {}
for p in sys.argv[1:]:
    elems = re.findall(r"field_id=(-?\d+) (\w+)", str(pq.ParquetFile(p).schema))
    arrow = {f.name: int((f.metadata or {}).get(b"PARQUET:field_id", b"-1")) for f in pq.read_schema(p)}
    out[p] = {"elements": [n + "=" + i for i, n in elems], "arrow": arrow}
print(json.dumps(out))
`
	loc := func(f NewFile) string { return filepath.Join(root, f.Path) }
	out, err := exec.Command(py, "-c", script, loc(f1), loc(f2), loc(f3)).Output()
	if err != nil {
		t.Fatalf("pyarrow: %v %s", err, stderrOf(err))
	}
	var got map[string]struct {
		Elements []string       `json:"elements"`
		Arrow    map[string]int `json:"arrow"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, fu := range []struct {
		f    NewFile
		user string
	}{{f1, "user"}, {f2, "user"}, {f3, "account"}} {
		f, user := fu.f, fu.user
		want := fmt.Sprintf("[schema=-1 %s=1 ctx=2 page=3 tags=4 list=-1 element=5 attrs=6 key_value=-1 key=7 value=8 _partition=9 _offset=10 _event_time=11]", user)
		if g := fmt.Sprint(got[loc(f)].Elements); g != want {
			t.Errorf("%s: Parquet schema elements and field ids %s, want %s", f.Path, g, want)
		}
		if a := got[loc(f)].Arrow; a[user] != 1 || a["ctx"] != 2 || a["_event_time"] != 11 {
			t.Errorf("%s: pyarrow's schema has field ids %v", f.Path, a)
		}
	}

	// The name mapping removed: readers have only the files' ids.
	mapping0 := tb.Metadata.Properties["schema.name-mapping.default"]
	setMapping := func(v string) {
		t.Helper()
		tb, err := c.Load(table)
		if err != nil {
			t.Fatal(err)
		}
		m := *tb.Metadata
		m.Properties = copyMap(m.Properties)
		delete(m.Properties, "schema.name-mapping.default")
		if v != "" {
			m.Properties["schema.name-mapping.default"] = v
		}
		if _, err := c.write(table, tb.Version+1, &m, tb); err != nil {
			t.Fatal(err)
		}
	}
	type javaRows struct {
		javaView
		Columns [][]*string `json:"columns"`
	}
	readByID := func(rows int) javaRows {
		t.Helper()
		out := testbroker.ReadIcebergJava(t, "file://"+filepath.Join(root, table), "0",
			"READ_ICEBERG_BY_ID=1", "READ_ICEBERG_COLUMNS=account,ctx.page,_offset")
		var v javaRows
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		sort.Slice(v.Columns, func(i, j int) bool {
			a, _ := strconv.Atoi(deref(v.Columns[i][2]))
			b, _ := strconv.Atoi(deref(v.Columns[j][2]))
			return a < b
		})
		if len(v.Columns) != rows || len(v.Current) != rows {
			t.Fatalf("IcebergGenerics read %d rows and %d offsets, want %d: %s", len(v.Columns), len(v.Current), rows, out)
		}
		return v
	}
	check := func(v javaRows, from int) {
		t.Helper()
		for i, row := range v.Columns {
			i += from
			want := []string{"user-" + strconv.Itoa(i), "page-" + strconv.Itoa(i), strconv.Itoa(i)}
			for j := range want {
				if deref(row[j]) != want[j] {
					t.Fatalf("row %d: IcebergGenerics read account, ctx.page, _offset = %s, %s, %s; want %v (a file without the ids, or a rename that lost the id)",
						i, deref(row[0]), deref(row[1]), deref(row[2]), want)
				}
			}
		}
	}
	setMapping("")
	check(readByID(15), 5)

	// A file of a loader before the ids (IcebergGenerics fails on it
	// without a name mapping): a compaction rewrites it with them, from
	// the name mapping, where it is user, and keeps the others'.
	setMapping(mapping0)
	appendFiles(s2, writeIDs(t, c, table, v1, 0, 5, parquet.ParquetGo))
	// `lake query` (ScanNamed) shows the old files' column under its new
	// name too: by id, or by the name mapping for the file without ids.
	tb, err = c.Load(table)
	if err != nil {
		t.Fatal(err)
	}
	scanned := 0
	err = c.ScanNamed(context.Background(), tb.Metadata, tb.Metadata.Current(), func(file string, rec arrow.Record) error {
		idx := rec.Schema().FieldIndices("account")
		if len(idx) != 1 || len(rec.Schema().FieldIndices("user")) != 0 {
			return fmt.Errorf("%s: columns %v, want account and no user", file, rec.Schema())
		}
		acc, offs := rec.Column(idx[0]).(*array.String), rec.Column(rec.Schema().FieldIndices("_offset")[0]).(*array.Int64)
		for i := 0; i < acc.Len(); i++ {
			if acc.Value(i) != "user-"+strconv.FormatInt(offs.Value(i), 10) {
				return fmt.Errorf("%s: account %q at offset %d", file, acc.Value(i), offs.Value(i))
			}
		}
		scanned += acc.Len()
		return nil
	})
	if err != nil || scanned != 20 {
		t.Fatalf("ScanNamed: %d rows, %v", scanned, err)
	}
	if _, err := c.CompactTable(context.Background(), table, Compact{}); err != nil {
		t.Fatal(err)
	}
	setMapping("")
	check(readByID(20), 0)
}
func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
