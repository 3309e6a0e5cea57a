// Package compat decides whether a new version of a schema may follow the
// versions already registered under a subject, with the Confluent schema
// registry's levels (BACKWARD, FORWARD, FULL, each _TRANSITIVE, NONE), for
// Avro (Avro's schema resolution rules) and JSON Schema (the common cases,
// see json.go). The registry (registry/), the loader and the tracker share
// it. Every function is pure and safe for concurrent use.
package compat

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
)

// Schema types, as the registry's schemaType field names them.
const (
	Avro     = "AVRO"
	JSON     = "JSON"
	Protobuf = "PROTOBUF"
)

// Level is a compatibility level.
type Level string

const (
	None               Level = "NONE"
	Backward           Level = "BACKWARD"
	BackwardTransitive Level = "BACKWARD_TRANSITIVE"
	Forward            Level = "FORWARD"
	ForwardTransitive  Level = "FORWARD_TRANSITIVE"
	Full               Level = "FULL"
	FullTransitive     Level = "FULL_TRANSITIVE"
)

// ParseLevel accepts a level name in any case.
func ParseLevel(s string) (Level, bool) {
	l := Level(strings.ToUpper(s))
	switch l {
	case None, Backward, BackwardTransitive, Forward, ForwardTransitive, Full, FullTransitive:
		return l, true
	}
	return "", false
}

// ErrUnsupported is returned for a schema type this package cannot parse.
var ErrUnsupported = errors.New("formats/compat: unsupported schema type")

// Schema is one registered schema: its type (empty means AVRO, as in the
// registry's API) and text.
type Schema struct {
	Type string
	Text string
	// Refs are the schemas this one references, resolved: transitively
	// complete, each schema's references before it (Avro parses named
	// types in that order), each under the name the referring schema uses
	// (a $ref URL for JSON Schema, an import path for Protobuf; Avro names
	// types by their full name and ignores it). They share Type.
	Refs []Ref
}

// Ref is one resolved reference.
type Ref struct {
	Name string
	Text string
}

func (s Schema) typ() string {
	if s.Type == "" {
		return Avro
	}
	return strings.ToUpper(s.Type)
}

// Canonical checks that s parses and returns the form the registry stores
// and compares: the JSON text without insignificant white space, so that
// the same schema sent twice, pretty-printed or not, gets one id.
func Canonical(s Schema) (string, error) {
	switch s.typ() {
	case Avro:
		if _, err := parseAvroRefs(s); err != nil {
			return "", err
		}
	case JSON:
		if _, err := parseJSONRefs(s); err != nil {
			return "", err
		}
	case Protobuf:
		if _, err := ParseProto(s); err != nil {
			return "", err
		}
		// Stored as sent, less surrounding white space: .proto text has
		// no JSON form to compact (normalize=true prints a canonical one).
		return strings.TrimSpace(s.Text), nil
	default:
		return "", fmt.Errorf("%w %s", ErrUnsupported, s.Type)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s.Text)); err != nil {
		return "", err
	}
	return b.String(), nil
}

// MaxDepth caps how deeply the JSON text of a schema nests (objects and
// arrays). The parsers and checkers recurse per level, and a stranger can
// POST a schema: without a cap a 400 KB body nested 2000 deep cost the
// compatibility check hundreds of MB. 64 levels of JSON Schema properties
// or Avro records fit (each takes two or three JSON levels).
const MaxDepth = 200

// ErrTooDeep is returned for a schema nested deeper than MaxDepth.
var ErrTooDeep = errors.New("schema nested too deep")

// checkDepth scans text for its nesting, skipping strings; it allocates
// nothing, so it runs before any parse.
func checkDepth(text string) error {
	depth, inStr, esc := 0, false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case inStr:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			if depth++; depth > MaxDepth {
				return fmt.Errorf("%w: more than %d levels of JSON", ErrTooDeep, MaxDepth)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

func parseAvro(text string) (avro.Schema, error) {
	if err := checkDepth(text); err != nil {
		return nil, err
	}
	// A cache per parse: the default cache is global and keyed by full
	// name, so two versions of one record would see each other.
	return avro.ParseWithCache(text, "", &avro.SchemaCache{})
}

// parseAvroRefs parses s after its references, in one cache, so that the
// named types they define resolve in s.
func parseAvroRefs(s Schema) (avro.Schema, error) {
	if len(s.Refs) == 0 {
		return parseAvro(s.Text)
	}
	cache := &avro.SchemaCache{}
	for _, r := range s.Refs {
		if err := checkDepth(r.Text); err != nil {
			return nil, err
		}
		if _, err := avro.ParseWithCache(r.Text, "", cache); err != nil {
			return nil, fmt.Errorf("reference %s: %w", r.Name, err)
		}
	}
	if err := checkDepth(s.Text); err != nil {
		return nil, err
	}
	return avro.ParseWithCache(s.Text, "", cache)
}

// ParseAvro parses an Avro schema with its references: the reader and
// writer schemas of the loader and the console.
func ParseAvro(s Schema) (avro.Schema, error) { return parseAvroRefs(s) }

// Check returns why candidate may not follow previous (oldest first) at
// level; nil when it may. Non-transitive levels look at the latest
// previous version only, as Confluent's do.
func Check(level Level, candidate Schema, previous []Schema) ([]string, error) {
	if level == None || len(previous) == 0 {
		return nil, nil
	}
	against := previous
	if !strings.HasSuffix(string(level), "_TRANSITIVE") {
		against = previous[len(previous)-1:]
	}
	base := Level(strings.TrimSuffix(string(level), "_TRANSITIVE"))
	var msgs []string
	// Newest first, as Confluent reports them.
	for i := len(against) - 1; i >= 0; i-- {
		old := against[i]
		if old.typ() != candidate.typ() {
			msgs = append(msgs, fmt.Sprintf("Incompatible because of different schema type: %s and %s", old.typ(), candidate.typ()))
			continue
		}
		if base == Backward || base == Full {
			m, err := readable(candidate, old)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, prefix("BACKWARD", m)...)
		}
		if base == Forward || base == Full {
			m, err := readable(old, candidate)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, prefix("FORWARD", m)...)
		}
	}
	return msgs, nil
}

func prefix(dir string, msgs []string) []string {
	for i, m := range msgs {
		msgs[i] = dir + ": " + m
	}
	return msgs
}

// readable says why data written with writer cannot be read with reader.
func readable(reader, writer Schema) ([]string, error) {
	switch reader.typ() {
	case Avro:
		r, err := parseAvroRefs(reader)
		if err != nil {
			return nil, err
		}
		w, err := parseAvroRefs(writer)
		if err != nil {
			return nil, err
		}
		if err := avro.NewSchemaCompatibility().Compatible(r, w); err != nil {
			return []string{"reader cannot read data written with the writer's schema: " + err.Error()}, nil
		}
		return nil, nil
	case JSON:
		r, err := parseJSONRefs(reader)
		if err != nil {
			return nil, err
		}
		w, err := parseJSONRefs(writer)
		if err != nil {
			return nil, err
		}
		return jsonReadable(r, w, &jsonPath{seg: "#"}), nil
	case Protobuf:
		r, err := ParseProto(reader)
		if err != nil {
			return nil, err
		}
		w, err := ParseProto(writer)
		if err != nil {
			return nil, err
		}
		return protoReadable(r, w), nil
	}
	return nil, fmt.Errorf("%w %s", ErrUnsupported, reader.Type)
}

// Normalize returns the form a schema is stored and compared in when a
// client asks for normalize=true, so that schemas that differ only in
// layout get one id: for AVRO and JSON the JSON text with every object's
// keys sorted (array order, which carries meaning, kept); for PROTOBUF the
// compiled file as a base64 FileDescriptorProto (comments and layout
// dropped, the file named alike; text and descriptor forms of one schema
// agree).
func Normalize(s Schema) (string, error) {
	if _, err := Canonical(s); err != nil {
		return "", err
	}
	if s.typ() == Protobuf {
		fd, err := ParseProto(s)
		if err != nil {
			return "", err
		}
		fdp := protodesc.ToFileDescriptorProto(fd)
		fdp.Name = proto.String(protoMain)
		fdp.SourceCodeInfo = nil
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(fdp)
		if err != nil {
			return "", err
		}
		return base64.StdEncoding.EncodeToString(b), nil
	}
	d := json.NewDecoder(strings.NewReader(s.Text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", err
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil { // maps encode with sorted keys
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}
