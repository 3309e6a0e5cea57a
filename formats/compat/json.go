package compat

// JSON Schema compatibility, for the common cases: "reader reads writer"
// when every document valid under the writer's schema is valid under the
// reader's. Checked, at every level of properties and items:
//
//   - type: the reader accepts every type the writer allows (integer
//     widens to number; no type means any);
//   - required: a property the reader requires, the writer requires too;
//   - properties the writer has and the reader lacks: fine unless the
//     reader closes its content (additionalProperties false);
//   - properties the reader adds: fine (documents of the writer lacking
//     them stay valid unless the reader requires them, checked above);
//   - additionalProperties: a closed reader needs a closed writer;
//   - enum: the reader's values include every value of the writer's.
//
// Not checked (a later step): $ref, allOf/anyOf/oneOf, numeric and string
// bounds, patterns, dependencies. Confluent's checker is stricter about a
// property added to an open content model; ours follows the documents
// that can actually occur, which is what a consumer notices.

import (
	"encoding/json"
	"fmt"
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
			if m, ok := v.(map[string]any); ok {
				out[k] = m
			} else if b, ok := v.(bool); ok && b {
				out[k] = map[string]any{}
			}
		}
	}
	return out
}

func closed(s map[string]any) bool {
	b, ok := s["additionalProperties"].(bool)
	return ok && !b
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
	wreq := jsonRequired(w)
	for _, p := range jsonRequired(r) {
		if !slices.Contains(wreq, p) {
			msgs = append(msgs, fmt.Sprintf("%s/properties/%s: required by the reader but not by the writer", path, p))
		}
	}
	if closed(r) && !closed(w) {
		msgs = append(msgs, fmt.Sprintf("%s: additionalProperties false in the reader but open in the writer", path))
	}
	rp, wp := jsonProps(r), jsonProps(w)
	names := make([]string, 0, len(wp))
	for k := range wp {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		sub := path.child("/properties/" + k)
		if rs, ok := rp[k]; ok {
			msgs = append(msgs, jsonReadable(rs, wp[k], sub)...)
		} else if closed(r) {
			msgs = append(msgs, fmt.Sprintf("%s: removed from a reader that allows no additional properties", sub))
		}
	}
	if ri, ok := r["items"].(map[string]any); ok {
		wi, _ := w["items"].(map[string]any)
		if wi == nil {
			wi = map[string]any{}
		}
		msgs = append(msgs, jsonReadable(ri, wi, path.child("/items"))...)
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
