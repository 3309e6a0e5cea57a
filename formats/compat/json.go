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
