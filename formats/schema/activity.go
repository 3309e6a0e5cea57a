package schema

import (
	_ "embed"
	"fmt"
	"sync"
)

//go:embed activity.yaml
var activityYAML []byte

var (
	activityOnce   sync.Once
	activitySchema *Schema
)

// activity parses activity.yaml once. (Not a sync.OnceValue: Parse refers
// back to Activity for "extends", an initialisation cycle for a package
// variable.)
func activity() *Schema {
	activityOnce.Do(func() {
		s, err := Parse(activityYAML)
		if err != nil {
			panic(fmt.Sprintf("formats/schema: the embedded activity.yaml is invalid: %v", err))
		}
		activitySchema = s
	})
	return activitySchema
}

// Activity is the standard activity-event schema (activity.yaml, embedded):
// a superset of the Segment spec. Each call returns a copy the caller may
// change, for instance to append promoted properties.
func Activity() *Schema { return activity().Clone() }

// ActivityYAML is the text of activity.yaml, for `tributary` to print.
func ActivityYAML() []byte { return append([]byte(nil), activityYAML...) }

// Clone is a deep copy of s.
func (s *Schema) Clone() *Schema {
	c := *s
	c.Fields = cloneFields(s.Fields)
	return &c
}

func cloneFields(fs []Field) []Field {
	if fs == nil {
		return nil
	}
	out := make([]Field, len(fs))
	for i, f := range fs {
		f.Type = cloneType(f.Type)
		f.Default = cloneValue(f.Default)
		out[i] = f
	}
	return out
}

func cloneType(t Type) Type {
	if t.Elem != nil {
		e := cloneType(*t.Elem)
		t.Elem = &e
	}
	t.Fields = cloneFields(t.Fields)
	return t
}

func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = cloneValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}
