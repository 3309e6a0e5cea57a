package srclient

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

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
