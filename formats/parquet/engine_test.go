package parquet

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	pgo "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// dictColumns opens a file with parquet-go and returns the columns of its
// first row group that have a dictionary page.
func dictColumns(t *testing.T, b []byte) []string {
	t.Helper()
	f, err := pgo.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range f.Metadata().RowGroups[0].Columns {
		if slices.Contains(c.MetaData.Encoding, format.RLEDictionary) || slices.Contains(c.MetaData.Encoding, format.PlainDictionary) {
			out = append(out, strings.Join(c.MetaData.PathInSchema, "."))
		}
	}
	return out
}

func TestDictionaryChoice(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "kind", Type: arrow.BinaryTypes.String},
		{Name: "never", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "small", Type: arrow.PrimitiveTypes.Int32},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}})},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range 1000 {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("id-%d", i))
		b.Field(1).(*array.StringBuilder).Append([]string{"a", "b", "c"}[i%3])
		b.Field(2).AppendNull()
		b.Field(3).(*array.Int64Builder).Append(int64(i) * 7919)
		b.Field(4).(*array.Int32Builder).Append(int32(i % 10))
		b.Field(5).(*array.BooleanBuilder).Append(i%2 == 0)
		lb := b.Field(6).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).Append("t")
		sb := b.Field(7).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1700000000000 + i))
	}
	rec := b.NewRecord()
	defer rec.Release()
	want := []string{"kind", "small", "tags.list.element"}
	if got := chooseDictionary(rec); !slices.Equal(got, want) {
		t.Errorf("chooseDictionary: %v, want %v", got, want)
	}
	for _, e := range Engines {
		for _, o := range []struct {
			opts Options
			want []string
		}{
			{Options{Engine: e}, want},
			{Options{Engine: e, NoDictionary: true}, nil},
			{Options{Engine: e, DictionaryColumns: []string{"id", "st.ts"}}, []string{"id", "st.ts"}},
		} {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, schema, o.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got := dictColumns(t, buf.Bytes()); !slices.Equal(got, o.want) {
				t.Errorf("%s: dictionary columns %v, want %v", o.opts, got, o.want)
			}
		}
	}
}

func TestMaxRowGroupRows(t *testing.T) {
	for _, e := range Engines {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, allTypes, Options{Engine: e, MaxRowGroupRows: 4})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 { // 15 rows: 4, 4, 4, 3
			rec := buildRecord(memory.DefaultAllocator, allTypes, allRows())
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		st, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		f, err := pgo.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		var rows []int64
		for _, rg := range f.Metadata().RowGroups {
			rows = append(rows, rg.NumRows)
		}
		if !slices.Equal(rows, []int64{4, 4, 4, 3}) || st.RowGroups != 4 || st.Rows != 15 {
			t.Errorf("%s: row groups of %v rows; Close reports %+v", e, rows, st)
		}
	}
}

func TestNullInRequiredColumn(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewStringBuilder(memory.DefaultAllocator)
	b.Append("a")
	b.AppendNull()
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecord(schema, []arrow.Array{col}, 2)
	defer rec.Release()
	w, err := NewWriter(&bytes.Buffer{}, schema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err == nil || !strings.Contains(err.Error(), "not nullable") {
		t.Errorf("a null in a required column: %v", err)
	}
}

func TestEmptyFile(t *testing.T) {
	for _, e := range Engines {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, allTypes, Options{Engine: e})
		if err != nil {
			t.Fatal(err)
		}
		st, err := w.Close()
		if err != nil || st.Rows != 0 || st.Bytes != int64(buf.Len()) {
			t.Fatalf("%s: %+v %v", e, st, err)
		}
		f, err := pgo.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		if n := len(f.Schema().Columns()); n != 22 {
			t.Errorf("%s: %d columns", e, n)
		}
	}
}
