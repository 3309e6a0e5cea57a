// Package srclient is the schema registry client of Tributary's own
// programs (the loader, the tracker, the console): the few calls they need
// of any Confluent-compatible registry, with the writer's schema cached by
// id, since an id never changes its schema. Safe for concurrent use.
package srclient

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/formats/compat"
)

// Error is the registry's answer to a failed call, with Confluent's code
// (40403 schema not found, 40401 subject not found, ...).
type Error struct {
	Status  int
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("formats/srclient: registry answered %d (error code %d): %s", e.Status, e.Code, e.Message)
}

// Schema is a registered schema.
type Schema struct {
	compat.Schema
	ID      int
	Subject string // empty when looked up by id
	Version int
}

// Client talks to one registry.
type Client struct {
	base string
	http *http.Client

	mu   sync.Mutex
	byID map[int]Schema
}

// New returns a client of the registry at baseURL (http://host:port).
func New(baseURL string) *Client {
	return &Client{base: strings.TrimSuffix(baseURL, "/"), http: &http.Client{Timeout: 30 * time.Second}, byID: map[int]Schema{}}
}

func (c *Client) do(ctx context.Context, method, path string, body, into any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("formats/srclient: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("formats/srclient: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		e := &Error{Status: resp.StatusCode}
		if json.Unmarshal(b, e) != nil || e.Message == "" {
			e.Message = strings.TrimSpace(string(b))
		}
		return e
	}
	return json.Unmarshal(b, into)
}

// SchemaByID returns the schema of id, from the cache after the first call.
func (c *Client) SchemaByID(ctx context.Context, id int) (Schema, error) {
	c.mu.Lock()
	s, ok := c.byID[id]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	var got struct {
		Schema     string `json:"schema"`
		SchemaType string `json:"schemaType"`
		References []ref  `json:"references"`
	}
	if err := c.do(ctx, http.MethodGet, fmt.Sprintf("/schemas/ids/%d", id), nil, &got); err != nil {
		return Schema{}, err
	}
	s = Schema{Schema: compat.Schema{Type: typeOrAvro(got.SchemaType), Text: got.Schema}, ID: id}
	var err error
	if s.Refs, err = c.resolve(ctx, got.References); err != nil {
		return Schema{}, err
	}
	c.mu.Lock()
	c.byID[id] = s
	c.mu.Unlock()
	return s, nil
}

type ref struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// resolve fetches the schemas refs name, transitively, each one's own
// references first (compat.Schema.Refs).
func (c *Client) resolve(ctx context.Context, refs []ref) ([]compat.Ref, error) {
	var out []compat.Ref
	seen := map[ref]bool{}
	var visit func(refs []ref, depth int) error
	visit = func(refs []ref, depth int) error {
		if depth > 64 || len(out) > 1000 {
			return fmt.Errorf("formats/srclient: references nested too deep or too many")
		}
		for _, r := range refs {
			k := ref{Subject: r.Subject, Version: r.Version}
			if seen[k] {
				continue
			}
			seen[k] = true
			var v versionOut
			if err := c.do(ctx, http.MethodGet, fmt.Sprintf("/subjects/%s/versions/%d?deleted=true", url.PathEscape(r.Subject), r.Version), nil, &v); err != nil {
				return err
			}
			if err := visit(v.References, depth+1); err != nil {
				return err
			}
			out = append(out, compat.Ref{Name: r.Name, Text: v.Schema})
		}
		return nil
	}
	return out, visit(refs, 0)
}

type versionOut struct {
	References []ref  `json:"references"`
	Subject    string `json:"subject"`
	Version    int    `json:"version"`
	ID         int    `json:"id"`
	SchemaType string `json:"schemaType"`
	Schema     string `json:"schema"`
}

func (v versionOut) schema() Schema {
	return Schema{Schema: compat.Schema{Type: typeOrAvro(v.SchemaType), Text: v.Schema}, ID: v.ID, Subject: v.Subject, Version: v.Version}
}

// Latest returns the latest live version of subject: the table schema the
// loader maps records to.
func (c *Client) Latest(ctx context.Context, subject string) (Schema, error) {
	var v versionOut
	if err := c.do(ctx, http.MethodGet, "/subjects/"+url.PathEscape(subject)+"/versions/latest", nil, &v); err != nil {
		return Schema{}, err
	}
	s := v.schema()
	var err error
	if s.Refs, err = c.resolve(ctx, v.References); err != nil {
		return Schema{}, err
	}
	return s, nil
}

// Subjects returns the names of the subjects with a live version.
func (c *Client) Subjects(ctx context.Context) ([]string, error) {
	var names []string
	err := c.do(ctx, http.MethodGet, "/subjects", nil, &names)
	return names, err
}

// Register registers s under subject (or finds it registered) and returns
// its id.
func (c *Client) Register(ctx context.Context, subject string, s compat.Schema) (int, error) {
	var got struct {
		ID int `json:"id"`
	}
	body := map[string]string{"schema": s.Text, "schemaType": typeOrAvro(s.Type)}
	if err := c.do(ctx, http.MethodPost, "/subjects/"+url.PathEscape(subject)+"/versions", body, &got); err != nil {
		return 0, err
	}
	return got.ID, nil
}

func typeOrAvro(t string) string {
	if t == "" {
		return compat.Avro
	}
	return t
}

// Frame splits a record value in the Confluent wire format: magic byte 0,
// the schema id as a big-endian uint32, then the serialized body.
func Frame(value []byte) (id int, body []byte, err error) {
	if len(value) < 5 || value[0] != 0 {
		return 0, nil, fmt.Errorf("formats/srclient: not the Confluent framing (magic byte 0 and a 4-byte schema id)")
	}
	return int(uint32(value[1])<<24 | uint32(value[2])<<16 | uint32(value[3])<<8 | uint32(value[4])), value[5:], nil
}

// ProtoIndexes splits the message-index path that Confluent's Protobuf
// serializers put after the schema id: a zigzag varint count, then that
// many zigzag varint indexes (a lone 0 byte meaning [0], the first
// message), naming the message within the schema's file.
func ProtoIndexes(body []byte) (indexes []int, rest []byte, err error) {
	n, k := binary.Varint(body)
	if k <= 0 {
		return nil, nil, fmt.Errorf("formats/srclient: truncated Protobuf message index")
	}
	body = body[k:]
	if n == 0 {
		return []int{0}, body, nil
	}
	if n < 0 || n > 128 {
		return nil, nil, fmt.Errorf("formats/srclient: Protobuf message index of %d levels", n)
	}
	indexes = make([]int, n)
	for i := range indexes {
		v, k := binary.Varint(body)
		if k <= 0 || v < 0 || v > 1<<20 {
			return nil, nil, fmt.Errorf("formats/srclient: bad Protobuf message index")
		}
		indexes[i], body = int(v), body[k:]
	}
	return indexes, body, nil
}

// AppendProtoIndexes is the serializer's side of ProtoIndexes.
func AppendProtoIndexes(b []byte, indexes []int) []byte {
	if len(indexes) == 1 && indexes[0] == 0 {
		return append(b, 0)
	}
	b = binary.AppendVarint(b, int64(len(indexes)))
	for _, i := range indexes {
		b = binary.AppendVarint(b, int64(i))
	}
	return b
}
