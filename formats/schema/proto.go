package schema

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// FromProto maps a Protobuf message to a Tributary schema, the table of a
// topic whose writers register Protobuf; ProtoJSON (formats/srclient)
// turns each message into the JSON the loader decodes against it.
//
//	int32, sint32, sfixed32           int32
//	int64, sint64, sfixed64, uint32, uint64 (past 2^63-1: a bad record)   int64
//	float, double, bool, string, bytes   float, double, bool, string, bytes
//	enum                              string (the value's name)
//	google.protobuf.Timestamp         timestamp(us)
//	message                           struct (recursion past 16 levels left out)
//	repeated, map                     list, map (keys as strings)
//
// Every column is nullable: a message field may be unset (scalars carry
// their default value).
func FromProto(md protoreflect.MessageDescriptor, name string, version int) (*Schema, error) {
	fs := protoFields(md, 0)
	if len(fs) == 0 {
		return nil, fmt.Errorf("formats/schema: Protobuf message %s has no fields with a column type", md.FullName())
	}
	return &Schema{Name: name, Version: version, Fields: fs}, nil
}

func protoFields(md protoreflect.MessageDescriptor, depth int) []Field {
	var out []Field
	fds := md.Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		var t Type
		var ok bool
		switch {
		case fd.IsMap():
			var e Type
			if e, ok = protoType(fd.MapValue(), depth); ok {
				t = Type{Kind: Map, Elem: &e}
			}
		case fd.IsList():
			var e Type
			if e, ok = protoType(fd, depth); ok {
				t = Type{Kind: List, Elem: &e}
			}
		default:
			t, ok = protoType(fd, depth)
		}
		if ok {
			out = append(out, Field{Name: string(fd.Name()), Type: t, Nullable: true})
		}
	}
	return out
}

func protoType(fd protoreflect.FieldDescriptor, depth int) (Type, bool) {
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return Type{Kind: Int32}, true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind, protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return Type{Kind: Int64}, true
	case protoreflect.FloatKind:
		return Type{Kind: Float}, true
	case protoreflect.DoubleKind:
		return Type{Kind: Double}, true
	case protoreflect.BoolKind:
		return Type{Kind: Bool}, true
	case protoreflect.StringKind, protoreflect.EnumKind:
		return Type{Kind: String}, true
	case protoreflect.BytesKind:
		return Type{Kind: Bytes}, true
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if fd.Message().FullName() == "google.protobuf.Timestamp" {
			return Type{Kind: Timestamp, Unit: Micros}, true
		}
		if depth >= 16 {
			return Type{}, false
		}
		fs := protoFields(fd.Message(), depth+1)
		if len(fs) == 0 {
			return Type{}, false
		}
		return Type{Kind: Struct, Fields: fs}, true
	}
	return Type{}, false
}
