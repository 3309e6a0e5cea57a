package loader

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// eventTimes returns each row's event time in Unix ms: the time field when
// set and not null, else the record's Kafka timestamp (fallback[i]).
func eventTimes(rec arrow.Record, field string, fallback []int64) ([]int64, error) {
	out := append([]int64(nil), fallback...)
	if field == "" {
		return out, nil
	}
	col, parents, err := column(rec, field)
	if err != nil {
		return nil, err
	}
	valid := func(i int) bool {
		for _, p := range parents {
			if p.IsNull(i) {
				return false
			}
		}
		return col.IsValid(i)
	}
	switch a := col.(type) {
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		for i := range out {
			if valid(i) {
				out[i] = toMillis(int64(a.Value(i)), unit)
			}
		}
	case *array.Int64:
		for i := range out {
			if valid(i) {
				out[i] = a.Value(i)
			}
		}
	case *array.String:
		for i := range out {
			if valid(i) {
				if t, err := time.Parse(time.RFC3339Nano, a.Value(i)); err == nil {
					out[i] = t.UnixMilli()
				}
			}
		}
	default:
		return nil, fmt.Errorf("time field %q is %s; want a timestamp, an int64 of Unix milliseconds or an RFC 3339 string", field, col.DataType())
	}
	return out, nil
}

func toMillis(v int64, unit arrow.TimeUnit) int64 {
	switch unit {
	case arrow.Second:
		return v * 1000
	case arrow.Microsecond:
		return v / 1000
	case arrow.Nanosecond:
		return v / 1_000_000
	}
	return v
}

// column finds a dotted path through struct columns. It also returns the
// structs on the way: a row is null where any of them is, whatever the
// leaf holds there.
func column(rec arrow.Record, path string) (arrow.Array, []arrow.Array, error) {
	parts := strings.Split(path, ".")
	idx := rec.Schema().FieldIndices(parts[0])
	if len(idx) == 0 {
		return nil, nil, fmt.Errorf("time field %q: no column %q", path, parts[0])
	}
	col := rec.Column(idx[0])
	var parents []arrow.Array
	for _, p := range parts[1:] {
		st, ok := col.(*array.Struct)
		if !ok {
			return nil, nil, fmt.Errorf("time field %q: %q is not a struct", path, p)
		}
		i, ok := st.DataType().(*arrow.StructType).FieldIdx(p)
		if !ok {
			return nil, nil, fmt.Errorf("time field %q: no field %q", path, p)
		}
		parents = append(parents, col)
		col = st.Field(i)
	}
	return col, parents, nil
}

// hourOf is the start of the hour of t in loc.
func hourOf(ms int64, loc *time.Location) time.Time {
	t := time.UnixMilli(ms).In(loc)
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, loc)
}
