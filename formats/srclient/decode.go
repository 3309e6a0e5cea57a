package srclient

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tributary-io/tributary/formats/compat"
)

// Decoder turns Confluent-framed record values into JSON, whatever the
// schema type of their id (AVRO, JSON, PROTOBUF): what `tributary consume
// --registry` prints. Parsed schemas are cached by id. Safe for concurrent
// use.
type Decoder struct {
	c      *Client
	mu     sync.Mutex
	avro   map[int]avro.Schema
	protos map[int]protoreflect.FileDescriptor
}

// NewDecoder decodes with the schemas of c.
func NewDecoder(c *Client) *Decoder {
	return &Decoder{c: c, avro: map[int]avro.Schema{}, protos: map[int]protoreflect.FileDescriptor{}}
}

// JSON decodes value to JSON. Avro unions are written as hamba/avro
// decodes them into Go values (the branch's value); bytes are base64.
func (d *Decoder) JSON(ctx context.Context, value []byte) ([]byte, error) {
	id, body, err := Frame(value)
	if err != nil {
		return nil, err
	}
	s, err := d.c.SchemaByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	switch s.Type {
	case compat.JSON:
		if !json.Valid(body) {
			return nil, fmt.Errorf("schema id %d: the body is not JSON", id)
		}
		return body, nil
	case compat.Avro:
		d.mu.Lock()
		as, ok := d.avro[id]
		if !ok {
			if as, err = compat.ParseAvro(s.Schema); err != nil {
				d.mu.Unlock()
				return nil, fmt.Errorf("schema id %d: %w", id, err)
			}
			d.avro[id] = as
		}
		d.mu.Unlock()
		var v any
		if err := avro.Unmarshal(as, body, &v); err != nil {
			return nil, fmt.Errorf("schema id %d: invalid Avro: %w", id, err)
		}
		return json.Marshal(v)
	case compat.Protobuf:
		d.mu.Lock()
		fd, ok := d.protos[id]
		if !ok {
			if fd, err = compat.ParseProto(s.Schema); err != nil {
				d.mu.Unlock()
				return nil, fmt.Errorf("schema id %d: %w", id, err)
			}
			d.protos[id] = fd
		}
		d.mu.Unlock()
		idx, rest, err := ProtoIndexes(body)
		if err != nil {
			return nil, err
		}
		md, err := compat.ProtoMessage(fd, idx)
		if err != nil {
			return nil, fmt.Errorf("schema id %d: %w", id, err)
		}
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(rest, m); err != nil {
			return nil, fmt.Errorf("schema id %d: invalid Protobuf %s: %w", id, md.FullName(), err)
		}
		return protojson.Marshal(m)
	}
	return nil, fmt.Errorf("schema id %d: unknown schema type %s", id, s.Type)
}

// ProtoValue is m as the Go values (map[string]any for messages) that the
// loader's JSON decoder reads against schema.FromProto's columns: fields
// by their .proto names, scalars with their defaults when unset, unset
// messages null, enums by name, Timestamps as RFC 3339, 64-bit integers
// as numbers (not ProtoJSON's strings), bytes as base64 (encoding/json).
func ProtoValue(m protoreflect.Message) map[string]any {
	out := map[string]any{}
	fds := m.Descriptor().Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		switch {
		case fd.IsMap():
			mv := map[string]any{}
			m.Get(fd).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				mv[k.String()] = protoScalar(fd.MapValue(), v)
				return true
			})
			out[string(fd.Name())] = mv
		case fd.IsList():
			l := m.Get(fd).List()
			lv := make([]any, l.Len())
			for j := range lv {
				lv[j] = protoScalar(fd, l.Get(j))
			}
			out[string(fd.Name())] = lv
		case fd.Message() != nil && !m.Has(fd):
			out[string(fd.Name())] = nil
		default:
			out[string(fd.Name())] = protoScalar(fd, m.Get(fd))
		}
	}
	return out
}

func protoScalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return fmt.Sprint(v.Enum())
	case protoreflect.MessageKind, protoreflect.GroupKind:
		msg := v.Message()
		if fd.Message().FullName() == "google.protobuf.Timestamp" {
			f := msg.Descriptor().Fields()
			sec, nanos := msg.Get(f.ByName("seconds")).Int(), msg.Get(f.ByName("nanos")).Int()
			return time.Unix(sec, nanos).UTC().Format(time.RFC3339Nano)
		}
		return ProtoValue(msg)
	}
	return v.Interface()
}

// ProtoMessage decodes a framed Protobuf body (message indexes first) with
// the file it was written with.
func ProtoMessage(fd protoreflect.FileDescriptor, body []byte) (protoreflect.Message, error) {
	idx, rest, err := ProtoIndexes(body)
	if err != nil {
		return nil, err
	}
	md, err := compat.ProtoMessage(fd, idx)
	if err != nil {
		return nil, err
	}
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(rest, m); err != nil {
		return nil, fmt.Errorf("invalid Protobuf %s: %w", md.FullName(), err)
	}
	return m, nil
}
