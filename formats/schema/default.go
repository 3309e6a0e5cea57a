package schema

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Defaults are kept in their JSON form, normalised by type, so that two
// schemas that say the same thing hold equal values:
//
//	string            string
//	int32, int64      int64 (range-checked)
//	float, double     float64 (finite; float within float32's range)
//	bool              bool
//	timestamp         string in RFC 3339, or int64 in the field's unit
//	date              string YYYY-MM-DD
//	bytes             string, standard base64
//	list              []any of normalised elements
//	map               map[string]any of normalised values
//	struct            map[string]any of normalised fields; required fields
//	                  without a default must be given
//
// A nil element or value is allowed (Arrow lists and maps hold nullable
// elements); a nil struct member only for a nullable member.

func normalizeDefault(t Type, v any, path string) (any, *FieldError) {
	bad := func(format string, args ...any) (any, *FieldError) {
		return nil, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	if tm, ok := v.(time.Time); ok {
		v = tm.UTC().Format(time.RFC3339Nano)
	}
	switch t.Kind {
	case String:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return bad("%s is not a string", show(v))
	case Int32, Int64:
		i, ok := asInt(v)
		if !ok {
			return bad("%s is not a whole number", show(v))
		}
		if t.Kind == Int32 && (i < math.MinInt32 || i > math.MaxInt32) {
			return bad("%d is out of range for int32", i)
		}
		return i, nil
	case Float, Double:
		f, ok := asFloat(v)
		if !ok {
			return bad("%s is not a number", show(v))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return bad("%v cannot be written as JSON", f)
		}
		if t.Kind == Float && math.Abs(f) > math.MaxFloat32 {
			return bad("%v is out of range for float", f)
		}
		return f, nil
	case Bool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return bad("%s is not true or false", show(v))
	case Timestamp:
		if s, ok := v.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				return bad("%q is not an RFC 3339 timestamp (2006-01-02T15:04:05Z)", s)
			}
			return s, nil
		}
		if i, ok := asInt(v); ok {
			return i, nil
		}
		return bad("%s is not a timestamp: give RFC 3339 text or a number of %s since the epoch", show(v), t.Unit)
	case Date:
		if s, ok := v.(string); ok {
			if _, err := time.Parse(time.DateOnly, s); err == nil {
				return s, nil
			}
		}
		return bad("%s is not a date (2006-01-02)", show(v))
	case Bytes:
		if s, ok := v.(string); ok {
			if _, err := base64.StdEncoding.DecodeString(s); err == nil {
				return s, nil
			}
		}
		return bad("%s is not base64 text", show(v))
	case List:
		l, ok := v.([]any)
		if !ok {
			return bad("%s is not a list", show(v))
		}
		out := make([]any, len(l))
		for i, e := range l {
			if e == nil {
				continue
			}
			n, err := normalizeDefault(*t.Elem, e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case Map:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("%s is not a mapping", show(v))
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			if e == nil {
				out[k] = nil
				continue
			}
			n, err := normalizeDefault(*t.Elem, e, path+"{"+k+"}")
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("%s is not a mapping", show(v))
		}
		out := make(map[string]any, len(m))
		known := map[string]bool{}
		for _, f := range t.Fields {
			known[f.Name] = true
			e, given := m[f.Name]
			switch {
			case !given && !f.Nullable && f.Default == nil:
				return nil, &FieldError{Path: Path(path, f.Name), Msg: "missing: the field is required and has no default"}
			case !given:
				continue
			case e == nil && !f.Nullable:
				return nil, &FieldError{Path: Path(path, f.Name), Msg: "null, but the field is not nullable"}
			case e == nil:
				out[f.Name] = nil
				continue
			}
			n, err := normalizeDefault(f.Type, e, Path(path, f.Name))
			if err != nil {
				return nil, err
			}
			out[f.Name] = n
		}
		var unknown []string
		for k := range m {
			if !known[k] {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			return bad("no such field %s", strings.Join(unknown, ", "))
		}
		return out, nil
	}
	return bad("unknown type %q", t.Kind)
}

func show(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	return fmt.Sprint(v)
}

func asInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint64:
		if v <= math.MaxInt64 {
			return int64(v), true
		}
	case json.Number:
		i, err := v.Int64()
		return i, err == nil
	}
	return 0, false
}

func asFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case float32:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	if i, ok := asInt(v); ok {
		return float64(i), true
	}
	if u, ok := v.(uint64); ok {
		return float64(u), true
	}
	return 0, false
}
