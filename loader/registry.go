package loader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tributary-io/tributary/formats/compat"
	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/formats/schema"
	"github.com/tributary-io/tributary/formats/srclient"
)

// With --registry, --format avro reads the Confluent wire format: each
// record's writer schema is looked up by the id in its header (cached for
// the process: an id never changes its schema), and the table schema is
// the latest version of the subject <topic>-value (Confluent's
// TopicNameStrategy) at plan time, mapped to columns by schema.FromAvro.
// Every record a plan covers was produced before the plan was made, so its
// writer's schema was registered by then: with compatible evolution the
// latest version has every field of every record of the run. A new version
// adds its fields as new columns at the next run (no restart), checked
// against the schema the topic's files were written with like --schema is.

var (
	clientsMu sync.Mutex
	clients   = map[string]*srclient.Client{}
)

// registryClient is one client per registry URL for the process, so that
// every worker shares the schemas it has fetched.
func registryClient(url string) *srclient.Client {
	clientsMu.Lock()
	defer clientsMu.Unlock()
	c, ok := clients[url]
	if !ok {
		c = srclient.New(url)
		clients[url] = c
	}
	return c
}

// registryAvro is the decoder of a topic in registry mode.
func registryAvro(p *Plan, s *schema.Schema) (decode.Decoder, error) {
	c := registryClient(p.Registry)
	var mu sync.Mutex
	parsed := map[uint32]avro.Schema{}
	lookup := func(id uint32) (avro.Schema, error) {
		mu.Lock()
		defer mu.Unlock()
		if s, ok := parsed[id]; ok {
			return s, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sch, err := c.SchemaByID(ctx, int(id))
		var se *srclient.Error
		if errors.As(err, &se) && se.Code == 40403 {
			return nil, fmt.Errorf("unknown to the schema registry %s", p.Registry)
		}
		if err != nil {
			return nil, err
		}
		if sch.Type != compat.Avro {
			return nil, fmt.Errorf("a %s schema, not AVRO", sch.Type)
		}
		as, err := compat.ParseAvro(sch.Schema)
		if err != nil {
			return nil, err
		}
		parsed[id] = as
		return as, nil
	}
	return decode.NewRegistryAvro(s, lookup, memory.DefaultAllocator)
}

// registryJSON is the decoder of a JSON Schema topic in registry mode:
// the JSON decoder, behind a check of each record's framing and id.
type registryJSON struct {
	decode.Decoder
	c      *srclient.Client
	url    string
	typ    string                              // compat.JSON or compat.Protobuf
	known  map[int]string                      // id → "" when of typ, else why not
	protos map[int]protoreflect.FileDescriptor // Protobuf: the writer's file by id
}

func newRegistryJSON(p *Plan, s *schema.Schema) (decode.Decoder, error) {
	d, err := decode.NewJSON(s, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	typ := compat.JSON
	if p.Format == FormatProtobuf {
		typ = compat.Protobuf
	}
	return &registryJSON{Decoder: d, c: registryClient(p.Registry), url: p.Registry, typ: typ,
		known: map[int]string{}, protos: map[int]protoreflect.FileDescriptor{}}, nil
}

func (d *registryJSON) Decode(recs []decode.Record) []decode.RecordError {
	var failed []decode.RecordError
	ok := make([]decode.Record, 0, len(recs))
	for _, r := range recs {
		id, body, err := srclient.Frame(r.Value)
		if err != nil {
			failed = append(failed, decode.RecordError{Partition: r.Partition, Offset: r.Offset, Reason: "not the Confluent framing (magic byte 0 and a 4-byte schema id)"})
			continue
		}
		why, seen := d.known[id]
		if !seen {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			sch, err := d.c.SchemaByID(ctx, id)
			cancel()
			var se *srclient.Error
			switch {
			case errors.As(err, &se) && se.Code == 40403:
				why = fmt.Sprintf("%s schema id %d: unknown to the schema registry %s", d.typ, id, d.url)
			case err != nil:
				why = fmt.Sprintf("%s schema id %d: %v", d.typ, id, err)
			case sch.Type != d.typ:
				why = fmt.Sprintf("schema id %d is %s, not %s", id, sch.Type, d.typ)
			case d.typ == compat.Protobuf:
				fd, err := compat.ParseProto(sch.Schema)
				if err != nil {
					why = fmt.Sprintf("PROTOBUF schema id %d: %v", id, err)
				}
				d.protos[id] = fd
			}
			d.known[id] = why
		}
		if why != "" {
			failed = append(failed, decode.RecordError{Partition: r.Partition, Offset: r.Offset, Reason: why})
			continue
		}
		if d.typ == compat.Protobuf {
			m, err := srclient.ProtoMessage(d.protos[id], body)
			if err == nil {
				body, err = json.Marshal(srclient.ProtoValue(m))
			}
			if err != nil {
				failed = append(failed, decode.RecordError{Partition: r.Partition, Offset: r.Offset, Reason: fmt.Sprintf("PROTOBUF schema id %d: %v", id, err)})
				continue
			}
		}
		r.Value = body
		ok = append(ok, r)
	}
	return append(failed, d.Decoder.Decode(ok)...)
}

// registrySchema is the table schema of topic from the registry: the
// latest version of <topic>-value, AVRO for --format avro, JSON for json,
// PROTOBUF for protobuf (the message protoMessage names, else the file's
// first).
func registrySchema(ctx context.Context, url, topic, format, protoMessage string) (*schema.Schema, string, error) {
	subject := topic + "-value"
	latest, err := registryClient(url).Latest(ctx, subject)
	if err != nil {
		return nil, "", fmt.Errorf("topic %q: the latest version of subject %s in the schema registry %s: %w", topic, subject, url, err)
	}
	name := fmt.Sprintf("subject %s version %d (id %d)", subject, latest.Version, latest.ID)
	if format == FormatProtobuf {
		if latest.Type != compat.Protobuf {
			return nil, "", fmt.Errorf("topic %q: %s is %s; --format protobuf needs PROTOBUF", topic, name, latest.Type)
		}
		fd, err := compat.ParseProto(latest.Schema)
		if err != nil {
			return nil, "", fmt.Errorf("topic %q: %s: %w", topic, name, err)
		}
		md, err := compat.ProtoMessage(fd, []int{0})
		if protoMessage != "" {
			md, err = fd.Messages().ByName(protoreflect.Name(protoMessage)), nil
			if md == nil {
				err = fmt.Errorf("no top-level message %s (--proto-message)", protoMessage)
			}
		}
		if err != nil {
			return nil, "", fmt.Errorf("topic %q: %s: %w", topic, name, err)
		}
		s, err := schema.FromProto(md, topic, latest.Version)
		if err != nil {
			return nil, "", fmt.Errorf("topic %q: %s: %w", topic, name, err)
		}
		return s, name + " message " + string(md.FullName()), nil
	}
	if format == FormatJSON {
		if latest.Type != compat.JSON {
			return nil, "", fmt.Errorf("topic %q: %s is %s; --format json with --registry needs JSON", topic, name, latest.Type)
		}
		doc, err := compat.ResolveJSON(latest.Schema)
		if err != nil {
			return nil, "", fmt.Errorf("topic %q: %s: %w", topic, name, err)
		}
		s, err := schema.FromJSONSchema(doc, topic, latest.Version)
		if err != nil {
			return nil, "", fmt.Errorf("topic %q: %s: %w", topic, name, err)
		}
		return s, name, nil
	}
	if latest.Type != compat.Avro {
		return nil, "", fmt.Errorf("topic %q: %s is %s; --format avro with --registry needs AVRO", topic, name, latest.Type)
	}
	as, err := compat.ParseAvro(latest.Schema)
	if err != nil {
		return nil, "", fmt.Errorf("topic %q: %s: %w", topic, name, err)
	}
	s, err := schema.FromAvro(as, topic, latest.Version)
	if err != nil {
		return nil, "", fmt.Errorf("topic %q: %s: %w", topic, name, err)
	}
	return s, name, nil
}
