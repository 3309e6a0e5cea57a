package decode

import (
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/memory"
)

func TestRaw(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d := NewRaw(mem)
	defer d.Release()
	if d.Flush() != nil {
		t.Fatal("empty Flush returned a batch")
	}
	errs := d.Decode([]Record{
		{Topic: "events", Partition: 3, Offset: 9223372036854775807, Timestamp: -1, Key: []byte("k"), Value: []byte{0, 255},
			Headers: []Header{{Key: "a", Value: []byte("1")}, {Key: "a", Value: nil}, {Key: "日本", Value: []byte{}}}},
		{Topic: "t\xff", Partition: 0, Offset: 0, Timestamp: 1714564800123, Key: nil, Value: nil},
		{Topic: "t", Key: []byte{}, Value: []byte{}, Headers: []Header{}},
	})
	if errs != nil {
		t.Fatal(errs)
	}
	rec := d.Flush()
	defer rec.Release()
	if err := validateRecord(rec); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"headers":[{"key":"a","value":"MQ=="},{"key":"a","value":null},{"key":"日本","value":""}],"key":"aw==","offset":9223372036854775807,"partition":3,"timestamp":"1969-12-31 23:59:59.999","topic":"events","value":"AP8="}`,
		`{"headers":[],"key":null,"offset":0,"partition":0,"timestamp":"2024-05-01 12:00:00.123","topic":"t` + "\uFFFD" + `","value":null}`,
		`{"headers":[],"key":"","offset":0,"partition":0,"timestamp":"1970-01-01 00:00:00","topic":"t","value":""}`,
	}
	if got := rowsJSON(t, rec); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !rec.Schema().Equal(RawSchema) {
		t.Error("schema differs from RawSchema")
	}
}
