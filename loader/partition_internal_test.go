package loader

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/compute"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// take's own gather of strings and structs gives what Arrow's Take does:
// values, nulls at both levels, on a sliced record too.
func TestTakeAsArrow(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "st", Type: arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "in", Type: arrow.StructOf(arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
			arrow.Field{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true}), Nullable: true},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(`[
{"s":"skip","n":0,"st":null},
{"s":"x","n":1,"st":{"a":"p","in":{"b":"q"},"t":"2024-01-01T00:00:00Z"}},
{"s":null,"n":null,"st":null},
{"s":"yy","n":3,"st":{"a":null,"in":null,"t":null}},
{"s":"","n":4,"st":{"a":"long value","in":{"b":null},"t":"2024-01-01T00:00:01Z"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	sliced := rec.NewSlice(1, 5)
	defer sliced.Release()
	rows := []int32{3, 0, 2, 1, 0, 3}
	got, err := take(sliced, rows)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	b := array.NewInt32Builder(memory.DefaultAllocator)
	b.AppendValues(rows, nil)
	idx := b.NewArray()
	d, err := compute.Take(context.Background(), *compute.DefaultTakeOptions(), compute.NewDatum(sliced), compute.NewDatum(idx))
	if err != nil {
		t.Fatal(err)
	}
	want := d.(*compute.RecordDatum).Value
	gj, _ := got.MarshalJSON()
	wj, _ := want.MarshalJSON()
	if string(gj) != string(wj) || !got.Schema().Equal(want.Schema()) {
		t.Fatalf("take:\n%s\nArrow's Take:\n%s", gj, wj)
	}
}
