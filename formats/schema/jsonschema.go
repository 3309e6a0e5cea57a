package schema

import (
	"fmt"
	"maps"
	"slices"
)

// FromJSONSchema maps a JSON Schema document (an object with properties,
// its $refs resolved) to a Tributary schema, the table of a topic whose
// writers register JSON Schema:
//
//	string                string (format date-time: timestamp(ms); date: date)
//	integer, number       int64, double
//	boolean               bool
//	object + properties   struct; object + additionalProperties schema: map
//	array + items         list
//
// A property is nullable unless it is required and its type does not allow
// null. A property with no single type (none, several, combinators) has no
// column and is left out.
func FromJSONSchema(doc map[string]any, name string, version int) (*Schema, error) {
	t, _, ok := jsonSchemaType(doc, 0)
	if !ok || t.Kind != Struct {
		return nil, fmt.Errorf("formats/schema: the JSON Schema is not an object with properties")
	}
	return &Schema{Name: name, Version: version, Fields: t.Fields}, nil
}

func jsonSchemaType(s map[string]any, depth int) (t Type, nullable, ok bool) {
	if depth > 64 {
		return Type{}, false, false
	}
	var types []string
	switch v := s["type"].(type) {
	case string:
		types = []string{v}
	case []any:
		for _, e := range v {
			if str, isStr := e.(string); isStr {
				types = append(types, str)
			}
		}
	}
	var one string
	for _, ty := range types {
		if ty == "null" {
			nullable = true
			continue
		}
		if one != "" {
			return Type{}, nullable, false
		}
		one = ty
	}
	switch one {
	case "string":
		switch s["format"] {
		case "date-time":
			return Type{Kind: Timestamp, Unit: Millis}, nullable, true
		case "date":
			return Type{Kind: Date}, nullable, true
		}
		return Type{Kind: String}, nullable, true
	case "integer":
		return Type{Kind: Int64}, nullable, true
	case "number":
		return Type{Kind: Double}, nullable, true
	case "boolean":
		return Type{Kind: Bool}, nullable, true
	case "array":
		items, _ := s["items"].(map[string]any)
		e, _, ok := jsonSchemaType(items, depth+1)
		if !ok {
			return Type{}, nullable, false
		}
		return Type{Kind: List, Elem: &e}, nullable, true
	case "object":
		props, _ := s["properties"].(map[string]any)
		if len(props) == 0 {
			ap, _ := s["additionalProperties"].(map[string]any)
			e, _, ok := jsonSchemaType(ap, depth+1)
			if !ok {
				return Type{}, nullable, false
			}
			return Type{Kind: Map, Elem: &e}, nullable, true
		}
		required := map[string]bool{}
		if r, isList := s["required"].([]any); isList {
			for _, e := range r {
				if str, isStr := e.(string); isStr {
					required[str] = true
				}
			}
		}
		var fields []Field
		for _, n := range sortedKeys(props) {
			ps, _ := props[n].(map[string]any)
			ft, fnull, ok := jsonSchemaType(ps, depth+1)
			if !ok {
				continue
			}
			doc, _ := ps["description"].(string)
			fields = append(fields, Field{Name: n, Type: ft, Nullable: fnull || !required[n], Doc: doc})
		}
		return Type{Kind: Struct, Fields: fields}, nullable, true
	}
	return Type{}, nullable, false
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
