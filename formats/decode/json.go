package decode

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/valyala/fastjson"

	"github.com/tributary-io/tributary/formats/schema"
	"github.com/tributary-io/tributary/internal/jsonstr"
)

// ExtraField is the name of the optional string column that keeps, as one
// JSON object, the keys of a struct that its schema does not declare. It
// may appear at the top level or in any struct; it is never read from the
// input (a key called "_extra" is itself an unknown key).
const ExtraField = "_extra"

// JSON decodes records whose value is one JSON object against a schema.
//
// How JSON values map to columns:
//
//	string     a JSON string; an object or array is kept as its JSON text
//	           (how `properties` and `traits` arrive); invalid UTF-8 is
//	           replaced by U+FFFD, as encoding/json does
//	int32/64   an integral number ("1", "-7", "1e3", "2.0") within range
//	float      any finite number (double within float32's range)
//	bool       true or false
//	timestamp  an RFC 3339 string with any offset, stored in UTC; or an
//	           integral number already in the column's unit (ms or µs)
//	date       "2006-01-02", or an integral number of days since the epoch
//	bytes      a base64 string (standard alphabet, padding optional)
//	list       an array; null elements are null
//	map        an object; null values are null
//	struct     an object; unknown keys are ignored, or kept in _extra
//
// A missing field takes its default; with no default it is null if
// nullable, else the record fails ("missing required field"). An explicit
// null is null if the field is nullable, else its default, else the record
// fails. If an object repeats a key, the last one wins for a struct field;
// a map keeps every entry.
//
// Error paths name fields with dots, list elements with [i] and map
// entries with [key]: "context.page.url", "items[3].sku", "attrs[color]".
//
// Decoding is two passes over fastjson's parsed tree: the first checks the
// whole record and appends nothing, the second appends and cannot fail. A
// bad record therefore never leaves a partial row in the builders. The
// first pass remembers where each field was found (slots), so that the
// second does not look keys up again.
type JSON struct {
	schema *arrow.Schema
	rb     *array.RecordBuilder
	root   *jnode
	p      fastjson.Parser
	rows   int
	// coerceStrings lets string columns take numbers and booleans as their
	// JSON text (see CoerceStrings).
	coerceStrings bool

	// Scratch, reused from record to record.
	slots   []*fastjson.Value // per struct visited, one slot per field, in visiting order
	cur     int               // the second pass's position in slots
	nums    []int64           // values the first pass computed for the second: parsed timestamps and dates, unknown-key counts
	ncur    int               // the second pass's position in nums
	vunk    int               // unknown keys visitSlots saw
	strs    []strBuilder      // every string and binary builder, to size their data buffers
	kvs     []jkv             // a stack of object members being walked
	scratch []byte
	vnode   *jnode // the struct being filled by visitSlots
	vbase   int
	vpos    int // the position of the key visitSlots is given
	visitFn func(k []byte, v *fastjson.Value)
	kvFn    func(k []byte, v *fastjson.Value)
}

// strBuilder remembers how many bytes a builder's last batch held, so that
// the next batch reserves them at once rather than growing by doubling.
type strBuilder struct {
	b    *array.BinaryBuilder
	last int
}

type jkv struct {
	k []byte
	v *fastjson.Value
}

// jnode is a schema field compiled against the builder its values go to.
type jnode struct {
	name     string // the field's path segment
	kind     schema.Kind
	micros   bool
	nullable bool
	def      *fastjson.Value // the default, nil if none
	b        array.Builder   // nil for the root

	// from is the path, from the record's root, of a top-level field
	// filled from elsewhere (schema.Field.From); fromPath the same dotted,
	// as error paths name it.
	from     []string
	fromPath string

	fields []*jnode             // struct
	index  map[string]int       // struct: key → field
	froms  []int                // struct (the root): fields with a from path
	hint   []int                // struct: the field last seen at each key position
	extra  int                  // struct: index of _extra, or -1
	elem   *jnode               // list element, map value
	keys   *array.StringBuilder // map keys

	// pending counts nulls not yet appended to b (see nullsTo).
	pending    int
	deferNulls bool // not inside a list or map
}

// NewJSON returns a JSON decoder for s, allocating from mem (nil: a pool
// on the Go heap that reuses the buffers of released batches, pool.go). It
// fails if s has no Arrow form or a default that does not fit its field.
func NewJSON(s *schema.Schema, mem memory.Allocator) (*JSON, error) {
	as, err := s.Arrow()
	if err != nil {
		return nil, err
	}
	if mem == nil {
		mem = pooled
	}
	d := &JSON{schema: as, rb: array.NewRecordBuilder(mem, as)}
	d.visitFn = d.visitSlots
	d.kvFn = d.pushKV
	builders := make([]array.Builder, len(s.Fields))
	for i := range s.Fields {
		builders[i] = d.rb.Field(i)
	}
	d.root, err = d.compileStruct("", s.Fields, builders, false)
	if err != nil {
		d.rb.Release()
		return nil, fmt.Errorf("formats/decode: schema %s: %w", s.Name, err)
	}
	return d, nil
}

func (d *JSON) compileStruct(name string, fs []schema.Field, bs []array.Builder, inList bool) (*jnode, error) {
	n := &jnode{name: name, kind: schema.Struct, index: make(map[string]int, len(fs)), extra: -1}
	for i, f := range fs {
		c, err := d.compile(f.Name, f.Type, f.Nullable, bs[i], inList)
		if err != nil {
			return nil, err
		}
		if f.Default != nil {
			if c.def, err = d.compileDefault(c, f.Default); err != nil {
				return nil, fmt.Errorf("field %s: default: %w", f.Name, err)
			}
		}
		n.fields = append(n.fields, c)
		if f.Name == ExtraField && f.Type.Kind == schema.String {
			n.extra = i
			continue
		}
		if f.From != "" && f.From != f.Name {
			// A key of the field's own name is not its source: it is
			// an unknown key (kept in _extra if there is one).
			c.from, c.fromPath = strings.Split(f.From, "."), f.From
			n.froms = append(n.froms, i)
			continue
		}
		n.index[f.Name] = i
	}
	return n, nil
}

func (d *JSON) compile(name string, t schema.Type, nullable bool, b array.Builder, inList bool) (*jnode, error) {
	n := &jnode{name: name, kind: t.Kind, micros: t.Unit == schema.Micros, nullable: nullable, b: b, deferNulls: !inList}
	switch t.Kind {
	case schema.String:
		d.strs = append(d.strs, strBuilder{b: b.(*array.StringBuilder).BinaryBuilder})
	case schema.Bytes:
		d.strs = append(d.strs, strBuilder{b: b.(*array.BinaryBuilder)})
	case schema.Struct:
		sb := b.(*array.StructBuilder)
		bs := make([]array.Builder, len(t.Fields))
		for i := range t.Fields {
			bs[i] = sb.FieldBuilder(i)
		}
		s, err := d.compileStruct(name, t.Fields, bs, inList)
		if err != nil {
			return nil, err
		}
		s.b, s.nullable, s.deferNulls = b, nullable, !inList
		return s, nil
	case schema.List:
		e, err := d.compile("", *t.Elem, true, b.(*array.ListBuilder).ValueBuilder(), true)
		if err != nil {
			return nil, err
		}
		n.elem = e
	case schema.Map:
		mb := b.(*array.MapBuilder)
		n.keys = mb.KeyBuilder().(*array.StringBuilder)
		d.strs = append(d.strs, strBuilder{b: n.keys.BinaryBuilder})
		e, err := d.compile("", *t.Elem, true, mb.ItemBuilder(), true)
		if err != nil {
			return nil, err
		}
		n.elem = e
	}
	return n, nil
}

func (d *JSON) compileDefault(n *jnode, def any) (*fastjson.Value, error) {
	raw, err := json.Marshal(def)
	if err != nil {
		return nil, err
	}
	v, err := fastjson.ParseBytes(raw)
	if err != nil {
		return nil, err
	}
	if v.Type() == fastjson.TypeNull {
		return nil, nil
	}
	d.slots, d.nums = d.slots[:0], d.nums[:0]
	if e := d.check(n, v); e != nil {
		return nil, fmt.Errorf("%s", e.reason)
	}
	return v, nil
}

// Schema implements Decoder.
func (d *JSON) Schema() *arrow.Schema { return d.schema }

// Release frees the builders' memory.
func (d *JSON) Release() { d.rb.Release() }

// Flush implements Decoder.
func (d *JSON) Flush() arrow.Record {
	if d.rows == 0 {
		return nil
	}
	d.rows = 0
	d.flushAll(d.root)
	for i := range d.strs {
		d.strs[i].last = d.strs[i].b.DataLen()
	}
	return d.rb.NewRecord()
}

var _ Decoder = (*JSON)(nil)

// Decode implements Decoder.
func (d *JSON) Decode(recs []Record) []RecordError {
	var errs []RecordError
	if d.rows == 0 {
		d.rb.Reserve(len(recs))
		for _, s := range d.strs {
			s.b.ReserveData(s.last)
		}
	}
	for i := range recs {
		r := &recs[i]
		if path, reason := d.decodeOne(r.Value); reason != "" {
			errs = append(errs, RecordError{Partition: r.Partition, Offset: r.Offset, Path: path, Reason: reason})
		}
	}
	return errs
}

// decodeOne appends one row, or nothing and the reason it cannot.
func (d *JSON) decodeOne(value []byte) (path, reason string) {
	if len(value) == 0 {
		return "", "empty value"
	}
	v, err := d.p.ParseBytes(value)
	if err != nil {
		return "", shorten("invalid JSON: " + err.Error())
	}
	if v.Type() != fastjson.TypeObject {
		return "", "not a JSON object: " + v.Type().String()
	}
	d.slots = d.slots[:0]
	d.kvs = d.kvs[:0]
	d.nums = d.nums[:0]
	if e := d.check(d.root, v); e != nil {
		return e.String(), e.reason
	}
	d.cur, d.ncur = 0, 0
	d.appendStruct(d.root, v)
	d.rows++
	return "", ""
}

// ferr is a field error; path is built innermost first as it unwinds.
type ferr struct {
	path   []string
	reason string
}

func (e *ferr) at(seg string) *ferr {
	e.path = append(e.path, seg)
	return e
}

func (e *ferr) String() string {
	var sb strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		s := e.path[i]
		if sb.Len() > 0 && !strings.HasPrefix(s, "[") {
			sb.WriteByte('.')
		}
		sb.WriteString(s)
	}
	return sb.String()
}

// resolve applies the missing/null rules: the value to decode, nil for
// null, or a reason the record fails.
func (n *jnode) resolve(v *fastjson.Value) (*fastjson.Value, string) {
	if v != nil && v.Type() != fastjson.TypeNull {
		return v, ""
	}
	if v == nil && n.def != nil {
		return n.def, ""
	}
	if n.nullable {
		return nil, ""
	}
	if n.def != nil {
		return n.def, ""
	}
	if v == nil {
		return nil, "missing required field"
	}
	return nil, "null for a required field"
}

func mismatch(n *jnode, v *fastjson.Value) *ferr {
	want := string(n.kind)
	if n.kind == schema.Timestamp {
		want = "timestamp (RFC 3339 string or number)"
	}
	return &ferr{reason: "type mismatch: want " + want + ", got " + v.Type().String()}
}

// visitSlots files one member of the struct d.vnode under its field. Events
// of a topic mostly list their keys in the same order, so it first tries
// the field found at this position last time, which is cheaper than the map.
func (d *JSON) visitSlots(k []byte, v *fastjson.Value) {
	n, pos := d.vnode, d.vpos
	d.vpos++
	if pos < len(n.hint) {
		if i := n.hint[pos]; i >= 0 && n.fields[i].name == string(k) {
			d.slots[d.vbase+i] = v
			return
		}
	}
	i, ok := n.index[string(k)]
	if !ok {
		i = -1
	}
	if pos < len(n.hint) {
		n.hint[pos] = i
	} else if pos < 4*len(n.fields)+8 {
		for len(n.hint) < pos {
			n.hint = append(n.hint, -1)
		}
		n.hint = append(n.hint, i)
	}
	if ok {
		d.slots[d.vbase+i] = v
	} else {
		d.vunk++
	}
}

func (d *JSON) pushKV(k []byte, v *fastjson.Value) { d.kvs = append(d.kvs, jkv{k, v}) }

// check is the first pass: v (not null) must fit n. It appends nothing to
// the builders, only to d.slots.
func (d *JSON) check(n *jnode, v *fastjson.Value) *ferr {
	switch n.kind {
	case schema.String:
		switch v.Type() {
		case fastjson.TypeString, fastjson.TypeObject, fastjson.TypeArray:
			return nil
		case fastjson.TypeNumber, fastjson.TypeTrue, fastjson.TypeFalse:
			if d.coerceStrings {
				return nil
			}
		}
		return mismatch(n, v)
	case schema.Int32, schema.Int64:
		if v.Type() != fastjson.TypeNumber {
			return mismatch(n, v)
		}
		x, ok := jsonInt(v)
		if !ok {
			return &ferr{reason: "not an integer within int64: " + v.String()}
		}
		if n.kind == schema.Int32 && (x < math.MinInt32 || x > math.MaxInt32) {
			return &ferr{reason: "out of range for int32: " + v.String()}
		}
	case schema.Float, schema.Double:
		if v.Type() != fastjson.TypeNumber {
			return mismatch(n, v)
		}
		f, err := v.Float64()
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return &ferr{reason: "not a finite number: " + v.String()}
		}
		if n.kind == schema.Float && math.Abs(f) > math.MaxFloat32 {
			return &ferr{reason: "out of range for float: " + v.String()}
		}
	case schema.Bool:
		if t := v.Type(); t != fastjson.TypeTrue && t != fastjson.TypeFalse {
			return mismatch(n, v)
		}
	case schema.Timestamp:
		x, reason := jsonTimestamp(v, n.micros)
		if reason != "" {
			if reason == "mismatch" {
				return mismatch(n, v)
			}
			return &ferr{reason: reason}
		}
		d.nums = append(d.nums, x)
	case schema.Date:
		x, reason := jsonDate(v)
		if reason != "" {
			if reason == "mismatch" {
				return mismatch(n, v)
			}
			return &ferr{reason: reason}
		}
		d.nums = append(d.nums, int64(x))
	case schema.Bytes:
		if v.Type() != fastjson.TypeString {
			return mismatch(n, v)
		}
		sb, _ := v.StringBytes()
		var ok bool
		if d.scratch, ok = decodeBase64(d.scratch[:0], sb); !ok {
			return &ferr{reason: "invalid base64"}
		}
	case schema.List:
		arr, err := v.Array()
		if err != nil {
			return mismatch(n, v)
		}
		for i, e := range arr {
			if e.Type() == fastjson.TypeNull {
				continue
			}
			if fe := d.check(n.elem, e); fe != nil {
				return fe.at("[" + strconv.Itoa(i) + "]")
			}
		}
	case schema.Map:
		o, err := v.Object()
		if err != nil {
			return mismatch(n, v)
		}
		base := len(d.kvs)
		o.Visit(d.kvFn)
		end := len(d.kvs)
		for i := base; i < end; i++ {
			kv := d.kvs[i]
			if kv.v.Type() == fastjson.TypeNull {
				continue
			}
			if fe := d.check(n.elem, kv.v); fe != nil {
				d.kvs = d.kvs[:base]
				return fe.at("[" + string(kv.k) + "]")
			}
		}
		d.kvs = d.kvs[:base]
	case schema.Struct:
		o, err := v.Object()
		if err != nil {
			return mismatch(n, v)
		}
		base := len(d.slots)
		for range n.fields {
			d.slots = append(d.slots, nil)
		}
		d.vnode, d.vbase, d.vpos, d.vunk = n, base, 0, 0
		o.Visit(d.visitFn)
		if n.extra >= 0 {
			d.nums = append(d.nums, int64(d.vunk))
		}
		for _, i := range n.froms {
			// Get is nil when a key on the path is missing or the path
			// goes through something other than an object.
			d.slots[base+i] = fromValue(v, n.fields[i].from)
		}
		for i, f := range n.fields {
			if i == n.extra {
				continue
			}
			name := f.name
			if f.fromPath != "" {
				name = f.fromPath
			}
			fv, reason := f.resolve(d.slots[base+i])
			if reason != "" {
				return (&ferr{reason: reason}).at(name)
			}
			if fv == nil {
				continue
			}
			if fe := d.check(f, fv); fe != nil {
				return fe.at(name)
			}
		}
	default:
		return &ferr{reason: "unsupported type " + string(n.kind)}
	}
	return nil
}

// fromValue is the value at path below the object v, nil if there is
// none: a missing key, or a step into something that is not an object.
func fromValue(v *fastjson.Value, path []string) *fastjson.Value {
	for _, k := range path {
		if v.Type() != fastjson.TypeObject {
			return nil
		}
		if v = v.Get(k); v == nil {
			return nil
		}
	}
	return v
}

func jsonInt(v *fastjson.Value) (int64, bool) {
	if x, err := v.Int64(); err == nil {
		return x, true
	}
	f, err := v.Float64()
	if err != nil {
		return 0, false
	}
	return floatToInt(f)
}

func jsonTimestamp(v *fastjson.Value, micros bool) (int64, string) {
	switch v.Type() {
	case fastjson.TypeString:
		sb, _ := v.StringBytes()
		t, ok := parseTimestamp(string(sb), micros)
		if !ok {
			return 0, "invalid RFC 3339 timestamp: " + v.String()
		}
		return t, ""
	case fastjson.TypeNumber:
		x, ok := jsonInt(v)
		if !ok {
			return 0, "not an integral epoch timestamp: " + v.String()
		}
		return x, ""
	}
	return 0, "mismatch"
}

func jsonDate(v *fastjson.Value) (int32, string) {
	switch v.Type() {
	case fastjson.TypeString:
		sb, _ := v.StringBytes()
		x, ok := parseDate(string(sb))
		if !ok {
			return 0, "invalid date, want YYYY-MM-DD: " + v.String()
		}
		return x, ""
	case fastjson.TypeNumber:
		x, ok := jsonInt(v)
		if !ok || x < math.MinInt32 || x > math.MaxInt32 {
			return 0, "not an integral day number within int32: " + v.String()
		}
		return int32(x), ""
	}
	return 0, "mismatch"
}

// appendValue is the second pass: v has been checked; nil is null.
func (d *JSON) appendValue(n *jnode, v *fastjson.Value) {
	if v == nil {
		d.appendNull(n)
		return
	}
	if n.pending > 0 {
		d.flushNulls(n)
	}
	switch n.kind {
	case schema.String:
		b := n.b.(*array.StringBuilder)
		if v.Type() == fastjson.TypeString {
			sb, _ := v.StringBytes()
			b.BinaryBuilder.Append(validUTF8Bytes(sb))
			return
		}
		d.scratch = v.MarshalTo(d.scratch[:0])
		b.BinaryBuilder.Append(validUTF8Bytes(d.scratch))
	case schema.Int32:
		x, _ := jsonInt(v)
		n.b.(*array.Int32Builder).Append(int32(x))
	case schema.Int64:
		x, _ := jsonInt(v)
		n.b.(*array.Int64Builder).Append(x)
	case schema.Float:
		f, _ := v.Float64()
		n.b.(*array.Float32Builder).Append(float32(f))
	case schema.Double:
		f, _ := v.Float64()
		n.b.(*array.Float64Builder).Append(f)
	case schema.Bool:
		n.b.(*array.BooleanBuilder).Append(v.Type() == fastjson.TypeTrue)
	case schema.Timestamp:
		n.b.(*array.TimestampBuilder).Append(arrow.Timestamp(d.nums[d.ncur]))
		d.ncur++
	case schema.Date:
		n.b.(*array.Date32Builder).Append(arrow.Date32(d.nums[d.ncur]))
		d.ncur++
	case schema.Bytes:
		sb, _ := v.StringBytes()
		d.scratch, _ = decodeBase64(d.scratch[:0], sb)
		n.b.(*array.BinaryBuilder).Append(d.scratch)
	case schema.List:
		n.b.(*array.ListBuilder).Append(true)
		arr, _ := v.Array()
		for _, e := range arr {
			if e.Type() == fastjson.TypeNull {
				e = nil
			}
			d.appendValue(n.elem, e)
		}
	case schema.Map:
		n.b.(*array.MapBuilder).Append(true)
		o, _ := v.Object()
		base := len(d.kvs)
		o.Visit(d.kvFn)
		end := len(d.kvs)
		for i := base; i < end; i++ {
			kv := d.kvs[i]
			n.keys.BinaryBuilder.Append(validUTF8Bytes(kv.k))
			e := kv.v
			if e.Type() == fastjson.TypeNull {
				e = nil
			}
			d.appendValue(n.elem, e)
		}
		d.kvs = d.kvs[:base]
	case schema.Struct:
		d.appendStruct(n, v)
	}
}

func (d *JSON) appendStruct(n *jnode, v *fastjson.Value) {
	base := d.cur
	d.cur += len(n.fields)
	if n.b != nil {
		n.b.(*array.StructBuilder).Append(true)
	}
	unknown := false
	if n.extra >= 0 {
		unknown = d.nums[d.ncur] > 0
		d.ncur++
	}
	for i, f := range n.fields {
		if i == n.extra {
			if unknown {
				d.appendExtra(n, f, v)
			} else if f.nullable {
				d.appendNull(f)
			} else {
				d.flushNulls(f)
				f.b.(*array.StringBuilder).Append("{}")
			}
			continue
		}
		fv, _ := f.resolve(d.slots[base+i])
		d.appendValue(f, fv)
	}
}

// appendExtra writes the members of v that n does not declare as one JSON
// object; null (or "{}" if the column is required) when there are none.
func (d *JSON) appendExtra(n, f *jnode, v *fastjson.Value) {
	o, _ := v.Object()
	base := len(d.kvs)
	o.Visit(d.kvFn)
	end := len(d.kvs)
	buf := d.scratch[:0]
	count := 0
	for i := base; i < end; i++ {
		kv := d.kvs[i]
		if _, known := n.index[string(kv.k)]; known {
			continue
		}
		if count == 0 {
			buf = append(buf, '{')
		} else {
			buf = append(buf, ',')
		}
		count++
		buf = jsonstr.Append(buf, kv.k)
		buf = append(buf, ':')
		buf = kv.v.MarshalTo(buf)
	}
	d.kvs = d.kvs[:base]
	b := f.b.(*array.StringBuilder)
	switch {
	case count > 0:
		d.flushNulls(f)
		buf = append(buf, '}')
		b.BinaryBuilder.Append(validUTF8Bytes(buf))
	case f.nullable:
		d.appendNull(f)
	default:
		d.flushNulls(f)
		b.Append("{}")
	}
	d.scratch = buf
}

// CoerceStrings makes string columns take numbers and booleans too, stored
// as their JSON text ("42", "true"). A loader turns it on for a schema that
// inference widened to string because a field was seen as both; the tracker
// leaves it off, so that a number where the schema wants a string is a
// violation its sender hears about.
func (d *JSON) CoerceStrings(on bool) { d.coerceStrings = on }

// Nulls are appended late and in bulk. Most columns of a typical event
// are null (activity events fill 17 of 52), and a null appended one at a
// time costs a builder call per column per row (StructBuilder's a call per
// field below it too): measured as a fifth of the decoder's time. So a
// null outside lists and maps only counts in its node's pending, and the
// count is appended in one call before the next value of that column, or
// at Flush. A struct's pending nulls become its fields' (arrow's
// StructBuilder.AppendValues appends no field values). Inside a list or
// map a null is appended at once: the list's offsets are taken from its
// element builder's length.

var (
	noValids [256]bool
	noBytes  [256][]byte
)

// appendNull appends a null to n, or counts it.
func (d *JSON) appendNull(n *jnode) {
	if n.deferNulls {
		n.pending++
		return
	}
	n.b.AppendNull()
}

// flushNulls appends n's pending nulls to its builder.
func (d *JSON) flushNulls(n *jnode) {
	p := n.pending
	if p == 0 {
		return
	}
	n.pending = 0
	switch b := n.b.(type) {
	case *array.StructBuilder:
		for left := p; left > 0; left -= len(noValids) {
			b.AppendValues(noValids[:min(left, len(noValids))])
		}
		for _, f := range n.fields {
			f.pending += p
		}
	case *array.StringBuilder:
		for left := p; left > 0; left -= len(noValids) {
			k := min(left, len(noValids))
			b.BinaryBuilder.AppendValues(noBytes[:k], noValids[:k])
		}
	case *array.BinaryBuilder:
		for left := p; left > 0; left -= len(noValids) {
			k := min(left, len(noValids))
			b.AppendValues(noBytes[:k], noValids[:k])
		}
	default:
		b.AppendNulls(p)
	}
}

// flushAll appends every pending null below n, parents first: a struct's
// nulls add to its fields'.
func (d *JSON) flushAll(n *jnode) {
	if n.b != nil {
		d.flushNulls(n)
	}
	for _, f := range n.fields {
		d.flushAll(f)
	}
}
