package loader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/hamba/avro/v2"

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

// registrySchema is the table schema of topic from the registry: the
// latest version of <topic>-value.
func registrySchema(ctx context.Context, url, topic string) (*schema.Schema, string, error) {
	subject := topic + "-value"
	latest, err := registryClient(url).Latest(ctx, subject)
	if err != nil {
		return nil, "", fmt.Errorf("topic %q: the latest version of subject %s in the schema registry %s: %w", topic, subject, url, err)
	}
	name := fmt.Sprintf("subject %s version %d (id %d)", subject, latest.Version, latest.ID)
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
