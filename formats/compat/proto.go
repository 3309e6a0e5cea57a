package compat

// Protobuf schemas: parsed with protocompile (a pure-Go compiler) from
// .proto text or from a base64-encoded FileDescriptorProto (what
// confluent-kafka's Python serializer sends), with the well-known
// google/protobuf imports built in and every other import resolved through
// the schema's references, by the reference's name.
//
// Compatibility follows Confluent's ProtobufSchema checks, which mirror
// what the wire format tolerates. Fields match by number, messages by full
// name. Incompatible ("reader reads writer"):
//
//   - MESSAGE_REMOVED: a message of the writer is missing in the reader;
//   - FIELD_KIND_CHANGED: scalar, enum and message swapped for one another,
//     or a field moved between singular, repeated and map;
//   - FIELD_SCALAR_KIND_CHANGED: a scalar type changed outside the groups
//     the wire format reads alike (int32/uint32/int64/uint64/bool,
//     sint32/sint64, fixed32/sfixed32, fixed64/sfixed64, string/bytes);
//   - FIELD_NAMED_TYPE_CHANGED: a message or enum field names another type;
//   - REQUIRED_FIELD_ADDED / REQUIRED_FIELD_REMOVED (proto2);
//   - ONEOF_FIELD_REMOVED: a field of a writer's oneof left it in the reader,
//     MULTIPLE_FIELDS_MOVED_TO_ONEOF: two or more writer fields outside a
//     oneof share one in the reader.
//
// Compatible: fields added or removed (a removed number reused with another
// type is caught as the change of that number's type), renames, messages
// and enums added, enum values added or removed.

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// protoMain is the path the schema itself is compiled under; references
// are imported by their names, so this one should be unlikely to collide.
const protoMain = "__registry_schema__.proto"

// descriptorProto decodes text when it is a base64-encoded
// FileDescriptorProto, as some serializers send the schema.
func descriptorProto(text string) *descriptorpb.FileDescriptorProto {
	t := strings.TrimSpace(text)
	if t == "" || strings.ContainsAny(t, " \n\t{;") {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(t)
	if err != nil {
		return nil
	}
	var fd descriptorpb.FileDescriptorProto
	if proto.Unmarshal(b, &fd) != nil {
		return nil
	}
	// Serialized descriptors often lack json_name (protoc fills it in,
	// Python's pool does not), which the linker takes for a custom name ""
	// that every field shares: give them protoc's default.
	var clean func(ms []*descriptorpb.DescriptorProto)
	clean = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			for _, f := range m.Field {
				if f.GetJsonName() == "" {
					f.JsonName = proto.String(defaultJSONName(f.GetName()))
				}
			}
			clean(m.NestedType)
		}
	}
	clean(fd.MessageType)
	return &fd
}

// defaultJSONName is protoc's: underscores dropped, the letter after one
// upper-cased.
func defaultJSONName(name string) string {
	var b strings.Builder
	up := false
	for _, c := range name {
		switch {
		case c == '_':
			up = true
		case up && 'a' <= c && c <= 'z':
			b.WriteRune(c - 'a' + 'A')
			up = false
		default:
			b.WriteRune(c)
			up = false
		}
	}
	return b.String()
}

// ParseProto compiles a Protobuf schema with its references.
func ParseProto(s Schema) (protoreflect.FileDescriptor, error) {
	if err := checkDepth(s.Text); err != nil {
		return nil, err
	}
	srcs := map[string]string{protoMain: s.Text}
	for _, r := range s.Refs {
		if err := checkDepth(r.Text); err != nil {
			return nil, err
		}
		srcs[r.Name] = r.Text
	}
	res := protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		text, ok := srcs[path]
		if !ok {
			return protocompile.SearchResult{}, fmt.Errorf("import %q: no reference of that name", path)
		}
		if fd := descriptorProto(text); fd != nil {
			fd.Name = proto.String(path)
			return protocompile.SearchResult{Proto: fd}, nil
		}
		return protocompile.SearchResult{Source: io.NopCloser(strings.NewReader(text))}, nil
	})
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(res),
		MaxParallelism: 1,
		Reporter:       reporter.NewReporter(nil, nil),
	}
	files, err := c.Compile(context.Background(), protoMain)
	if err != nil {
		return nil, fmt.Errorf("invalid protobuf schema: %s", strings.ReplaceAll(err.Error(), protoMain+":", "line "))
	}
	return files[0], nil
}

// ProtoMessage finds the message a Confluent message-index path names:
// indexes into the file's top-level messages, then into nested ones.
func ProtoMessage(fd protoreflect.FileDescriptor, indexes []int) (protoreflect.MessageDescriptor, error) {
	if len(indexes) == 0 {
		indexes = []int{0}
	}
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range indexes {
		if i < 0 || i >= msgs.Len() {
			return nil, fmt.Errorf("message index %v not in the schema", indexes)
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md, nil
}

// allMessages lists every message of fd, nested ones too, by full name.
func allMessages(fd protoreflect.FileDescriptor) map[protoreflect.FullName]protoreflect.MessageDescriptor {
	out := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			m := ms.Get(i)
			if m.IsMapEntry() {
				continue
			}
			out[m.FullName()] = m
			walk(m.Messages())
		}
	}
	walk(fd.Messages())
	return out
}

func scalarGroup(k protoreflect.Kind) int {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Uint64Kind, protoreflect.BoolKind:
		return 1
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return 2
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return 3
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return 4
	case protoreflect.StringKind, protoreflect.BytesKind:
		return 5
	}
	return 0
}

func fieldShape(f protoreflect.FieldDescriptor) string {
	switch {
	case f.IsMap():
		return "map"
	case f.IsList():
		return "repeated"
	}
	return "singular"
}

// protoReadable says why data written with writer cannot be read with
// reader, in Confluent's difference names.
func protoReadable(reader, writer protoreflect.FileDescriptor) []string {
	var msgs []string
	rm, wm := allMessages(reader), allMessages(writer)
	names := make([]string, 0, len(wm))
	for n := range wm {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		w := wm[protoreflect.FullName(n)]
		r, ok := rm[protoreflect.FullName(n)]
		path := "#/" + n
		if !ok {
			msgs = append(msgs, fmt.Sprintf("MESSAGE_REMOVED at %s: the message is missing in the new schema", path))
			continue
		}
		moved := map[protoreflect.FullName]int{} // reader oneof → writer fields outside any oneof moved into it
		wf := w.Fields()
		for i := 0; i < wf.Len(); i++ {
			f := wf.Get(i)
			fp := fmt.Sprintf("%s/%d", path, f.Number())
			g := r.Fields().ByNumber(f.Number())
			if g == nil {
				if f.Cardinality() == protoreflect.Required {
					msgs = append(msgs, fmt.Sprintf("REQUIRED_FIELD_REMOVED at %s: required field %s removed", fp, f.Name()))
				}
				continue
			}
			if m := fieldChange(f, g, fp); m != "" {
				msgs = append(msgs, m)
			}
			if f.Cardinality() != protoreflect.Required && g.Cardinality() == protoreflect.Required {
				msgs = append(msgs, fmt.Sprintf("REQUIRED_FIELD_ADDED at %s: field %s became required", fp, g.Name()))
			}
			wo, ro := realOneof(f), realOneof(g)
			switch {
			case wo != nil && ro == nil:
				msgs = append(msgs, fmt.Sprintf("ONEOF_FIELD_REMOVED at %s: field %s left oneof %s", fp, f.Name(), wo.Name()))
			case wo == nil && ro != nil:
				moved[ro.FullName()]++
			}
		}
		for o, n := range moved {
			if n > 1 {
				msgs = append(msgs, fmt.Sprintf("MULTIPLE_FIELDS_MOVED_TO_ONEOF at %s: %d fields moved into oneof %s", path, n, o.Name()))
			}
		}
		rf := r.Fields()
		for i := 0; i < rf.Len(); i++ {
			g := rf.Get(i)
			if g.Cardinality() == protoreflect.Required && wf.ByNumber(g.Number()) == nil {
				msgs = append(msgs, fmt.Sprintf("REQUIRED_FIELD_ADDED at %s/%d: required field %s added", path, g.Number(), g.Name()))
			}
		}
	}
	return msgs
}

func realOneof(f protoreflect.FieldDescriptor) protoreflect.OneofDescriptor {
	if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
		return o
	}
	return nil
}

func fieldChange(w, r protoreflect.FieldDescriptor, path string) string {
	if fieldShape(w) != fieldShape(r) {
		return fmt.Sprintf("FIELD_KIND_CHANGED at %s: %s field became %s", path, fieldShape(w), fieldShape(r))
	}
	if w.IsMap() {
		if m := fieldChange(w.MapKey(), r.MapKey(), path+"/key"); m != "" {
			return m
		}
		return fieldChange(w.MapValue(), r.MapValue(), path+"/value")
	}
	wk, rk := w.Kind(), r.Kind()
	named := func(k protoreflect.Kind) int {
		switch k {
		case protoreflect.MessageKind, protoreflect.GroupKind:
			return 1
		case protoreflect.EnumKind:
			return 2
		}
		return 0
	}
	switch {
	case named(wk) != named(rk):
		return fmt.Sprintf("FIELD_KIND_CHANGED at %s: %s became %s", path, wk, rk)
	case named(wk) == 1 && w.Message().FullName() != r.Message().FullName():
		return fmt.Sprintf("FIELD_NAMED_TYPE_CHANGED at %s: %s became %s", path, w.Message().FullName(), r.Message().FullName())
	case named(wk) == 2 && w.Enum().FullName() != r.Enum().FullName():
		return fmt.Sprintf("FIELD_NAMED_TYPE_CHANGED at %s: %s became %s", path, w.Enum().FullName(), r.Enum().FullName())
	case named(wk) == 0 && wk != rk && (scalarGroup(wk) == 0 || scalarGroup(wk) != scalarGroup(rk)):
		return fmt.Sprintf("FIELD_SCALAR_KIND_CHANGED at %s: %s became %s", path, wk, rk)
	}
	return ""
}

// SerializedProto returns s as a base64-encoded FileDescriptorProto: as
// sent when it was sent so, else compiled.
func SerializedProto(s Schema) (string, error) {
	if descriptorProto(s.Text) != nil {
		return strings.TrimSpace(s.Text), nil
	}
	fd, err := ParseProto(s)
	if err != nil {
		return "", err
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(protodesc.ToFileDescriptorProto(fd))
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}
