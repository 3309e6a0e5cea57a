package schema

// The YAML schema language. A schema file is a mapping:
//
//	name: shop            # required
//	version: 3            # optional, >= 0
//	doc: Events of the shop.
//	extends: activity     # optional: the standard activity fields come first
//	fields:
//	  - name: price       # [A-Za-z_][A-Za-z0-9_]*, unique per level, ignoring case
//	    type: double      # see parseType
//	    nullable: true    # default false
//	    default: 0        # checked against the type, in the field's JSON form
//	    from: properties.price   # top-level fields only
//	    doc: Unit price in EUR.
//	  - name: items
//	    type: list<struct>       # "fields" describe the innermost struct
//	    fields: [...]
//
// Parse collects every problem it finds, each with its line and field path,
// instead of stopping at the first.

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FieldError is one problem with a schema: where it is and what is wrong.
type FieldError struct {
	// Path is the field at fault, "context.page.url"; empty for the schema
	// as a whole (its name, version, extends).
	Path string
	// Line is the line of the YAML document, 0 when the schema was not
	// parsed from one.
	Line int
	Msg  string
}

func (e FieldError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one schema. Parse and Validate return
// it (as an error) when there is at least one.
type Errors []FieldError

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return "formats/schema: invalid schema:\n\t" + strings.Join(msgs, "\n\t")
}

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidName reports whether s may name a field: letters, digits and
// underscores, not starting with a digit, so that Hive, Spark, Trino and
// Avro take it as it is.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// ParseFile parses the schema in the YAML file at path.
func ParseFile(path string) (*Schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("formats/schema: %w", err)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Parse parses a schema written in the YAML schema language and validates
// it. Defaults are normalised to their JSON form: int64 for integers,
// float64 for float and double, strings for timestamps given as RFC 3339,
// dates and base64 bytes.
func Parse(data []byte) (*Schema, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("formats/schema: %w", err)
	}
	p := &parser{}
	s := p.schema(&doc)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return s, nil
}

type parser struct{ errs Errors }

func (p *parser) errorf(n *yaml.Node, path, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, FieldError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// mapping returns the keys of a mapping node in order with their values,
// reporting keys outside allowed and duplicates.
func (p *parser) mapping(n *yaml.Node, path, what string, allowed ...string) (keys []string, vals map[string]*yaml.Node, ok bool) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, path, "%s must be a mapping", what)
		return nil, nil, false
	}
	vals = make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.errorf(k, path, "%s has a key that is not a string", what)
			continue
		}
		if _, dup := vals[k.Value]; dup {
			p.errorf(k, path, "%q given twice", k.Value)
			continue
		}
		known := false
		for _, a := range allowed {
			known = known || a == k.Value
		}
		if !known {
			p.errorf(k, path, "unknown key %q (expected one of %s)", k.Value, strings.Join(allowed, ", "))
			continue
		}
		keys = append(keys, k.Value)
		vals[k.Value] = v
	}
	return keys, vals, true
}

func (p *parser) scalar(n *yaml.Node, path, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, path, "%s must be a single value", what)
		return "", false
	}
	return n.Value, true
}

func (p *parser) schema(doc *yaml.Node) *Schema {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		p.errorf(doc, "", "empty document")
		return nil
	}
	_, v, ok := p.mapping(doc.Content[0], "", "a schema", "name", "version", "doc", "extends", "fields")
	if !ok {
		return nil
	}
	s := &Schema{}
	if n := v["name"]; n == nil {
		p.errorf(doc.Content[0], "", "name is missing")
	} else if s.Name, ok = p.scalar(n, "", "name"); ok && s.Name == "" {
		p.errorf(n, "", "name is empty")
	}
	if n := v["version"]; n != nil {
		if err := n.Decode(&s.Version); err != nil || s.Version < 0 {
			p.errorf(n, "", "version must be a whole number >= 0, not %q", n.Value)
		}
	}
	if n := v["doc"]; n != nil {
		s.Doc, _ = p.scalar(n, "", "doc")
	}
	if n := v["extends"]; n != nil {
		if base, ok := p.scalar(n, "", "extends"); ok {
			switch base {
			case "activity":
				s.Fields = Activity().Fields
			default:
				p.errorf(n, "", "extends %q: the only schema to extend is \"activity\"", base)
			}
		}
	}
	if n := v["fields"]; n == nil {
		if v["extends"] == nil {
			p.errorf(doc.Content[0], "", "fields are missing")
		}
	} else {
		s.Fields = append(s.Fields, p.fields(n, nil)...)
	}
	if len(p.errs) == 0 {
		// What the YAML cannot show by position: duplicates across
		// extends, names, from paths. Checked by the same code as
		// programmatic schemas.
		if err := s.Validate(); err != nil {
			p.errs = append(p.errs, err.(Errors)...)
		}
	}
	return s
}

func (p *parser) fields(n *yaml.Node, parent []string) []Field {
	path := Path(parent...)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, path, "fields must be a list")
		return nil
	}
	if len(n.Content) == 0 {
		p.errorf(n, path, "fields are empty")
	}
	out := make([]Field, 0, len(n.Content))
	var nodes []*yaml.Node // out's
	seen := map[string]int{}
	for i, fn := range n.Content {
		f, ok := p.field(fn, parent, i)
		if !ok {
			continue
		}
		if line, dup := seen[strings.ToLower(f.Name)]; dup {
			p.errorf(fn, Path(append(parent, f.Name)...), "declared twice (also on line %d; names are compared ignoring case, as Hive does)", line)
			continue
		}
		seen[strings.ToLower(f.Name)] = fn.Line
		out = append(out, f)
		nodes = append(nodes, fn)
	}
	// A rename must say one thing: which column's id a field takes
	// decides for good what its old files read as (docs/iceberg.md).
	aliasOf := map[string]string{}
	for i, f := range out {
		for _, a := range f.Aliases {
			if _, ok := seen[strings.ToLower(a)]; ok {
				p.errorf(nodes[i], Path(append(parent, f.Name)...), "alias %q is the name of another field here: a swap of names, or a rename of a field still there, is ambiguous (give the fields new names)", a)
			} else if other, ok := aliasOf[strings.ToLower(a)]; ok {
				p.errorf(nodes[i], Path(append(parent, f.Name)...), "alias %q is listed by %s too: only one field can take its column", a, other)
			}
			aliasOf[strings.ToLower(a)] = f.Name
		}
	}
	return out
}

func (p *parser) field(n *yaml.Node, parent []string, i int) (Field, bool) {
	where := Path(parent...)
	if where == "" {
		where = fmt.Sprintf("fields[%d]", i)
	} else {
		where = fmt.Sprintf("%s.fields[%d]", where, i)
	}
	// Name the field by its name in every message when it has one.
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k, v := n.Content[i], n.Content[i+1]; k.Value == "name" && v.Kind == yaml.ScalarNode && v.Value != "" {
				where = Path(append(append([]string(nil), parent...), v.Value)...)
			}
		}
	}
	_, v, ok := p.mapping(n, where, "a field", "name", "type", "nullable", "default", "from", "doc", "aliases", "fields")
	if !ok {
		return Field{}, false
	}
	var f Field
	nn := v["name"]
	if nn == nil {
		p.errorf(n, where, "name is missing")
		return Field{}, false
	}
	if f.Name, ok = p.scalar(nn, where, "name"); !ok {
		return Field{}, false
	}
	path := append(append([]string(nil), parent...), f.Name)
	fp := Path(path...)
	if !ValidName(f.Name) {
		p.errorf(nn, fp, "invalid name: use letters, digits and _, not starting with a digit")
	}
	if n := v["nullable"]; n != nil {
		if err := n.Decode(&f.Nullable); err != nil {
			p.errorf(n, fp, "nullable must be true or false, not %q", n.Value)
		}
	}
	if n := v["doc"]; n != nil {
		f.Doc, _ = p.scalar(n, fp, "doc")
	}
	if n := v["aliases"]; n != nil {
		if err := n.Decode(&f.Aliases); err != nil {
			p.errorf(n, fp, "aliases must be a list of former names")
		}
		for _, a := range f.Aliases {
			if !ValidName(a) || a == f.Name {
				p.errorf(n, fp, "alias %q: want a former name of the field (letters, digits and _, not its name)", a)
			}
		}
	}
	if n := v["from"]; n != nil {
		if f.From, ok = p.scalar(n, fp, "from"); ok {
			if len(parent) > 0 {
				p.errorf(n, fp, "from is allowed on top-level fields only")
			} else if msg := checkFrom(f.From); msg != "" {
				p.errorf(n, fp, "%s", msg)
			}
		}
	}
	tn := v["type"]
	if tn == nil {
		p.errorf(n, fp, "type is missing")
		return f, true
	}
	ts, ok := p.scalar(tn, fp, "type")
	if !ok {
		return f, true
	}
	t, err := ParseType(ts)
	if err != nil {
		p.errorf(tn, fp, "%v", err)
		return f, true
	}
	inner := &t
	for inner.Kind == List || inner.Kind == Map {
		inner = inner.Elem
	}
	if fn := v["fields"]; fn != nil {
		if inner.Kind != Struct {
			p.errorf(fn, fp, "fields given, but type %s holds no struct", t)
		} else {
			inner.Fields = p.fields(fn, path)
		}
	} else if inner.Kind == Struct {
		p.errorf(tn, fp, "type %s needs fields", t)
	}
	f.Type = t
	if dn := v["default"]; dn != nil {
		if raw, err := nodeValue(dn); err != nil {
			p.errorf(dn, fp, "default: %v", err)
		} else if dn.Tag == "!!null" {
			if !f.Nullable {
				p.errorf(dn, fp, "default is null, but the field is not nullable")
			}
		} else if def, err := normalizeDefault(t, raw, fp); err != nil {
			p.errorf(dn, err.Path, "default: %s", err.Msg)
		} else {
			f.Default = def
		}
	}
	return f, true
}

func checkFrom(from string) string {
	if from == "" {
		return "from is empty"
	}
	for _, part := range strings.Split(from, ".") {
		if part == "" {
			return fmt.Sprintf("from %q has an empty part", from)
		}
	}
	return ""
}

// ParseType parses a type as the schema language writes it: string, int32,
// int64, float, double, bool, timestamp (= timestamp(ms)), timestamp(ms),
// timestamp(us), date, bytes, struct, list<T>, map<T> or
// map<string,T>. A struct's fields are not part of the type string.
func ParseType(s string) (Type, error) {
	s = strings.TrimSpace(s)
	open := strings.IndexAny(s, "<(")
	if open < 0 {
		switch k := Kind(s); k {
		case String, Int32, Int64, Float, Double, Bool, Date, Bytes, Struct:
			return Type{Kind: k}, nil
		case Timestamp:
			return Type{Kind: Timestamp, Unit: Millis}, nil
		case List, Map:
			return Type{}, fmt.Errorf("type %q needs an element type: %s<T>", s, s)
		}
		return Type{}, fmt.Errorf("unknown type %q", s)
	}
	head, rest := strings.TrimSpace(s[:open]), s[open:]
	switch head {
	case "timestamp":
		switch strings.ReplaceAll(rest, " ", "") {
		case "(ms)":
			return Type{Kind: Timestamp, Unit: Millis}, nil
		case "(us)":
			return Type{Kind: Timestamp, Unit: Micros}, nil
		}
		return Type{}, fmt.Errorf("type %q: a timestamp is timestamp(ms) or timestamp(us)", s)
	case "list", "map":
		if rest[0] != '<' || rest[len(rest)-1] != '>' {
			return Type{}, fmt.Errorf("type %q: expected %s<T>", s, head)
		}
		inner := strings.TrimSpace(rest[1 : len(rest)-1])
		if head == "map" {
			// map<string,T>: keys are always strings; accept the long form.
			if k, v, ok := strings.Cut(inner, ","); ok && !strings.ContainsAny(k, "<(") {
				if strings.TrimSpace(k) != "string" {
					return Type{}, fmt.Errorf("type %q: map keys are strings", s)
				}
				inner = strings.TrimSpace(v)
			}
		}
		if inner == "" {
			return Type{}, fmt.Errorf("type %q: missing element type", s)
		}
		elem, err := ParseType(inner)
		if err != nil {
			return Type{}, fmt.Errorf("type %q: %w", s, err)
		}
		return Type{Kind: Kind(head), Elem: &elem}, nil
	}
	return Type{}, fmt.Errorf("unknown type %q", s)
}

// Validate checks a schema built in code the way Parse checks a file:
// names, unique names per level (ignoring case), well-formed types,
// defaults of the right type, from paths on top-level fields only.
func (s *Schema) Validate() error {
	var es Errors
	if s.Name == "" {
		es = append(es, FieldError{Msg: "name is empty"})
	}
	if s.Version < 0 {
		es = append(es, FieldError{Msg: "version is negative"})
	}
	if len(s.Fields) == 0 {
		es = append(es, FieldError{Msg: "no fields"})
	}
	validateFields(s.Fields, nil, &es)
	if len(es) == 0 {
		return nil
	}
	return es
}

func validateFields(fs []Field, parent []string, es *Errors) {
	seen := map[string]bool{}
	for _, f := range fs {
		path := append(append([]string(nil), parent...), f.Name)
		fp := Path(path...)
		add := func(format string, args ...any) {
			*es = append(*es, FieldError{Path: fp, Msg: fmt.Sprintf(format, args...)})
		}
		if !ValidName(f.Name) {
			add("invalid name: use letters, digits and _, not starting with a digit")
		}
		if seen[strings.ToLower(f.Name)] {
			add("declared twice (names are compared ignoring case, as Hive does)")
		}
		seen[strings.ToLower(f.Name)] = true
		if f.From != "" {
			if len(parent) > 0 {
				add("from is allowed on top-level fields only")
			} else if msg := checkFrom(f.From); msg != "" {
				add("%s", msg)
			}
		}
		if f.Name == Extra && f.Type.Kind != String {
			add("%s keeps undeclared keys as JSON text and must be a string", Extra)
		}
		if !validateType(f.Type, path, es) {
			continue
		}
		if f.Default != nil {
			if _, err := normalizeDefault(f.Type, f.Default, fp); err != nil {
				*es = append(*es, FieldError{Path: err.Path, Msg: "default: " + err.Msg})
			}
		}
	}
}

func validateType(t Type, path []string, es *Errors) bool {
	fp := Path(path...)
	bad := func(format string, args ...any) bool {
		*es = append(*es, FieldError{Path: fp, Msg: fmt.Sprintf(format, args...)})
		return false
	}
	switch t.Kind {
	case String, Int32, Int64, Float, Double, Bool, Date, Bytes:
	case Timestamp:
		if t.Unit != Millis && t.Unit != Micros {
			return bad("timestamp unit %q: want ms or us", t.Unit)
		}
	case List, Map:
		if t.Elem == nil {
			return bad("%s without an element type", t.Kind)
		}
		if !validateType(*t.Elem, path, es) {
			return false
		}
	case Struct:
		if len(t.Fields) == 0 {
			return bad("struct without fields (Parquet cannot write an empty group)")
		}
		n := len(*es)
		validateFields(t.Fields, path, es)
		return len(*es) == n
	default:
		return bad("unknown type %q", t.Kind)
	}
	if t.Kind != Struct && len(t.Fields) > 0 {
		return bad("type %s has fields", t.Kind)
	}
	if t.Kind != List && t.Kind != Map && t.Elem != nil {
		return bad("type %s has an element type", t.Kind)
	}
	return true
}

// Marshal renders s in the YAML schema language; Parse(Marshal(s)) gives s
// back. A schema parsed with extends is written out in full.
func Marshal(s *Schema) ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	addScalar(root, "name", s.Name)
	if s.Version != 0 {
		addKV(root, "version", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(s.Version)})
	}
	if s.Doc != "" {
		addScalar(root, "doc", s.Doc)
	}
	fs, err := marshalFields(s.Fields)
	if err != nil {
		return nil, err
	}
	addKV(root, "fields", fs)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("formats/schema: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("formats/schema: %w", err)
	}
	return buf.Bytes(), nil
}

func marshalFields(fs []Field) (*yaml.Node, error) {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for _, f := range fs {
		m := &yaml.Node{Kind: yaml.MappingNode}
		addScalar(m, "name", f.Name)
		addScalar(m, "type", f.Type.String())
		if f.Nullable {
			addKV(m, "nullable", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
		}
		if f.Default != nil {
			var n yaml.Node
			if err := n.Encode(yamlable(f.Default)); err != nil {
				return nil, fmt.Errorf("formats/schema: %s: default: %w", f.Name, err)
			}
			addKV(m, "default", &n)
		}
		if f.From != "" {
			addScalar(m, "from", f.From)
		}
		if f.Doc != "" {
			addScalar(m, "doc", f.Doc)
		}
		if len(f.Aliases) > 0 {
			var n yaml.Node
			if err := n.Encode(f.Aliases); err != nil {
				return nil, fmt.Errorf("formats/schema: %s: aliases: %w", f.Name, err)
			}
			n.Style = yaml.FlowStyle
			addKV(m, "aliases", &n)
		}
		inner := &f.Type
		for (inner.Kind == List || inner.Kind == Map) && inner.Elem != nil {
			inner = inner.Elem
		}
		if inner.Kind == Struct {
			sub, err := marshalFields(inner.Fields)
			if err != nil {
				return nil, err
			}
			addKV(m, "fields", sub)
		}
		seq.Content = append(seq.Content, m)
	}
	return seq, nil
}

// yamlable orders map keys so that the output is stable.
func yamlable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var val yaml.Node
			if err := val.Encode(yamlable(v[k])); err != nil {
				return v
			}
			addKV(n, k, &val)
		}
		return n
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = yamlable(e)
		}
		return out
	}
	return v
}

func addKV(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

func addScalar(m *yaml.Node, key, value string) {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
	if strings.Contains(value, "\n") {
		n.Style = yaml.LiteralStyle
	}
	addKV(m, key, n)
}

// maxDefaultValues bounds the values of one default, aliases expanded, so
// that a few lines of YAML aliases cannot make a billion values.
const maxDefaultValues = 10000

// nodeValue decodes a YAML value as JSON would see it. Unquoted dates and
// times stay text: yaml.v3 would make them time.Time, and a string field's
// default "2024-01-01" must stay as written.
func nodeValue(n *yaml.Node) (any, error) {
	budget := maxDefaultValues
	return nodeValueBudget(n, &budget)
}

func nodeValueBudget(n *yaml.Node, budget *int) (any, error) {
	if *budget--; *budget < 0 {
		return nil, fmt.Errorf("more than %d values", maxDefaultValues)
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!timestamp" {
			return n.Value, nil
		}
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := nodeValueBudget(c, budget)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := nodeValueBudget(n.Content[i+1], budget)
			if err != nil {
				return nil, err
			}
			out[n.Content[i].Value] = v
		}
		return out, nil
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("unknown alias")
		}
		return nodeValueBudget(n.Alias, budget)
	}
	var v any
	err := n.Decode(&v)
	return v, err
}
