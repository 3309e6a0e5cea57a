// Package pqread reads Parquet files with github.com/xitongsys/parquet-go,
// an implementation independent of the arrow writer in formats/parquet, so
// that what Tributary writes is checked by a second reader in tests and in
// everyday use (`tributary parquet`).
//
// Rows come back as ordered JSON-friendly values with the logical types
// applied: strings, int32/int64, float32/float64, bool, Timestamp, Date,
// []byte, []any for lists, Map for maps, Object for structs and rows.
//
// A File is not safe for concurrent use.
package pqread

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	xparquet "github.com/xitongsys/parquet-go/parquet"
	"github.com/xitongsys/parquet-go/reader"
	"github.com/xitongsys/parquet-go/source"
	"github.com/xitongsys/parquet-go/types"
)

// File is an open Parquet file.
type File struct {
	f    *os.File
	r    *reader.ParquetReader
	root *Node
	read int64
}

// Node is one element of a file's schema tree.
type Node struct {
	Name       string // as written in the file
	Repetition string // REQUIRED, OPTIONAL or REPEATED
	Physical   string // BOOLEAN, INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY; empty for groups
	Logical    string // STRING, TIMESTAMP(MILLIS,UTC), DATE, LIST, MAP, ...; empty when none
	Children   []*Node

	el *xparquet.SchemaElement
}

// Open opens a local Parquet file and reads its footer.
func Open(path string) (_ *File, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	// xitongsys/parquet-go panics on some malformed files.
	defer func() {
		if p := recover(); p != nil {
			f.Close()
			err = fmt.Errorf("formats/parquet/pqread: %s: not a readable Parquet file: %v", path, p)
		}
	}()
	r, err := reader.NewParquetReader(localFile{f}, nil, 1)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("formats/parquet/pqread: %s: %w", path, err)
	}
	els := r.SchemaHandler.SchemaElements
	i := 0
	var build func() *Node
	build = func() *Node {
		el := els[i]
		n := &Node{Name: r.SchemaHandler.Infos[i].ExName, el: el, Logical: logical(el)}
		if el.RepetitionType != nil {
			n.Repetition = el.RepetitionType.String()
		}
		if el.Type != nil {
			n.Physical = el.Type.String()
		}
		i++
		for k := 0; k < int(el.GetNumChildren()); k++ {
			n.Children = append(n.Children, build())
		}
		return n
	}
	return &File{f: f, r: r, root: build()}, nil
}

// Close closes the file (and the handles the reader opened per column).
func (f *File) Close() error {
	f.r.ReadStop()
	if pf := f.r.PFile; pf != nil {
		pf.Close()
	}
	for _, cb := range f.r.ColumnBuffers {
		if cb.PFile != nil {
			cb.PFile.Close()
		}
	}
	return f.f.Close()
}

// Schema is the root of the file's schema: its children are the columns.
func (f *File) Schema() *Node { return f.root }

// NumRows is the number of rows in the file, from its footer.
func (f *File) NumRows() int64 { return f.r.GetNumRows() }

// RowGroups is the number of row groups in the file.
func (f *File) RowGroups() int { return len(f.r.Footer.RowGroups) }

// CreatedBy is the writer named in the footer.
func (f *File) CreatedBy() string { return f.r.Footer.GetCreatedBy() }

// KeyValueMetadata is the footer's key/value metadata.
func (f *File) KeyValueMetadata() map[string]string {
	m := map[string]string{}
	for _, kv := range f.r.Footer.KeyValueMetadata {
		m[kv.Key] = kv.GetValue()
	}
	return m
}

// Read returns up to n of the next rows; fewer (possibly none) at the end.
func (f *File) Read(n int) (_ []Object, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("formats/parquet/pqread: corrupt data: %v", p)
		}
	}()
	if left := f.NumRows() - f.read; int64(n) > left {
		n = int(left)
	}
	if n <= 0 {
		return nil, nil
	}
	rows, err := f.r.ReadByNumber(n)
	if err != nil {
		return nil, fmt.Errorf("formats/parquet/pqread: %w", err)
	}
	f.read += int64(len(rows))
	out := make([]Object, len(rows))
	for i, row := range rows {
		out[i] = convert(reflect.ValueOf(row), f.root).(Object)
	}
	return out, nil
}

// Member is one named value of an Object.
type Member struct {
	Name  string
	Value any
}

// Object is a row or a struct: named values in schema order.
type Object []Member

// Get returns the value named name.
func (o Object) Get(name string) (any, bool) {
	for _, m := range o {
		if m.Name == name {
			return m.Value, true
		}
	}
	return nil, false
}

// MarshalJSON writes o as a JSON object, members in order.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Name)
		b.Write(k)
		b.WriteByte(':')
		v, err := marshal(m.Value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// A null list or map reads as an empty one: xitongsys/parquet-go reads
// them into Go slices and maps, which cannot tell null from empty.

// Map is a Parquet map, entries sorted by key (xitongsys/parquet-go reads
// maps into Go maps, so the file's order is not kept).
type Map []Member

// MarshalJSON writes m as a JSON object.
func (m Map) MarshalJSON() ([]byte, error) { return Object(m).MarshalJSON() }

// Timestamp is a TIMESTAMP value; it prints as RFC 3339 in UTC.
type Timestamp struct {
	time.Time
	Unit string // MILLIS, MICROS or NANOS
}

// MarshalJSON writes t as an RFC 3339 string.
func (t Timestamp) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

func (t Timestamp) String() string {
	layout := "2006-01-02T15:04:05.000Z07:00"
	switch t.Unit {
	case "MICROS":
		layout = "2006-01-02T15:04:05.000000Z07:00"
	case "NANOS":
		layout = time.RFC3339Nano
	}
	return t.UTC().Format(layout)
}

// Date is a DATE value, days since 1970-01-01; it prints as 2006-01-02.
type Date int32

// MarshalJSON writes d as a "2006-01-02" string.
func (d Date) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func (d Date) String() string {
	return time.Unix(int64(d)*86400, 0).UTC().Format("2006-01-02")
}

// marshal is json.Marshal with bytes as base64 and non-finite floats as
// the strings "NaN", "Infinity" and "-Infinity", as pyarrow's JSON and
// Spark's to_json write them.
func marshal(v any) ([]byte, error) {
	switch v := v.(type) {
	case float32:
		return marshalFloat(float64(v), 32)
	case float64:
		return marshalFloat(v, 64)
	case []any:
		var b bytes.Buffer
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			eb, err := marshal(e)
			if err != nil {
				return nil, err
			}
			b.Write(eb)
		}
		b.WriteByte(']')
		return b.Bytes(), nil
	case []byte:
		return json.Marshal(base64.StdEncoding.EncodeToString(v))
	}
	return json.Marshal(v)
}

func marshalFloat(f float64, bits int) ([]byte, error) {
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`), nil
	}
	return []byte(strconv.FormatFloat(f, 'g', -1, bits)), nil
}

// logical names the logical (or converted) type of el.
func logical(el *xparquet.SchemaElement) string {
	if lt := el.LogicalType; lt != nil {
		switch {
		case lt.IsSetSTRING():
			return "STRING"
		case lt.IsSetMAP():
			return "MAP"
		case lt.IsSetLIST():
			return "LIST"
		case lt.IsSetENUM():
			return "ENUM"
		case lt.IsSetDATE():
			return "DATE"
		case lt.IsSetJSON():
			return "JSON"
		case lt.IsSetUUID():
			return "UUID"
		case lt.IsSetDECIMAL():
			return fmt.Sprintf("DECIMAL(%d,%d)", lt.DECIMAL.Precision, lt.DECIMAL.Scale)
		case lt.IsSetTIMESTAMP():
			return fmt.Sprintf("TIMESTAMP(%s,%s)", unit(lt.TIMESTAMP.Unit), utc(lt.TIMESTAMP.IsAdjustedToUTC))
		case lt.IsSetTIME():
			return fmt.Sprintf("TIME(%s,%s)", unit(lt.TIME.Unit), utc(lt.TIME.IsAdjustedToUTC))
		case lt.IsSetINTEGER():
			s := "INT"
			if !lt.INTEGER.IsSigned {
				s = "UINT"
			}
			return fmt.Sprintf("%s(%d)", s, lt.INTEGER.BitWidth)
		}
	}
	if el.ConvertedType != nil {
		switch ct := *el.ConvertedType; ct {
		case xparquet.ConvertedType_UTF8:
			return "STRING"
		case xparquet.ConvertedType_MAP, xparquet.ConvertedType_MAP_KEY_VALUE:
			return "MAP"
		case xparquet.ConvertedType_TIMESTAMP_MILLIS:
			return "TIMESTAMP(MILLIS,UTC)"
		case xparquet.ConvertedType_TIMESTAMP_MICROS:
			return "TIMESTAMP(MICROS,UTC)"
		default:
			return ct.String()
		}
	}
	return ""
}

func unit(u *xparquet.TimeUnit) string {
	switch {
	case u == nil:
		return "?"
	case u.IsSetMILLIS():
		return "MILLIS"
	case u.IsSetMICROS():
		return "MICROS"
	}
	return "NANOS"
}

func utc(adjusted bool) string {
	if adjusted {
		return "UTC"
	}
	return "local"
}

// convert turns a value of xitongsys's dynamic row types into ours.
func convert(v reflect.Value, n *Node) any {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch {
	case n.Logical == "LIST" && len(n.Children) == 1 && len(n.Children[0].Children) == 1:
		if v.Kind() != reflect.Slice {
			return fmt.Sprintf("<unexpected %s for a list>", v.Type())
		}
		elem := n.Children[0].Children[0]
		out := make([]any, v.Len())
		for i := range out {
			out[i] = convert(v.Index(i), elem)
		}
		return out
	case n.Logical == "MAP" && len(n.Children) == 1 && len(n.Children[0].Children) == 2:
		if v.Kind() != reflect.Map {
			return fmt.Sprintf("<unexpected %s for a map>", v.Type())
		}
		key, val := n.Children[0].Children[0], n.Children[0].Children[1]
		out := make(Map, 0, v.Len())
		it := v.MapRange()
		for it.Next() {
			k := convert(it.Key(), key)
			ks, ok := k.(string)
			if !ok {
				ks = fmt.Sprint(k)
			}
			out = append(out, Member{ks, convert(it.Value(), val)})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out
	case len(n.Children) > 0 || n.Physical == "":
		if v.Kind() == reflect.Slice { // a repeated group without LIST
			out := make([]any, v.Len())
			for i := range out {
				out[i] = convert(v.Index(i), &Node{Name: n.Name, Children: n.Children})
			}
			return out
		}
		out := make(Object, 0, len(n.Children))
		for i, c := range n.Children {
			out = append(out, Member{c.Name, convert(v.Field(i), c)})
		}
		return out
	}
	if v.Kind() == reflect.Slice && n.Repetition == "REPEATED" && v.Type().Elem().Kind() != reflect.Uint8 {
		out := make([]any, v.Len())
		for i := range out {
			out[i] = convert(v.Index(i), &Node{Name: n.Name, Physical: n.Physical, Logical: n.Logical, el: n.el})
		}
		return out
	}
	return leaf(v, n)
}

// leaf converts a primitive value by its physical and logical type.
func leaf(v reflect.Value, n *Node) any {
	switch n.Physical {
	case "BOOLEAN":
		return v.Bool()
	case "INT32":
		i := int32(v.Int())
		if n.Logical == "DATE" {
			return Date(i)
		}
		return i
	case "INT64":
		i := v.Int()
		switch {
		case strings.HasPrefix(n.Logical, "TIMESTAMP(MILLIS"):
			// Not types.TIMESTAMP_MILLISToTime: it goes through
			// nanoseconds and overflows past 2262.
			return Timestamp{time.UnixMilli(i).UTC(), "MILLIS"}
		case strings.HasPrefix(n.Logical, "TIMESTAMP(MICROS"):
			return Timestamp{time.UnixMicro(i).UTC(), "MICROS"}
		case strings.HasPrefix(n.Logical, "TIMESTAMP(NANOS"):
			return Timestamp{time.Unix(0, i).UTC(), "NANOS"}
		}
		return i
	case "INT96":
		return Timestamp{types.INT96ToTime(v.String()), "NANOS"}
	case "FLOAT":
		return float32(v.Float())
	case "DOUBLE":
		return v.Float()
	case "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY":
		s := v.String()
		switch n.Logical {
		case "STRING", "ENUM", "JSON":
			return s
		}
		if strings.HasPrefix(n.Logical, "DECIMAL") && n.el.Precision != nil && n.el.Scale != nil {
			return types.DECIMAL_BYTE_ARRAY_ToString([]byte(s), int(*n.el.Precision), int(*n.el.Scale))
		}
		return []byte(s)
	}
	return v.Interface()
}

// WriteSchema prints the schema tree, one node a line, children indented:
//
//	ts_ms OPTIONAL INT64 TIMESTAMP(MILLIS,UTC)
//	tags OPTIONAL group LIST
//	  list REPEATED group
//	    element OPTIONAL BYTE_ARRAY STRING
func WriteSchema(w io.Writer, root *Node) error {
	var walk func(n *Node, depth int) error
	walk = func(n *Node, depth int) error {
		physical := n.Physical
		if physical == "" {
			physical = "group"
		}
		parts := []string{strings.Repeat("  ", depth) + n.Name}
		for _, p := range []string{n.Repetition, physical, n.Logical} {
			if p != "" {
				parts = append(parts, p)
			}
		}
		if _, err := fmt.Fprintln(w, strings.Join(parts, " ")); err != nil {
			return err
		}
		for _, c := range n.Children {
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	for _, c := range root.Children {
		if err := walk(c, 0); err != nil {
			return err
		}
	}
	return nil
}

// localFile is xitongsys's source.ParquetFile over an *os.File. The reader
// opens the file again, with an empty name, for each column it reads.
type localFile struct{ *os.File }

func (f localFile) Open(name string) (source.ParquetFile, error) {
	if name == "" {
		name = f.Name()
	}
	g, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return localFile{g}, nil
}

func (f localFile) Create(string) (source.ParquetFile, error) {
	return nil, fmt.Errorf("formats/parquet/pqread: read only")
}
