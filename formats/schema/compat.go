package schema

// Compatibility between two versions of a schema, as Avro and the Confluent
// schema registry define it, with the widenings that Parquet readers (Hive,
// Spark, Trino, pyarrow) apply when one table holds files of both versions.
//
// Backward: the new schema reads data written with the old one (every
// partition already in the lake stays readable through the new table
// schema). Forward: the old schema reads data written with the new one
// (readers not yet upgraded keep working). Full: both.
//
// "reader reads writer" holds when, field by field (matched by name, or
// by an alias naming the other's field, at every level):
//
//   - a reader field the writer lacks is nullable or has a default;
//   - a writer field the reader lacks is fine (the reader ignores it);
//   - the writer's type is the reader's, or widens to it without loss:
//     int32 → int64, int32 → double, float → double, timestamp(ms) →
//     timestamp(us); list, map and struct compare their elements and
//     fields the same way. Nothing else:
//     int64 → double loses integers above 2^53, int32 → float above 2^24,
//     us → ms loses precision, and anything → string would need the old
//     files rewritten;
//   - a writer field that is nullable needs a nullable reader field: a
//     required column cannot take nulls, and a default does not help,
//     since the null is in the data.

import (
	"fmt"
	"strings"
)

// Mode is a compatibility mode.
type Mode int

const (
	// Backward: the new schema reads what the old one wrote.
	Backward Mode = iota + 1
	// Forward: the old schema reads what the new one writes.
	Forward
	// Full: both.
	Full
)

func (m Mode) String() string {
	switch m {
	case Backward:
		return "backward"
	case Forward:
		return "forward"
	case Full:
		return "full"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses "backward", "forward" or "full", as configuration
// writes them (case is ignored).
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "backward":
		return Backward, nil
	case "forward":
		return Forward, nil
	case "full":
		return Full, nil
	}
	return 0, fmt.Errorf("formats/schema: compatibility mode %q: want backward, forward or full", s)
}

// Incompatibility is one reason why a new schema is not compatible with an
// old one.
type Incompatibility struct {
	// Path is the field, "context.page.url"; a list's elements are
	// "tags[]", a map's values "attrs{}".
	Path string
	// Direction is Backward when the new schema cannot read old data,
	// Forward when the old schema cannot read new data.
	Direction Mode
	Reason    string
}

func (i Incompatibility) String() string {
	return fmt.Sprintf("%s: %s (breaks %s compatibility)", i.Path, i.Reason, i.Direction)
}

// IncompatibleError is what Check returns: every incompatibility, in field
// order.
type IncompatibleError struct {
	Old, New string // "name v3"
	Mode     Mode
	Problems []Incompatibility
}

func (e *IncompatibleError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "formats/schema: %s is not %s compatible with %s:", e.New, e.Mode, e.Old)
	for _, p := range e.Problems {
		b.WriteString("\n\t")
		b.WriteString(p.String())
	}
	return b.String()
}

// Check reports whether new is compatible with old in mode: nil, or an
// *IncompatibleError listing every incompatible field.
func Check(old, new *Schema, mode Mode) error {
	if old == nil || new == nil {
		return fmt.Errorf("formats/schema: check: nil schema")
	}
	var probs []Incompatibility
	if mode == Backward || mode == Full {
		c := &checker{dir: Backward}
		c.fields(new.Fields, old.Fields, nil)
		probs = append(probs, c.probs...)
	}
	if mode == Forward || mode == Full {
		c := &checker{dir: Forward}
		c.fields(old.Fields, new.Fields, nil)
		probs = append(probs, c.probs...)
	}
	if mode != Backward && mode != Forward && mode != Full {
		return fmt.Errorf("formats/schema: check: unknown mode %v", mode)
	}
	if len(probs) == 0 {
		return nil
	}
	return &IncompatibleError{
		Old:      fmt.Sprintf("%s v%d", old.Name, old.Version),
		New:      fmt.Sprintf("%s v%d", new.Name, new.Version),
		Mode:     mode,
		Problems: probs,
	}
}

// checker checks that reader reads writer. In the Backward direction the
// reader is the new schema, in the Forward one the old schema; messages
// speak of old and new either way.
type checker struct {
	dir   Mode
	probs []Incompatibility
}

func (c *checker) add(path, format string, args ...any) {
	c.probs = append(c.probs, Incompatibility{Path: path, Direction: c.dir, Reason: fmt.Sprintf(format, args...)})
}

// oldNew orders a reader/writer pair as old, new.
func (c *checker) oldNew(reader, writer string) (string, string) {
	if c.dir == Backward {
		return writer, reader
	}
	return reader, writer
}

func (c *checker) fields(reader, writer []Field, parent []string) {
	byName := make(map[string]*Field, len(writer))
	for i := range writer {
		byName[writer[i].Name] = &writer[i]
	}
	for _, r := range reader {
		path := Path(append(append([]string(nil), parent...), r.Name)...)
		w := byName[r.Name]
		if w == nil {
			w = renamed(r, writer)
		}
		if w == nil {
			if r.Nullable || r.Default != nil {
				continue
			}
			if c.dir == Backward {
				c.add(path, "added as required without a default: data written with the old schema has no value for it")
			} else {
				c.add(path, "removed, but it was required without a default: readers of the old schema need it")
			}
			continue
		}
		if w.Nullable && !r.Nullable {
			if c.dir == Backward {
				c.add(path, "made required (it was nullable): data written with the old schema may hold nulls")
			} else {
				c.add(path, "made nullable (it was required): readers of the old schema take no nulls")
			}
		}
		c.types(r.Type, w.Type, path)
	}
}

// renamed is the writer field that r is a rename of: one named by r's
// aliases (Avro's rule), or one whose aliases name r (the same rename
// seen from the other side, Forward).
func renamed(r Field, writer []Field) *Field {
	for i := range writer {
		for _, a := range r.Aliases {
			if writer[i].Name == a {
				return &writer[i]
			}
		}
		for _, a := range writer[i].Aliases {
			if a == r.Name {
				return &writer[i]
			}
		}
	}
	return nil
}

func (c *checker) types(r, w Type, path string) {
	switch {
	case r.Kind == w.Kind && (r.Kind == List || r.Kind == Map):
		if r.Elem == nil || w.Elem == nil {
			return // invalid schemas; Validate says so
		}
		suffix := "[]"
		if r.Kind == Map {
			suffix = "{}"
		}
		c.types(*r.Elem, *w.Elem, path+suffix)
	case r.Kind == Struct && w.Kind == Struct:
		c.fields(r.Fields, w.Fields, strings.Split(path, "."))
	case !widens(w, r):
		old, new := c.oldNew(r.String(), w.String())
		if c.dir == Backward {
			c.add(path, "type changed from %s to %s, which does not widen it", old, new)
		} else {
			c.add(path, "type changed from %s to %s: readers of the old schema cannot narrow it back", old, new)
		}
	}
}

// widens reports whether a value written as w reads as r without loss.
// Lists, maps and structs are compared by types.
func widens(w, r Type) bool {
	if w.Kind == r.Kind {
		return w.Kind != Timestamp || w.Unit == r.Unit || (w.Unit == Millis && r.Unit == Micros)
	}
	switch w.Kind {
	case Int32:
		return r.Kind == Int64 || r.Kind == Double
	case Float:
		return r.Kind == Double
	}
	return false
}
