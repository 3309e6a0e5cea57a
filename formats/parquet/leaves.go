package parquet

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/bitutil"
	pgo "github.com/parquet-go/parquet-go"
)

// leafWriter turns one leaf column of Arrow batches into parquet-go values
// with their levels. The Arrow arrays are the column's record batch array
// and, down the path to the leaf, the struct fields, list values and map
// keys or items.
//
// Definition level: the number of nullable or repeated nodes on the path
// that are present. Repetition level: 0 at the start of a row, else the
// depth (counted in repeated nodes) of the list or map whose next entry the
// value starts. A null, an empty list or an empty map ends its branch with
// one null value at the level reached so far.
type leafWriter struct {
	field    int      // the record's column
	col      int      // the Parquet column
	nodes    []*pnode // the top-level field down to the leaf
	child    []int    // nodes[d+1] is nodes[d].children[child[d]]
	repeated bool     // a list or map on the path

	// Bound to the current batch by bind.
	arrs  []arrow.Array
	nulls []bool // arrs[d] has nulls
	// valid[d] and voff[d] are arrs[d]'s validity bitmap and offset into
	// it, when it has nulls: testing a bit is cheaper than IsNull's
	// interface call, once per value and level.
	valid [][]byte
	voff  []int
	offs  []interface{ ValueOffsets(int) (int64, int64) }
	leaf  leafArrays
	// allNull is set when an array on the path holds only nulls: every
	// value of the batch is then nullValue, at the level above it.
	allNull   bool
	nullValue pgo.Value
	// nullRun is a run of nullValue that appendRows hands out for an
	// all-null batch instead of building one.
	nullRun []pgo.Value
	err     error
}

// leafArrays is the leaf array as its concrete type (one is set), so that
// reading a value is not an interface call.
type leafArrays struct {
	str *array.String
	bin *array.Binary
	b   *array.Boolean
	i32 *array.Int32
	i64 *array.Int64
	f32 *array.Float32
	f64 *array.Float64
	d32 *array.Date32
	ts  *array.Timestamp
}

// appendLeaves appends the leaf writers of the last node of path, a field
// of record column field.
func appendLeaves(dst []*leafWriter, field int, path []*pnode, child []int) []*leafWriter {
	n := path[len(path)-1]
	if n.kind < pStruct {
		lw := &leafWriter{field: field, col: n.col, nodes: path, child: child}
		for _, p := range path {
			lw.repeated = lw.repeated || p.kind == pList || p.kind == pMap
		}
		lw.arrs = make([]arrow.Array, len(path))
		lw.nulls = make([]bool, len(path))
		lw.valid = make([][]byte, len(path))
		lw.voff = make([]int, len(path))
		lw.offs = make([]interface{ ValueOffsets(int) (int64, int64) }, len(path))
		return append(dst, lw)
	}
	for i, c := range n.children {
		dst = appendLeaves(dst, field, append(path[:len(path):len(path)], c), append(child[:len(child):len(child)], i))
	}
	return dst
}

// bind points lw at the arrays of column a of a batch.
func (lw *leafWriter) bind(a arrow.Array) {
	lw.arrs[0] = a
	lw.allNull = false
	def := 0
	for d, n := range lw.nodes {
		a := lw.arrs[d]
		lw.nulls[d] = a.NullN() > 0
		lw.valid[d], lw.voff[d] = a.NullBitmapBytes(), a.Data().Offset()
		if !lw.allNull && n.nullable && a.NullN() == a.Len() && !lw.repeated {
			lw.allNull, lw.nullValue = true, pgo.NullValue().Level(0, def, lw.col)
		}
		if n.nullable {
			def++
		}
		switch n.kind {
		case pStruct:
			lw.arrs[d+1] = a.(*array.Struct).Field(lw.child[d])
		case pList:
			l := a.(*array.List)
			lw.offs[d], lw.arrs[d+1] = l, l.ListValues()
		case pMap:
			m := a.(*array.Map)
			lw.offs[d] = m
			if lw.child[d] == 0 {
				lw.arrs[d+1] = m.Keys()
			} else {
				lw.arrs[d+1] = m.Items()
			}
		}
	}
	l := &lw.leaf
	switch a := lw.arrs[len(lw.arrs)-1].(type) {
	case *array.String:
		l.str = a
	case *array.Binary:
		l.bin = a
	case *array.Boolean:
		l.b = a
	case *array.Int32:
		l.i32 = a
	case *array.Int64:
		l.i64 = a
	case *array.Float32:
		l.f32 = a
	case *array.Float64:
		l.f64 = a
	case *array.Date32:
		l.d32 = a
	case *array.Timestamp:
		l.ts = a
	}
}

// unbind drops the batch's arrays, which the caller may release.
func (lw *leafWriter) unbind() {
	clear(lw.arrs)
	clear(lw.offs)
	clear(lw.valid)
	lw.leaf = leafArrays{}
}

// appendRows appends the values of rows [from, to) of the bound batch.
func (lw *leafWriter) appendRows(dst []pgo.Value, from, to int) []pgo.Value {
	if lw.repeated {
		for i := from; i < to; i++ {
			dst = lw.walk(dst, 0, i, 0, 0)
		}
		return dst
	}
	// Structs and a leaf only: one value per row, no repetition.
	if lw.allNull {
		if n := to - from; len(dst) == 0 && n <= len(lw.nullRun) && lw.nullRun[0] == lw.nullValue {
			return lw.nullRun[:n]
		}
		for range to - from {
			dst = append(dst, lw.nullValue)
		}
		if len(dst) > len(lw.nullRun) {
			lw.nullRun = slices.Clone(dst)
		}
		return dst
	}
rows:
	for i := from; i < to; i++ {
		def := 0
		for d, n := range lw.nodes {
			if lw.nulls[d] && bitutil.BitIsNotSet(lw.valid[d], lw.voff[d]+i) {
				if !n.nullable {
					lw.nullInRequired(d)
				}
				dst = append(dst, pgo.NullValue().Level(0, def, lw.col))
				continue rows
			}
			if n.nullable {
				def++
			}
		}
		v := lw.value(i)
		// The setters inline where Level does not; the repetition
		// level of a new value is already 0.
		v.SetDefinitionLevel(def)
		v.SetColumnIndex(lw.col)
		dst = append(dst, v)
	}
	return dst
}

// walk appends the values of entry i of arrs[d], at repetition level rep
// and the definition level def of its ancestors.
func (lw *leafWriter) walk(dst []pgo.Value, d, i, rep, def int) []pgo.Value {
	n := lw.nodes[d]
	if lw.nulls[d] && lw.arrs[d].IsNull(i) {
		if !n.nullable {
			lw.nullInRequired(d)
		}
		return append(dst, pgo.NullValue().Level(rep, def, lw.col))
	}
	if n.nullable {
		def++
	}
	switch n.kind {
	case pStruct:
		return lw.walk(dst, d+1, i, rep, def)
	case pList, pMap:
		start, end := lw.offs[d].ValueOffsets(i)
		if start == end {
			return append(dst, pgo.NullValue().Level(rep, def, lw.col))
		}
		for k := start; k < end; k++ {
			dst = lw.walk(dst, d+1, int(k), rep, def+1)
			rep = n.rep
		}
		return dst
	}
	return append(dst, lw.value(i).Level(rep, def, lw.col))
}

func (lw *leafWriter) nullInRequired(d int) {
	if lw.err == nil {
		lw.err = fmt.Errorf("column %s: null in %s, which is not nullable", lw.path(), lw.nodes[d].name)
	}
}

// value is entry i of the leaf array, not null.
func (lw *leafWriter) value(i int) pgo.Value {
	l := &lw.leaf
	switch {
	case l.str != nil:
		s := l.str.Value(i)
		return pgo.ByteArrayValue(unsafe.Slice(unsafe.StringData(s), len(s)))
	case l.bin != nil:
		return pgo.ByteArrayValue(l.bin.Value(i))
	case l.i64 != nil:
		return pgo.Int64Value(l.i64.Value(i))
	case l.ts != nil:
		return pgo.Int64Value(int64(l.ts.Value(i)))
	case l.i32 != nil:
		return pgo.Int32Value(l.i32.Value(i))
	case l.d32 != nil:
		return pgo.Int32Value(int32(l.d32.Value(i)))
	case l.f64 != nil:
		return pgo.DoubleValue(l.f64.Value(i))
	case l.f32 != nil:
		return pgo.FloatValue(l.f32.Value(i))
	case l.b != nil:
		return pgo.BooleanValue(l.b.Value(i))
	}
	panic("formats/parquet: unbound leaf")
}
