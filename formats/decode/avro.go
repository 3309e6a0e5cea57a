package decode

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/hamba/avro/v2"

	"github.com/tributary-io/tributary/formats/schema"
	"github.com/tributary-io/tributary/internal/jsonstr"
)

// Avro decodes Avro-encoded records into the Arrow columns of a Tributary
// schema: plain binary Avro written with one known schema (NewAvro), or the
// Confluent wire format (NewConfluentAvro):
//
//	+------+----------------------+---------------------+
//	| 0x00 | schema id (uint32 BE) | Avro binary body    |
//	+------+----------------------+---------------------+
//
// where each schema id maps to a local Avro schema file.
//
// Fields are matched by name; Avro fields the Tributary schema lacks are
// ignored (or kept in _extra as JSON), Tributary fields the Avro schema
// lacks take their default or null. Unions are unwrapped to the branch
// present; a null branch is null. How Avro values map to columns:
//
//	string     string, enum
//	int32/64   int, long (range-checked)
//	float/double  float, double, int, long; NaN and ±Inf are kept (the
//	           JSON decoder rejects them: JSON cannot carry them)
//	bool       boolean
//	timestamp  long with timestamp-millis/-micros (converted to the
//	           column's unit); a plain long is taken in the column's unit;
//	           a string is read as RFC 3339
//	date       int with the date logical type, or a plain int of days;
//	           a string "2006-01-02"
//	bytes      bytes, fixed, string
//	list/map/struct  array, map, record
//	string     also decimal (as its exact decimal text)
//
// A record is first read whole into Go values (hamba/avro's Reader); only
// when it fits the schema is it appended, so a bad record adds no row.
type Avro struct {
	schema    *arrow.Schema
	rb        *array.RecordBuilder
	root      *anode
	writer    avro.Schema            // plain Avro
	ids       map[uint32]avro.Schema // Confluent: writer schema by id
	confluent bool
	// lookup finds the writer schema of an id not in ids (a schema
	// registry); failed is why an id could not be had, asked once per
	// decoder so that a topic full of one unknown id costs one request.
	lookup func(id uint32) (avro.Schema, error)
	failed map[uint32]string
	r      *avro.Reader
	rows   int
	items  int // values read in the current record, to bound zero-byte arrays
	size   int // the current record's length, which bounds every length in it
}

type anode struct {
	name     string
	kind     schema.Kind
	micros   bool
	nullable bool
	def      any // normalized default, nil if none
	b        array.Builder
	fields   []*anode
	extra    int
	elem     *anode
	keys     *array.StringBuilder
	// from is the path, from the record's root, of a top-level field
	// filled from elsewhere (schema.Field.From); fromPath the same dotted.
	from     []string
	fromPath string
}

// maxAvroItems bounds the values of one record: an array of nulls or of
// empty records takes no bytes per item, so a tiny record could otherwise
// claim billions of them.
const maxAvroItems = 1 << 20

// maxAvroDepth bounds nesting: a recursive schema can nest without
// consuming bytes.
const maxAvroDepth = 256

// NewAvro returns a decoder for plain binary Avro written with writer (an
// Avro schema in JSON).
func NewAvro(s *schema.Schema, writer string, mem memory.Allocator) (*Avro, error) {
	ws, err := avro.Parse(writer)
	if err != nil {
		return nil, fmt.Errorf("formats/decode: avro schema: %w", err)
	}
	d, err := newAvro(s, mem)
	if err != nil {
		return nil, err
	}
	d.writer = ws
	return d, nil
}

// NewConfluentAvro returns a decoder for the Confluent wire format, with
// the writer schema of each id given as a schema file path.
func NewConfluentAvro(s *schema.Schema, files map[uint32]string, mem memory.Allocator) (*Avro, error) {
	ids := make(map[uint32]avro.Schema, len(files))
	for id, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("formats/decode: avro schema id %d: %w", id, err)
		}
		// A fresh cache per file: two ids may define the same names.
		ws, err := avro.ParseBytesWithCache(b, "", &avro.SchemaCache{})
		if err != nil {
			return nil, fmt.Errorf("formats/decode: avro schema id %d (%s): %w", id, path, err)
		}
		ids[id] = ws
	}
	d, err := newAvro(s, mem)
	if err != nil {
		return nil, err
	}
	d.ids, d.confluent = ids, true
	return d, nil
}

// NewRegistryAvro returns a decoder for the Confluent wire format whose
// writer schemas lookup finds by id (from a schema registry, cached by the
// caller); an id it cannot find fails its records, with the reason.
func NewRegistryAvro(s *schema.Schema, lookup func(id uint32) (avro.Schema, error), mem memory.Allocator) (*Avro, error) {
	d, err := newAvro(s, mem)
	if err != nil {
		return nil, err
	}
	d.ids, d.confluent, d.lookup, d.failed = map[uint32]avro.Schema{}, true, lookup, map[uint32]string{}
	return d, nil
}

// AvroSchemaDir maps the files "<id>.avsc" in dir to their ids, for
// NewConfluentAvro.
func AvroSchemaDir(dir string) (map[uint32]string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.avsc"))
	if err != nil {
		return nil, err
	}
	out := make(map[uint32]string, len(matches))
	for _, m := range matches {
		id, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(m), ".avsc"), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("formats/decode: %s: want <schema id>.avsc", m)
		}
		out[uint32(id)] = m
	}
	return out, nil
}

func newAvro(s *schema.Schema, mem memory.Allocator) (*Avro, error) {
	as, err := s.Arrow()
	if err != nil {
		return nil, err
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	d := &Avro{schema: as, rb: array.NewRecordBuilder(mem, as), r: avro.NewReader(nil, 0)}
	bs := make([]array.Builder, len(s.Fields))
	for i := range s.Fields {
		bs[i] = d.rb.Field(i)
	}
	if d.root, err = d.compileStruct("", s.Fields, bs); err != nil {
		d.rb.Release()
		return nil, fmt.Errorf("formats/decode: schema %s: %w", s.Name, err)
	}
	return d, nil
}

func (d *Avro) compileStruct(name string, fs []schema.Field, bs []array.Builder) (*anode, error) {
	n := &anode{name: name, kind: schema.Struct, extra: -1}
	for i, f := range fs {
		c, err := d.compile(f.Name, f.Type, f.Nullable, bs[i])
		if err != nil {
			return nil, err
		}
		if f.Default != nil {
			def, err := normalizeDefault(f.Type, f.Default)
			if err != nil {
				return nil, fmt.Errorf("field %s: default: %w", f.Name, err)
			}
			if def != nil {
				if e := d.walk(c, def, false); e != nil {
					return nil, fmt.Errorf("field %s: default: %s", f.Name, e.reason)
				}
			}
			c.def = def
		}
		if f.Name == ExtraField && f.Type.Kind == schema.String {
			n.extra = i
		}
		if f.From != "" && f.From != f.Name {
			c.from, c.fromPath = strings.Split(f.From, "."), f.From
		}
		n.fields = append(n.fields, c)
	}
	return n, nil
}

func (d *Avro) compile(name string, t schema.Type, nullable bool, b array.Builder) (*anode, error) {
	n := &anode{name: name, kind: t.Kind, micros: t.Unit == schema.Micros, nullable: nullable, b: b, extra: -1}
	switch t.Kind {
	case schema.Struct:
		sb := b.(*array.StructBuilder)
		bs := make([]array.Builder, len(t.Fields))
		for i := range t.Fields {
			bs[i] = sb.FieldBuilder(i)
		}
		s, err := d.compileStruct(name, t.Fields, bs)
		if err != nil {
			return nil, err
		}
		s.b, s.nullable = b, nullable
		return s, nil
	case schema.List:
		var err error
		if n.elem, err = d.compile("", *t.Elem, true, b.(*array.ListBuilder).ValueBuilder()); err != nil {
			return nil, err
		}
	case schema.Map:
		mb := b.(*array.MapBuilder)
		n.keys = mb.KeyBuilder().(*array.StringBuilder)
		var err error
		if n.elem, err = d.compile("", *t.Elem, true, mb.ItemBuilder()); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// normalizeDefault turns a default in its JSON form into the Go value walk
// takes: numbers as json.Number, bytes decoded from base64.
func normalizeDefault(t schema.Type, def any) (any, error) {
	raw, err := json.Marshal(def)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if s, ok := v.(string); ok && t.Kind == schema.Bytes {
		b, ok := decodeBase64(nil, []byte(s))
		if !ok {
			return nil, fmt.Errorf("invalid base64")
		}
		return b, nil
	}
	return v, nil
}

// Schema implements Decoder.
func (d *Avro) Schema() *arrow.Schema { return d.schema }

// Release frees the builders' memory.
func (d *Avro) Release() { d.rb.Release() }

// Flush implements Decoder.
func (d *Avro) Flush() arrow.Record {
	if d.rows == 0 {
		return nil
	}
	d.rows = 0
	return d.rb.NewRecord()
}

var _ Decoder = (*Avro)(nil)

// Decode implements Decoder.
func (d *Avro) Decode(recs []Record) []RecordError {
	var errs []RecordError
	for i := range recs {
		r := &recs[i]
		if path, reason := d.decodeOne(r.Value); reason != "" {
			errs = append(errs, RecordError{Partition: r.Partition, Offset: r.Offset, Path: path, Reason: reason})
		}
	}
	return errs
}

func (d *Avro) decodeOne(value []byte) (path, reason string) {
	if len(value) == 0 {
		return "", "empty value"
	}
	ws := d.writer
	if d.confluent {
		if len(value) < 5 || value[0] != 0 {
			return "", "not Confluent Avro framing (magic byte 0 and a 4-byte schema id)"
		}
		id := binary.BigEndian.Uint32(value[1:5])
		var ok bool
		if ws, ok = d.ids[id]; !ok && d.lookup != nil {
			if why, bad := d.failed[id]; bad {
				return "", why
			}
			s, err := d.lookup(id)
			if err != nil {
				d.failed[id] = fmt.Sprintf("Avro schema id %d: %v", id, err)
				return "", d.failed[id]
			}
			d.ids[id], ws, ok = s, s, true
		}
		if !ok {
			return "", fmt.Sprintf("unknown Avro schema id %d", id)
		}
		value = value[5:]
	}
	d.r.Reset(value)
	d.r.Error = nil // Reset keeps the last record's error
	d.items, d.size = 0, len(value)
	v := d.read(ws, 0)
	if d.r.Error != nil {
		return "", "invalid Avro: " + d.r.Error.Error()
	}
	if d.r.Peek(); d.r.Error == nil {
		return "", "invalid Avro: bytes left after the record"
	}
	d.r.Error = nil
	if _, ok := v.(map[string]any); !ok {
		return "", "Avro value is not a record"
	}
	if e := d.walk(d.root, v, false); e != nil {
		return e.String(), e.reason
	}
	d.walk(d.root, v, true)
	d.rows++
	return "", ""
}

// read reads one value of s. Unions are unwrapped to their branch's value;
// records and maps become map[string]any, arrays []any; scalars are as
// hamba/avro's ReadNext returns them.
func (d *Avro) read(s avro.Schema, depth int) any {
	r := d.r
	if r.Error != nil {
		return nil
	}
	d.items++
	if d.items > maxAvroItems {
		r.ReportError("read", "more than 1048576 values in one record")
		return nil
	}
	if depth > maxAvroDepth {
		r.ReportError("read", "nested deeper than 256")
		return nil
	}
	depth++
	switch s.Type() {
	case avro.Ref:
		return d.read(s.(*avro.RefSchema).Schema(), depth)
	case avro.Union:
		types := s.(*avro.UnionSchema).Types()
		idx := r.ReadLong()
		if r.Error != nil {
			return nil
		}
		if idx < 0 || idx >= int64(len(types)) {
			r.ReportError("read", "union branch out of range")
			return nil
		}
		return d.read(types[idx], depth)
	case avro.Null:
		return nil
	case avro.Record:
		fields := s.(*avro.RecordSchema).Fields()
		obj := make(map[string]any, len(fields))
		for _, f := range fields {
			obj[f.Name()] = d.read(f.Type(), depth)
			if r.Error != nil {
				return nil
			}
		}
		return obj
	case avro.Array:
		items := s.(*avro.ArraySchema).Items()
		arr := []any{}
		var left int64
		for d.block(&left) {
			arr = append(arr, d.read(items, depth))
		}
		return arr
	case avro.Map:
		values := s.(*avro.MapSchema).Values()
		obj := map[string]any{}
		var left int64
		for d.block(&left) {
			k := d.readString()
			obj[k] = d.read(values, depth)
		}
		return obj
	case avro.Fixed:
		fs := s.(*avro.FixedSchema)
		if fs.Logical() != nil {
			return r.ReadNext(s)
		}
		if fs.Size() > d.size {
			r.ReportError("read", "fixed longer than the record")
			return nil
		}
		b := make([]byte, fs.Size())
		r.Read(b)
		return b
	case avro.String:
		return d.readString()
	case avro.Bytes:
		if s.(*avro.PrimitiveSchema).Logical() != nil {
			return r.ReadNext(s)
		}
		return d.readBytes()
	}
	return r.ReadNext(s)
}

// block advances through an array's or map's blocks: it reads a block
// header when the current block is done and reports whether one more item
// follows. hamba/avro's ReadArrayCB keeps counting a block down after an
// error, which on a corrupt count of 2⁶³ does not end; this stops.
func (d *Avro) block(left *int64) bool {
	r := d.r
	if r.Error != nil {
		return false
	}
	if *left > 0 {
		*left--
		return true
	}
	n, _ := r.ReadBlockHeader()
	if r.Error != nil || n == 0 {
		return false
	}
	if n < 0 {
		r.ReportError("read", "invalid block count")
		return false
	}
	*left = n - 1
	return true
}

// readBytes reads a length-prefixed byte string, its length checked
// against the record's before anything is allocated.
func (d *Avro) readBytes() []byte {
	r := d.r
	n := r.ReadLong()
	if r.Error != nil {
		return nil
	}
	if n < 0 || n > int64(d.size) {
		r.ReportError("read", "invalid length")
		return nil
	}
	b := make([]byte, n)
	r.Read(b)
	return b
}

func (d *Avro) readString() string { return string(d.readBytes()) }

// avroErr is a field error; see ferr.
func avroMismatch(n *anode, v any) *ferr {
	return &ferr{reason: fmt.Sprintf("type mismatch: want %s, got %s", n.kind, goTypeName(v))}
}

func goTypeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "record or map"
	case []any:
		return "array"
	case []byte:
		return "bytes"
	case time.Time:
		return "timestamp"
	case time.Duration:
		return "time of day"
	case json.Number:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func (n *anode) resolve(v any, present bool) (any, string) {
	if present && v != nil {
		return v, ""
	}
	if !present && n.def != nil {
		return n.def, ""
	}
	if n.nullable {
		return nil, ""
	}
	if n.def != nil {
		return n.def, ""
	}
	if !present {
		return nil, "missing required field"
	}
	return nil, "null for a required field"
}

func avroInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, true
		}
		if f, err := x.Float64(); err == nil {
			return floatToInt(f)
		}
	}
	return 0, false
}

func avroFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// walk checks v against n (emit false) or appends it (emit true, after a
// successful check, when it cannot fail). v is not nil.
func (d *Avro) walk(n *anode, v any, emit bool) *ferr {
	switch n.kind {
	case schema.String:
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case *big.Rat:
			s = x.FloatString(ratScale(x))
		default:
			return avroMismatch(n, v)
		}
		if emit {
			n.b.(*array.StringBuilder).Append(validUTF8(s))
		}
	case schema.Int32, schema.Int64:
		x, ok := avroInt(v)
		if !ok {
			return avroMismatch(n, v)
		}
		if n.kind == schema.Int32 {
			if x < math.MinInt32 || x > math.MaxInt32 {
				return &ferr{reason: "out of range for int32: " + strconv.FormatInt(x, 10)}
			}
			if emit {
				n.b.(*array.Int32Builder).Append(int32(x))
			}
		} else if emit {
			n.b.(*array.Int64Builder).Append(x)
		}
	case schema.Float, schema.Double:
		f, ok := avroFloat(v)
		if !ok {
			return avroMismatch(n, v)
		}
		if n.kind == schema.Float {
			if !math.IsInf(f, 0) && !math.IsNaN(f) && math.Abs(f) > math.MaxFloat32 {
				return &ferr{reason: "out of range for float"}
			}
			if emit {
				n.b.(*array.Float32Builder).Append(float32(f))
			}
		} else if emit {
			n.b.(*array.Float64Builder).Append(f)
		}
	case schema.Bool:
		b, ok := v.(bool)
		if !ok {
			return avroMismatch(n, v)
		}
		if emit {
			n.b.(*array.BooleanBuilder).Append(b)
		}
	case schema.Timestamp:
		var ts int64
		switch x := v.(type) {
		case time.Time:
			if n.micros {
				ts = x.UnixMicro()
			} else {
				ts = x.UnixMilli()
			}
		case string:
			var ok bool
			if ts, ok = parseTimestamp(x, n.micros); !ok {
				return &ferr{reason: "invalid RFC 3339 timestamp: " + strconv.Quote(x)}
			}
		default:
			var ok bool
			if ts, ok = avroInt(v); !ok {
				return avroMismatch(n, v)
			}
		}
		if emit {
			n.b.(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
		}
	case schema.Date:
		var days int64
		switch x := v.(type) {
		case time.Time:
			days = floorDiv(x.Unix(), 86400)
		case string:
			dd, ok := parseDate(x)
			if !ok {
				return &ferr{reason: "invalid date, want YYYY-MM-DD: " + strconv.Quote(x)}
			}
			days = int64(dd)
		default:
			var ok bool
			if days, ok = avroInt(v); !ok {
				return avroMismatch(n, v)
			}
		}
		if days < math.MinInt32 || days > math.MaxInt32 {
			return &ferr{reason: "date out of range"}
		}
		if emit {
			n.b.(*array.Date32Builder).Append(arrow.Date32(days))
		}
	case schema.Bytes:
		var b []byte
		switch x := v.(type) {
		case []byte:
			b = x
		case string:
			b = []byte(x)
		default:
			return avroMismatch(n, v)
		}
		if emit {
			n.b.(*array.BinaryBuilder).Append(b)
		}
	case schema.List:
		arr, ok := v.([]any)
		if !ok {
			return avroMismatch(n, v)
		}
		if emit {
			n.b.(*array.ListBuilder).Append(true)
		}
		for i, e := range arr {
			if e == nil {
				if emit {
					n.elem.b.AppendNull()
				}
				continue
			}
			if fe := d.walk(n.elem, e, emit); fe != nil {
				return fe.at("[" + strconv.Itoa(i) + "]")
			}
		}
	case schema.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return avroMismatch(n, v)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys) // Go maps have no order; rows must be deterministic
		if emit {
			n.b.(*array.MapBuilder).Append(true)
		}
		for _, k := range keys {
			if emit {
				n.keys.Append(validUTF8(k))
			}
			e := m[k]
			if e == nil {
				if emit {
					n.elem.b.AppendNull()
				}
				continue
			}
			if fe := d.walk(n.elem, e, emit); fe != nil {
				return fe.at("[" + k + "]")
			}
		}
	case schema.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return avroMismatch(n, v)
		}
		if emit && n.b != nil {
			n.b.(*array.StructBuilder).Append(true)
		}
		for i, f := range n.fields {
			if i == n.extra {
				if emit {
					d.appendExtra(n, f, m)
				}
				continue
			}
			name := f.name
			fv, present := m[f.name]
			if f.from != nil {
				name = f.fromPath
				fv, present = avroPath(m, f.from)
			}
			fv, reason := f.resolve(fv, present)
			if reason != "" {
				return (&ferr{reason: reason}).at(name)
			}
			if fv == nil {
				if emit {
					f.b.AppendNull()
				}
				continue
			}
			if fe := d.walk(f, fv, emit); fe != nil {
				return fe.at(name)
			}
		}
	default:
		return &ferr{reason: "unsupported type " + string(n.kind)}
	}
	return nil
}

// avroPath is the value at path below the record or map m, and whether
// there is one: a step into something other than a record or map is
// missing.
func avroPath(m map[string]any, path []string) (any, bool) {
	var v any = m
	for _, k := range path {
		o, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = o[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// appendExtra keeps the record's fields that n does not declare as one
// JSON object (encoding/json's forms: bytes as base64, times as RFC 3339).
func (d *Avro) appendExtra(n, f *anode, m map[string]any) {
	var keys []string
	for k, v := range m {
		if v == nil {
			continue // an Avro field is always present; null is as good as absent
		}
		// A promoted field's own name is not its source: such a key is
		// unknown, as in the JSON decoder.
		if k == ExtraField || !slices.ContainsFunc(n.fields, func(c *anode) bool { return c.name == k && c.from == nil }) {
			keys = append(keys, k)
		}
	}
	b := f.b.(*array.StringBuilder)
	if len(keys) == 0 {
		if f.nullable {
			b.AppendNull()
		} else {
			b.Append("{}")
		}
		return
	}
	slices.Sort(keys)
	buf := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = jsonstr.Append(buf, k)
		buf = append(buf, ':')
		val, err := json.Marshal(jsonable(m[k]))
		if err != nil {
			val = []byte("null")
		}
		buf = append(buf, val...)
	}
	buf = append(buf, '}')
	b.BinaryBuilder.Append(validUTF8Bytes(buf))
}

// jsonable replaces values encoding/json cannot write.
func jsonable(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprint(x)
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Sprint(x)
		}
	case *big.Rat:
		return json.Number(x.FloatString(ratScale(x)))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonable(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonable(e)
		}
		return out
	}
	return v
}

// ratScale is the number of decimal places that print r exactly (r comes
// from an Avro decimal, so its denominator is a power of ten).
func ratScale(r *big.Rat) int {
	den := new(big.Int).Set(r.Denom())
	ten := big.NewInt(10)
	scale := 0
	for den.Cmp(big.NewInt(1)) > 0 && scale < 100 {
		den.Quo(den, ten)
		scale++
	}
	return scale
}
