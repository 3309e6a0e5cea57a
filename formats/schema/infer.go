package schema

// Inference of a schema from sample JSON records, for topics that declare
// none. It runs once per topic on a few thousand records, not on the hot
// path, so it decodes with encoding/json into generic values.
//
// Two passes: every sample is folded into a shape tree (at each position,
// how often each JSON kind was seen, and the shapes of object members and
// array elements), then the tree is resolved into fields:
//
//   - kinds widen: int → double → string, bool with anything else → string,
//     strings that are all RFC 3339 timestamps → timestamp (us when any has
//     more than millisecond precision), all dates → date; a position only
//     ever null → string (any later value fits, as its JSON text);
//   - objects → struct, arrays → list of the widened element type, empty
//     objects → string, empty arrays → list<string>;
//   - a key missing from some objects, or null in some → nullable;
//   - a key whose values are objects in some records and not in others
//     (or arrays and not), whose name cannot be a column, or which clashes
//     with another ignoring case, is unstable: it goes to the level's _extra
//     column (a string holding one JSON object);
//   - a level with more than MaxKeys distinct keys is a dictionary, not a
//     record: nested, and with values of one stable type, it becomes
//     map<T>; otherwise only the keys present in every object stay columns
//     and the rest go to _extra;
//   - deeper than MaxDepth, objects and arrays are kept as strings (their
//     JSON text).
//
// A string column takes any JSON value: strings as they are, anything else
// as its JSON text. That is what makes widening to string safe.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// InferOptions tunes Infer. Zero values take the defaults.
type InferOptions struct {
	// Name of the inferred schema; "inferred" by default.
	Name string
	// MaxKeys is the number of distinct keys above which a level is taken
	// for a dictionary (see the package notes); 1000 by default.
	MaxKeys int
	// MaxDepth is the deepest nesting of structs and lists kept as such
	// (a top-level field is at depth 1); deeper values are strings of
	// JSON text. 32 by
	// default.
	MaxDepth int
}

func (o InferOptions) withDefaults() InferOptions {
	if o.Name == "" {
		o.Name = "inferred"
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = 1000
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = 32
	}
	return o
}

// Infer infers a schema from sample records, each one JSON object, with the
// default options. Marshal prints it as YAML for the user to review.
func Infer(samples [][]byte) (*Schema, error) { return InferWith(samples, InferOptions{}) }

// InferWith is Infer with options. A sample that is not one JSON object is
// an error naming it.
func InferWith(samples [][]byte, opts InferOptions) (*Schema, error) {
	opts = opts.withDefaults()
	if len(samples) == 0 {
		return nil, fmt.Errorf("formats/schema: infer: no samples")
	}
	root := &shape{}
	for i, data := range samples {
		v, err := decodeOrdered(data)
		if err != nil {
			return nil, fmt.Errorf("formats/schema: infer: sample %d: %v", i, err)
		}
		if _, ok := v.(*object); !ok {
			return nil, fmt.Errorf("formats/schema: infer: sample %d: not a JSON object", i)
		}
		root.add(v, 0, opts.MaxDepth)
	}
	inf := &inferrer{opts: opts}
	fields := inf.objectFields(root, nil)
	s := &Schema{
		Name:   opts.Name,
		Doc:    fmt.Sprintf("Inferred from %d JSON samples. Review the types, nullability and docs before use.", len(samples)),
		Fields: fields,
	}
	if err := s.Validate(); err != nil {
		// A bug here, not bad input: inference only makes valid schemas.
		return nil, fmt.Errorf("formats/schema: infer: %w", err)
	}
	return s, nil
}

// shape is what was seen at one position of the records.
type shape struct {
	seen                       int // values, null included
	nulls, bools, ints, floats int
	strings                    int
	timestamps, micros, dates  int // strings that parse as such
	objs, arrs                 int
	keys                       map[string]*shape // members of the objects
	order                      []string          // keys, first seen first
	elem                       *shape            // elements of the arrays
	deep                       bool              // objects or arrays below MaxDepth
}

func (s *shape) add(v any, depth, maxDepth int) {
	s.seen++
	switch v := v.(type) {
	case nil:
		s.nulls++
	case bool:
		s.bools++
	case json.Number:
		if _, err := v.Int64(); err == nil {
			s.ints++
		} else {
			s.floats++ // fractions, exponents, and integers beyond int64
		}
	case string:
		s.strings++
		if len(v) >= len("2006-01-02T15:04:05Z") && len(v) <= 40 {
			if _, err := time.Parse(time.RFC3339Nano, v); err == nil {
				s.timestamps++
				if frac := fraction(v); frac > 3 {
					s.micros++
				}
			}
		} else if len(v) == len("2006-01-02") {
			if _, err := time.Parse(time.DateOnly, v); err == nil {
				s.dates++
			}
		}
	case *object:
		s.objs++
		if depth > maxDepth {
			s.deep = true
			return
		}
		if s.keys == nil {
			s.keys = map[string]*shape{}
		}
		for i, k := range v.keys {
			c := s.keys[k]
			if c == nil {
				c = &shape{}
				s.keys[k] = c
				s.order = append(s.order, k)
			}
			c.add(v.vals[i], depth+1, maxDepth)
		}
	case []any:
		s.arrs++
		if depth > maxDepth {
			s.deep = true
			return
		}
		if s.elem == nil {
			s.elem = &shape{}
		}
		for _, e := range v {
			s.elem.add(e, depth+1, maxDepth)
		}
	}
}

// fraction is the number of fractional-second digits of an RFC 3339 time.
func fraction(v string) int {
	dot := strings.IndexByte(v, '.')
	if dot < 0 {
		return 0
	}
	n := 0
	for _, c := range v[dot+1:] {
		if c < '0' || c > '9' {
			break
		}
		n++
	}
	return n
}

// merge folds o into s, for the values of a dictionary.
func (s *shape) merge(o *shape) {
	s.seen += o.seen
	s.nulls += o.nulls
	s.bools += o.bools
	s.ints += o.ints
	s.floats += o.floats
	s.strings += o.strings
	s.timestamps += o.timestamps
	s.micros += o.micros
	s.dates += o.dates
	s.objs += o.objs
	s.arrs += o.arrs
	s.deep = s.deep || o.deep
	for _, k := range o.order {
		c := s.keys[k]
		if c == nil {
			if s.keys == nil {
				s.keys = map[string]*shape{}
			}
			c = &shape{}
			s.keys[k] = c
			s.order = append(s.order, k)
		}
		c.merge(o.keys[k])
	}
	if o.elem != nil {
		if s.elem == nil {
			s.elem = &shape{}
		}
		s.elem.merge(o.elem)
	}
}

type inferrer struct{ opts InferOptions }

// typeOf resolves a shape into a type, or explains why it has none.
func (inf *inferrer) typeOf(s *shape, path []string) (Type, string) {
	scalars := s.bools + s.ints + s.floats + s.strings
	switch {
	case s.objs > 0 && (scalars > 0 || s.arrs > 0):
		return Type{}, "an object in some records, not in others"
	case s.arrs > 0 && scalars > 0:
		return Type{}, "a list in some records, not in others"
	case s.deep:
		return Type{Kind: String}, ""
	case s.objs > 0:
		if len(s.keys) == 0 {
			return Type{Kind: String}, "" // only ever {}
		}
		if len(s.keys) > inf.opts.MaxKeys {
			all := &shape{}
			for _, k := range s.order {
				all.merge(s.keys[k])
			}
			if t, why := inf.typeOf(all, append(path, "*")); why == "" {
				return Type{Kind: Map, Elem: &t}, ""
			}
		}
		fields := inf.objectFields(s, path)
		if len(fields) == 1 && fields[0].Name == Extra {
			return Type{Kind: String}, ""
		}
		return Type{Kind: Struct, Fields: fields}, ""
	case s.arrs > 0:
		if s.elem == nil || s.elem.seen == s.elem.nulls {
			return Type{Kind: List, Elem: &Type{Kind: String}}, ""
		}
		t, why := inf.typeOf(s.elem, path)
		if why != "" {
			return Type{}, "its elements are " + why
		}
		return Type{Kind: List, Elem: &t}, ""
	case s.bools > 0 && s.bools < scalars:
		return Type{Kind: String}, ""
	case s.bools > 0:
		return Type{Kind: Bool}, ""
	case s.strings > 0 && s.strings < scalars:
		return Type{Kind: String}, ""
	case s.strings > 0 && s.timestamps == s.strings:
		if s.micros > 0 {
			return Type{Kind: Timestamp, Unit: Micros}, ""
		}
		return Type{Kind: Timestamp, Unit: Millis}, ""
	case s.strings > 0 && s.dates == s.strings:
		return Type{Kind: Date}, ""
	case s.strings > 0:
		return Type{Kind: String}, ""
	case s.floats > 0:
		return Type{Kind: Double}, ""
	case s.ints > 0:
		return Type{Kind: Int64}, ""
	}
	return Type{Kind: String}, "" // only ever null
}

// objectFields resolves the members of the objects of s.
func (inf *inferrer) objectFields(s *shape, path []string) []Field {
	var fields []Field
	var extra []string
	taken := map[string]bool{strings.ToLower(Extra): true}
	dictionary := len(s.keys) > inf.opts.MaxKeys
	for _, k := range s.order {
		c := s.keys[k]
		why := ""
		switch {
		case k == Extra:
			why = "the name of the column for undeclared keys"
		case !ValidName(k):
			why = "not a valid column name"
		case taken[strings.ToLower(k)]:
			why = "clashes with another key ignoring case"
		case dictionary && c.seen < s.objs:
			why = "one of too many distinct keys"
		case dictionary && len(fields) >= inf.opts.MaxKeys:
			why = "one of too many distinct keys"
		}
		var t Type
		if why == "" {
			t, why = inf.typeOf(c, append(append([]string(nil), path...), k))
		}
		if why != "" {
			extra = append(extra, fmt.Sprintf("%s (%s)", k, why))
			continue
		}
		taken[strings.ToLower(k)] = true
		fields = append(fields, Field{
			Name:     k,
			Type:     t,
			Nullable: c.nulls > 0 || c.seen < s.objs,
			Doc:      describe(c, s.objs),
		})
	}
	if len(extra) > 0 {
		const show = 10
		doc := "Keys kept as one JSON object: "
		if len(extra) > show {
			doc += strings.Join(extra[:show], ", ") + fmt.Sprintf(" and %d more.", len(extra)-show)
		} else {
			doc += strings.Join(extra, ", ") + "."
		}
		fields = append(fields, Field{Name: Extra, Type: Type{Kind: String}, Nullable: true, Doc: doc})
	}
	return fields
}

// describe says what inference saw, for the user who reviews the schema.
func describe(s *shape, parents int) string {
	var kinds []string
	for _, k := range []struct {
		n    int
		name string
	}{{s.bools, "bool"}, {s.ints, "integer"}, {s.floats, "fraction"}, {s.strings, "string"}, {s.objs, "object"}, {s.arrs, "list"}} {
		if k.n > 0 {
			kinds = append(kinds, k.name)
		}
	}
	doc := fmt.Sprintf("Inferred: present in %d of %d", s.seen, parents)
	if s.nulls > 0 {
		doc += fmt.Sprintf(", null in %d", s.nulls)
	}
	if len(kinds) > 1 {
		doc += "; seen as " + strings.Join(kinds, ", ")
	}
	return doc + "."
}

// object is a JSON object with its keys in document order, so that the
// inferred fields come in the order the records write them.
type object struct {
	keys []string
	vals []any
}

// decodeOrdered decodes one JSON value: *object, []any, json.Number,
// string, bool or nil. A key given twice keeps its first place and its
// last value, as encoding/json does.
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// maxJSONDepth is encoding/json's own limit on nesting.
const maxJSONDepth = 10000

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested more than %d deep", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			o := &object{}
			at := map[string]int{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if i, dup := at[k]; dup {
					o.vals[i] = v
					continue
				}
				at[k] = len(o.keys)
				o.keys = append(o.keys, k)
				o.vals = append(o.vals, v)
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			l := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err := dec.Token() // ']'
			return l, err
		}
		return nil, fmt.Errorf("unexpected %v", tok)
	}
	return tok, nil
}
