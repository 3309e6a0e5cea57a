package compat

// JSON Schema compatibility, for the common cases: "reader reads writer"
// when every document valid under the writer's schema is valid under the
// reader's. Checked, at every level of properties and items:
//
//   - type: the reader accepts every type the writer allows (integer
//     widens to number; no type means any);
//   - required: a property the reader requires, the writer requires too,
//     unless the reader gives it a default;
//   - properties and content models, by Confluent's rules (its
//     ObjectSchemaDiff, STRICT policy, the registry's default), and in its
//     difference names: see jsonContent;
//   - enum: the reader's values include every value of the writer's.
//
// Not checked (a later step): allOf/anyOf/oneOf, numeric and string
// bounds, patterns, dependencies.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

func parseJSON(text string) (map[string]any, error) {
	if err := checkDepth(text); err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, fmt.Errorf("invalid JSON schema: %w", err)
	}
	switch s := v.(type) {
	case map[string]any:
		return s, nil
	case bool:
		if s {
			return map[string]any{}, nil
		}
		return map[string]any{"not": map[string]any{}}, nil
	}
	return nil, fmt.Errorf("invalid JSON schema: not an object or boolean")
}

func jsonTypes(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if str, ok := e.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil // any
}

func jsonRequired(s map[string]any) []string {
	var out []string
	if r, ok := s["required"].([]any); ok {
		for _, e := range r {
			if str, ok := e.(string); ok {
				out = append(out, str)
			}
		}
	}
	return out
}

func jsonProps(s map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	if p, ok := s["properties"].(map[string]any); ok {
		for k, v := range p {
			if m := asSchema(v); m != nil {
				out[k] = m
			}
		}
	}
	return out
}

// asSchema turns a subschema into its object form: true is {} and false
// is {"not":{}}, as parseJSON reads a whole boolean schema.
func asSchema(v any) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		return x
	case bool:
		if x {
			return map[string]any{}
		}
		return map[string]any{"not": map[string]any{}}
	}
	return nil
}

// isFalse says whether s accepts nothing (false, as asSchema writes it).
func isFalse(s map[string]any) bool {
	n, ok := s["not"].(map[string]any)
	return ok && len(n) == 0 && len(s) == 1
}

// isEmpty says whether s accepts anything: {} or true, or only
// annotations (Confluent's EmptySchema).
func isEmpty(s map[string]any) bool {
	for k := range s {
		switch k {
		case "title", "description", "$comment", "examples", "default", "$id", "$schema":
		default:
			return false
		}
	}
	return true
}

func hasDefault(s map[string]any) bool {
	_, ok := s["default"]
	return ok
}

// permitsAdditional is false only for additionalProperties false.
func permitsAdditional(s map[string]any) bool {
	b, ok := s["additionalProperties"].(bool)
	return !ok || b
}

// additionalSchema is additionalProperties when it is a schema object
// (true and absent are no schema: any property is fine).
func additionalSchema(s map[string]any) map[string]any {
	m, _ := s["additionalProperties"].(map[string]any)
	return m
}

func unevaluated(s map[string]any) map[string]any {
	v, ok := s["unevaluatedProperties"]
	if !ok {
		return nil
	}
	return asSchema(v)
}

// openContent says whether s accepts any property it does not name:
// additionalProperties true or absent, no patternProperties, and
// unevaluatedProperties true or absent.
func openContent(s map[string]any) bool {
	if !permitsAdditional(s) || additionalSchema(s) != nil {
		return false
	}
	if pp, ok := s["patternProperties"].(map[string]any); ok && len(pp) > 0 {
		return false
	}
	u := unevaluated(s)
	return u == nil || isEmpty(u)
}

// partialContent is the schema a partially open s gives an unnamed
// property k: the first patternProperties entry matching it (patterns in
// sorted order), else additionalProperties as a schema, else
// unevaluatedProperties as a schema. nil when s has none (closed).
func partialContent(s map[string]any, k string) map[string]any {
	if pp, ok := s["patternProperties"].(map[string]any); ok {
		pats := make([]string, 0, len(pp))
		for p := range pp {
			pats = append(pats, p)
		}
		sort.Strings(pats)
		for _, p := range pats {
			// A pattern Go's regexp cannot compile covers nothing here.
			if re, err := regexp.Compile(p); err == nil && re.MatchString(k) {
				return asSchema(pp[p])
			}
		}
	}
	if a := additionalSchema(s); a != nil {
		return a
	}
	if permitsAdditional(s) {
		if u := unevaluated(s); u != nil && !isFalse(u) && !isEmpty(u) {
			return u
		}
	}
	return nil
}

// jsonPath is where a check is, built as a chain and rendered only when a
// message names it: rendering a string per level cost memory quadratic in
// the depth.
type jsonPath struct {
	parent *jsonPath
	seg    string
}

func (p *jsonPath) String() string {
	if p.parent == nil {
		return p.seg
	}
	return p.parent.String() + p.seg
}

func (p *jsonPath) child(seg string) *jsonPath { return &jsonPath{parent: p, seg: seg} }

func jsonReadable(r, w map[string]any, path *jsonPath) []string {
	var msgs []string
	rt, wt := jsonTypes(r), jsonTypes(w)
	if rt != nil {
		if wt == nil {
			msgs = append(msgs, fmt.Sprintf("%s: type narrowed from any to %v", path, rt))
		} else {
			for _, t := range wt {
				if !slices.Contains(rt, t) && !(t == "integer" && slices.Contains(rt, "number")) {
					msgs = append(msgs, fmt.Sprintf("%s: type %s of the writer is not accepted by the reader (%v)", path, t, rt))
				}
			}
		}
	}
	if re, ok := r["enum"].([]any); ok {
		we, wok := w["enum"].([]any)
		if !wok {
			msgs = append(msgs, fmt.Sprintf("%s: enum added", path))
		} else {
			for _, v := range we {
				if !slices.ContainsFunc(re, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
					msgs = append(msgs, fmt.Sprintf("%s: enum value %v removed", path, v))
				}
			}
		}
	}
	rp, wp := jsonProps(r), jsonProps(w)
	wreq := jsonRequired(w)
	for _, p := range jsonRequired(r) {
		// Properties the reader names are judged by jsonContent, with
		// Confluent's exception for a default; a bare required name is
		// still a document of the writer the reader refuses.
		if _, named := rp[p]; !named && !slices.Contains(wreq, p) {
			msgs = append(msgs, fmt.Sprintf("REQUIRED_ATTRIBUTE_ADDED at %s/properties/%s: required by the reader but not by the writer", path, p))
		}
	}
	msgs = append(msgs, jsonContent(r, w, rp, wp, path)...)
	if ri, ok := r["items"].(map[string]any); ok {
		wi, _ := w["items"].(map[string]any)
		if wi == nil {
			wi = map[string]any{}
		}
		msgs = append(msgs, jsonReadable(ri, wi, path.child("/items"))...)
	}
	return msgs
}

// jsonContent compares the properties of two object schemas as
// Confluent's ObjectSchemaDiff does (writer = its original, reader = its
// update) and names the differences its STRICT policy calls incompatible.
// A property the reader adds to an open writer is incompatible unless its
// schema is empty: a writer's document may already carry that name with
// any value. A property the reader drops must still be accepted by the
// reader's content model.
func jsonContent(r, w map[string]any, rp, wp map[string]map[string]any, path *jsonPath) []string {
	var msgs []string
	rreq, wreq := jsonRequired(r), jsonRequired(w)
	names := make([]string, 0, len(rp)+len(wp))
	for k := range rp {
		names = append(names, k)
	}
	for k := range wp {
		if _, ok := rp[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		sub := path.child("/properties/" + k)
		rs, inR := rp[k]
		ws, inW := wp[k]
		switch {
		case inR && inW:
			if slices.Contains(rreq, k) && !slices.Contains(wreq, k) && !hasDefault(rs) {
				msgs = append(msgs, fmt.Sprintf("REQUIRED_ATTRIBUTE_ADDED at %s: required by the reader but not by the writer, without a default", sub))
			}
			msgs = append(msgs, jsonReadable(rs, ws, sub)...)
		case inW: // removed by the reader
			if openContent(r) {
				continue // PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
			}
			if ps := partialContent(r, k); ps != nil {
				if m := jsonReadable(ps, ws, sub); len(m) > 0 {
					msgs = append(msgs, m...)
					msgs = append(msgs, fmt.Sprintf("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL at %s: the reader's patternProperties or additionalProperties do not accept the writer's property", sub))
				}
			} else if !isFalse(ws) {
				msgs = append(msgs, fmt.Sprintf("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL at %s: removed from a reader that allows no additional properties", sub))
			}
		default: // added by the reader
			req := slices.Contains(rreq, k)
			if openContent(w) {
				switch {
				case isEmpty(rs): // PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
				case req && hasDefault(rs):
					msgs = append(msgs, fmt.Sprintf("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL at %s: the writer's open content model may carry it with any value", sub))
				case req:
					msgs = append(msgs, fmt.Sprintf("REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at %s: required by the reader, and the writer's open content model may carry it with any value", sub))
				default:
					msgs = append(msgs, fmt.Sprintf("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at %s: the writer's open content model may carry it with any value (close the writer with additionalProperties false, or give the property an empty schema)", sub))
				}
				continue
			}
			if ps := partialContent(w, k); ps != nil {
				if m := jsonReadable(rs, ps, sub); len(m) > 0 {
					msgs = append(msgs, m...)
					msgs = append(msgs, fmt.Sprintf("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL at %s: the writer's patternProperties or additionalProperties allow values the reader's property does not", sub))
				}
			}
			if req && !hasDefault(rs) {
				msgs = append(msgs, fmt.Sprintf("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL at %s: required by the reader, without a default", sub))
			}
		}
	}
	msgs = append(msgs, jsonAdditional(r, w, path)...)
	return msgs
}

// jsonAdditional compares additionalProperties and unevaluatedProperties
// as Confluent does: a reader may open or widen them, not close or narrow.
func jsonAdditional(r, w map[string]any, path *jsonPath) []string {
	var msgs []string
	ap := path.child("/additionalProperties")
	ra, wa := additionalSchema(r), additionalSchema(w)
	switch {
	case permitsAdditional(r) != permitsAdditional(w):
		if !permitsAdditional(r) {
			msgs = append(msgs, fmt.Sprintf("ADDITIONAL_PROPERTIES_REMOVED at %s: additionalProperties false in the reader but not in the writer", ap))
		}
	case wa == nil && ra != nil:
		msgs = append(msgs, fmt.Sprintf("ADDITIONAL_PROPERTIES_NARROWED at %s: the reader constrains additional properties the writer leaves free", ap))
	case wa != nil && ra != nil:
		msgs = append(msgs, jsonReadable(ra, wa, ap)...)
	}
	ru, wu := unevaluated(r), unevaluated(w)
	up := path.child("/unevaluatedProperties")
	switch {
	case ru == nil:
		// absent in the reader: added or extended, compatible
	case wu == nil && isFalse(ru), wu != nil && !isFalse(wu) && isFalse(ru):
		msgs = append(msgs, fmt.Sprintf("UNEVALUATED_PROPERTIES_REMOVED at %s: unevaluatedProperties false in the reader but not in the writer", up))
	case wu == nil, isEmpty(wu) && !isEmpty(ru):
		msgs = append(msgs, fmt.Sprintf("UNEVALUATED_PROPERTIES_NARROWED at %s: the reader constrains unevaluated properties the writer leaves free", up))
	case isFalse(wu) || isEmpty(ru):
		// added or extended, compatible
	default:
		msgs = append(msgs, jsonReadable(ru, wu, up)...)
	}
	return msgs
}

// parseJSONRefs parses s and replaces each $ref it can resolve (to a
// reference by its name, or a JSON pointer into the same document, as in
// "other.json#/definitions/T" or "#/$defs/T") by what it points to, so
// that the checks see through references. Recursive schemas are expanded
// to a bounded depth and size; a $ref left unexpanded is treated as any
// schema (no constraint), which errs towards "compatible".
func parseJSONRefs(s Schema) (map[string]any, error) {
	root, err := parseJSON(s.Text)
	if err != nil {
		return nil, err
	}
	r := &jsonRefs{docs: map[string]map[string]any{}, budget: 200_000}
	for _, ref := range s.Refs {
		d, err := parseJSON(ref.Text)
		if err != nil {
			return nil, fmt.Errorf("reference %s: %w", ref.Name, err)
		}
		r.docs[ref.Name] = d
	}
	out, _ := r.node(root, root, 0).(map[string]any)
	return out, nil
}

type jsonRefs struct {
	docs   map[string]map[string]any
	budget int // nodes copied; expansion stops when spent
}

// maxRefDepth bounds nested $ref expansions (a recursive schema expands
// this deep, then stays a $ref).
const maxRefDepth = 16

func (r *jsonRefs) node(n any, doc map[string]any, depth int) any {
	r.budget--
	switch v := n.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok && depth < maxRefDepth && r.budget > 0 {
			if target, tdoc := r.lookup(ref, doc); target != nil {
				return r.node(target, tdoc, depth+1)
			}
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = r.node(e, doc, depth)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = r.node(e, doc, depth)
		}
		return out
	}
	return n
}

func (r *jsonRefs) lookup(ref string, doc map[string]any) (any, map[string]any) {
	base, frag, _ := strings.Cut(ref, "#")
	if base != "" {
		d, ok := r.docs[base]
		if !ok {
			return nil, nil
		}
		doc = d
	}
	var cur any = doc
	for _, seg := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if seg == "" {
			continue
		}
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, nil
		}
		if cur, ok = m[seg]; !ok {
			return nil, nil
		}
	}
	if b, ok := cur.(bool); ok {
		if b {
			cur = map[string]any{}
		} else {
			cur = map[string]any{"not": map[string]any{}}
		}
	}
	return cur, doc
}

// ResolveJSON parses a JSON Schema with its references resolved (as the
// checks see it): what the loader maps to columns.
func ResolveJSON(s Schema) (map[string]any, error) { return parseJSONRefs(s) }
