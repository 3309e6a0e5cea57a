package parquet

import (
	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// Which columns get a dictionary, when Options name none: a dictionary
// pays for itself on columns whose values repeat (event names, locales,
// user agents) and is pure cost on the others (ids, URLs, timestamps,
// JSON text), where every value is hashed and inserted until the
// dictionary outgrows DictionaryPageBytes and the column falls back to
// plain, in every row group. The first batch decides: a column gets a
// dictionary when its first dictSample values have at most a quarter as
// many distinct ones. A column of nulls only gets none: pqarrow's
// dictionary encoder is not free even on nulls (activity events have
// about 30 such columns, and dictionaries on them cost pqarrow a third
// of its speed). Measured on activity events (docs/PERFORMANCE.md),
// dictionaries on every column halved parquet-go's speed and cut
// pqarrow's by a factor of 2-3, for files 5-15% smaller.
const dictSample = 4096

// chooseDictionary returns the dotted paths of the leaf columns of rec
// that get a dictionary.
func chooseDictionary(rec arrow.Record) []string {
	var out []string
	for i, f := range rec.Schema().Fields() {
		out = chooseDictionaryOf(out, f.Name, rec.Column(i))
	}
	return out
}

func chooseDictionaryOf(dst []string, path string, a arrow.Array) []string {
	switch a := a.(type) {
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		for i, f := range st.Fields() {
			dst = chooseDictionaryOf(dst, path+"."+f.Name, a.Field(i))
		}
		return dst
	case *array.Map: // before List: a Map is one
		dst = chooseDictionaryOf(dst, path+".key_value.key", a.Keys())
		return chooseDictionaryOf(dst, path+".key_value.value", a.Items())
	case *array.List:
		return chooseDictionaryOf(dst, path+".list.element", a.ListValues())
	case *array.Boolean:
		return dst
	}
	if repeats(a) {
		dst = append(dst, path)
	}
	return dst
}

// repeats says whether a has non-null values and its first dictSample
// ones have at most a quarter as many distinct values.
func repeats(a arrow.Array) bool {
	var key func(i int) any
	switch a := a.(type) {
	case *array.String:
		key = func(i int) any { return a.Value(i) }
	case *array.Binary:
		key = func(i int) any { return string(a.Value(i)) }
	case interface{ ValueStr(int) string }:
		key = func(i int) any { return a.ValueStr(i) }
	default:
		return false
	}
	seen := map[any]struct{}{}
	n := 0
	for i := 0; i < a.Len() && n < dictSample; i++ {
		if a.IsNull(i) {
			continue
		}
		n++
		seen[key(i)] = struct{}{}
	}
	return n > 0 && len(seen)*4 <= n
}
