package parquet

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/tributary-io/tributary/formats/parquet/pqread"
)

// canon turns a value of Arrow type dt, as the test rows, pqread or the
// pyarrow script's JSON give it, into one comparable form: numbers as
// decimal strings (floats prefixed "f:"), timestamps in microseconds,
// bytes in base64, maps as key-sorted [key, value] pairs (xitongsys reads
// maps into Go maps, losing their order), structs as maps.
func canon(dt arrow.DataType, v any) any {
	if v == nil {
		return nil
	}
	switch dt := dt.(type) {
	case *arrow.StringType, *arrow.BooleanType:
		return v
	case *arrow.Int32Type, *arrow.Int64Type, *arrow.Date32Type:
		switch v := v.(type) {
		case int32:
			return strconv.FormatInt(int64(v), 10)
		case int64:
			return strconv.FormatInt(v, 10)
		case pqread.Date:
			return strconv.FormatInt(int64(v), 10)
		case json.Number:
			return v.String()
		}
	case *arrow.Float32Type, *arrow.Float64Type:
		var f float64
		switch v := v.(type) {
		case float32:
			f = float64(v)
		case float64:
			f = v
		case json.Number:
			var err error
			if f, err = strconv.ParseFloat(v.String(), 64); err != nil {
				return fmt.Sprintf("bad float %q", v)
			}
		case string:
			return "f:" + v
		}
		switch {
		case math.IsNaN(f):
			return "f:NaN"
		case math.IsInf(f, 1):
			return "f:Infinity"
		case math.IsInf(f, -1):
			return "f:-Infinity"
		}
		return "f:" + strconv.FormatFloat(f, 'g', -1, 64)
	case *arrow.TimestampType:
		switch v := v.(type) {
		case int64:
			if dt.Unit == arrow.Millisecond {
				return strconv.FormatInt(v*1000, 10)
			}
			return strconv.FormatInt(v, 10)
		case pqread.Timestamp:
			return strconv.FormatInt(v.UnixMicro(), 10)
		case json.Number:
			return v.String()
		}
	case *arrow.BinaryType:
		switch v := v.(type) {
		case []byte:
			return base64.StdEncoding.EncodeToString(v)
		case string:
			return v
		}
	case *arrow.MapType:
		var pairs [][2]any
		switch v := v.(type) {
		case []kv:
			for _, e := range v {
				pairs = append(pairs, [2]any{e.K, canon(dt.ItemType(), e.V)})
			}
		case pqread.Map:
			for _, e := range v {
				pairs = append(pairs, [2]any{e.Name, canon(dt.ItemType(), e.Value)})
			}
		case []any:
			for _, e := range v {
				p := e.([]any)
				pairs = append(pairs, [2]any{p[0], canon(dt.ItemType(), p[1])})
			}
		}
		sort.SliceStable(pairs, func(i, j int) bool { return pairs[i][0].(string) < pairs[j][0].(string) })
		if pairs == nil {
			pairs = [][2]any{}
		}
		return pairs
	case *arrow.ListType:
		l := v.([]any)
		out := make([]any, len(l))
		for i, e := range l {
			out[i] = canon(dt.Elem(), e)
		}
		return out
	case *arrow.StructType:
		out := map[string]any{}
		get := func(name string) any { return nil }
		switch v := v.(type) {
		case map[string]any:
			get = func(name string) any { return v[name] }
		case pqread.Object:
			get = func(name string) any { x, _ := v.Get(name); return x }
		}
		for _, f := range dt.Fields() {
			out[f.Name] = canon(f.Type, get(f.Name))
		}
		return out
	}
	return fmt.Sprintf("<no canonical form of %T for %s>", v, dt)
}

// canonRow is canon of each column of row, by schema.
func canonRow(schema *arrow.Schema, get func(name string) any) map[string]any {
	out := map[string]any{}
	for _, f := range schema.Fields() {
		out[f.Name] = canon(f.Type, get(f.Name))
	}
	return out
}
