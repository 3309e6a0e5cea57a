package registry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/formats/compat"
	"github.com/tributary-io/tributary/formats/srclient"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/registry"
)

// startWithRegistry runs the real broker binary with the registry
// listener on and waits until the registry answers.
func startWithRegistry(t *testing.T) (*testbroker.Broker, string) {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d", testbroker.FreePort(t))
	b := testbroker.Start(t, "schema.registry.listeners="+url)
	waitRegistry(t, url)
	return b, url
}

func waitRegistry(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + "/subjects")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry at %s not answering: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func record(fields string) sr.Schema {
	return sr.Schema{Schema: `{"type":"record","name":"Click","namespace":"web","fields":[` + fields + `]}`}
}

func code(err error) int {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return 0
}

// TestFranzSR drives the registry through franz-go's sr client, as a Go
// producer would, then restarts the broker: ids and versions survive.
func TestFranzSR(t *testing.T) {
	t.Parallel()
	b, url := startWithRegistry(t)
	ctx := context.Background()
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	v1 := record(`{"name":"url","type":"string"}`)
	v2 := record(`{"name":"url","type":"string"},{"name":"n","type":"long","default":0}`)
	bad := record(`{"name":"url","type":"string"},{"name":"n","type":"long"},{"name":"x","type":"int"}`)
	var id1, id2 int

	t.Run("register", func(t *testing.T) {
		s1, err := cl.CreateSchema(ctx, "clicks-value", v1)
		if err != nil {
			t.Fatal(err)
		}
		if s1.Version != 1 || s1.ID < 1 {
			t.Fatalf("first registration: %+v", s1)
		}
		id1 = s1.ID
		// The same schema, pretty-printed, under another subject: one id.
		pretty := sr.Schema{Schema: strings.ReplaceAll(v1.Schema, ",", ",\n  ")}
		s, err := cl.CreateSchema(ctx, "other-value", pretty)
		if err != nil || s.ID != id1 || s.Version != 1 {
			t.Fatalf("same schema in another subject: %+v %v, want id %d", s, err, id1)
		}
		again, err := cl.RegisterSchema(ctx, "clicks-value", v1, -1, -1)
		if err != nil || again != id1 {
			t.Fatalf("registering again: %d %v, want %d", again, err, id1)
		}
		s2, err := cl.CreateSchema(ctx, "clicks-value", v2)
		if err != nil || s2.Version != 2 || s2.ID == id1 {
			t.Fatalf("compatible v2: %+v %v", s2, err)
		}
		id2 = s2.ID
	})

	t.Run("incompatible", func(t *testing.T) {
		_, err := cl.CreateSchema(ctx, "clicks-value", bad)
		if code(err) != 409 || !strings.Contains(err.Error(), "incompatible") {
			t.Fatalf("BACKWARD-incompatible v3: %v, want 409", err)
		}
		res, err := cl.CheckCompatibility(ctx, "clicks-value", -1, bad)
		if err != nil || res.Is || len(res.Messages) == 0 {
			t.Fatalf("check against latest: %+v %v", res, err)
		}
		res, err = cl.CheckCompatibility(ctx, "clicks-value", -2, v2)
		if err != nil || !res.Is {
			t.Fatalf("check of v2 against all: %+v %v", res, err)
		}
		if _, err := cl.CreateSchema(ctx, "clicks-value", sr.Schema{Schema: `{"type":"recrd"}`}); code(err) != 42201 {
			t.Fatalf("invalid schema: %v, want 42201", err)
		}
	})

	t.Run("read", func(t *testing.T) {
		s, err := cl.SchemaByID(ctx, id1)
		if err != nil || !strings.Contains(s.Schema, `"name":"url"`) {
			t.Fatalf("by id: %+v %v", s, err)
		}
		subs, err := cl.SubjectsByID(ctx, id1)
		if err != nil || !slices.Equal(subs, []string{"clicks-value", "other-value"}) {
			t.Fatalf("subjects of id %d: %v %v", id1, subs, err)
		}
		vs, err := cl.SubjectVersions(ctx, "clicks-value")
		if err != nil || !slices.Equal(vs, []int{1, 2}) {
			t.Fatalf("versions: %v %v", vs, err)
		}
		all, err := cl.AllSchemas(ctx) // GET /schemas
		if err != nil || len(all) != 3 {
			t.Fatalf("GET /schemas: %d %v", len(all), err)
		}
		latest, err := cl.SchemaByVersion(ctx, "clicks-value", -1)
		if err != nil || latest.ID != id2 || latest.Version != 2 {
			t.Fatalf("latest: %+v %v", latest, err)
		}
		got, err := cl.LookupSchema(ctx, "clicks-value", v1)
		if err != nil || got.ID != id1 || got.Version != 1 {
			t.Fatalf("lookup: %+v %v", got, err)
		}
		if _, err := cl.SchemaByID(ctx, 99999); code(err) != 40403 {
			t.Fatalf("unknown id: %v, want 40403", err)
		}
		if _, err := cl.SchemaByVersion(ctx, "nope", 1); code(err) != 40401 {
			t.Fatalf("unknown subject: %v, want 40401", err)
		}
		if _, err := cl.SchemaByVersion(ctx, "clicks-value", 9); code(err) != 40402 {
			t.Fatalf("unknown version: %v, want 40402", err)
		}
		resp, err := http.Get(url + "/schemas/types")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.schemaregistry.v1+json" {
			t.Fatalf("content type %q", ct)
		}
	})

	t.Run("formats client", func(t *testing.T) {
		// The client the loader and the tracker will use.
		c := srclient.New(url)
		s, err := c.SchemaByID(ctx, id1)
		if err != nil || s.Type != "AVRO" || !strings.Contains(s.Text, `"url"`) {
			t.Fatalf("by id: %+v %v", s, err)
		}
		l, err := c.Latest(ctx, "clicks-value")
		if err != nil || l.ID != id2 || l.Version != 2 {
			t.Fatalf("latest: %+v %v", l, err)
		}
		id, err := c.Register(ctx, "clicks-value", compat.Schema{Text: v2.Schema})
		if err != nil || id != id2 {
			t.Fatalf("register v2 again: %d %v, want %d", id, err, id2)
		}
		var e *srclient.Error
		if _, err := c.SchemaByID(ctx, 424242); !errors.As(err, &e) || e.Code != 40403 || e.Status != 404 {
			t.Fatalf("unknown id: %v, want 40403", err)
		}
		frame := []byte{0, 0, 0, 1, 2, 'x'}
		if fid, body, err := srclient.Frame(frame); err != nil || fid != 258 || string(body) != "x" {
			t.Fatalf("frame: %d %q %v", fid, body, err)
		}
		if _, _, err := srclient.Frame([]byte{1, 0, 0, 0, 1}); err == nil {
			t.Fatal("magic byte 1 accepted")
		}
	})

	t.Run("config and mode", func(t *testing.T) {
		if r := cl.Compatibility(ctx); r[0].Err != nil || r[0].Level != sr.CompatBackward {
			t.Fatalf("global default: %+v", r[0])
		}
		if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "clicks-value"); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		if r := cl.Compatibility(ctx, "clicks-value"); r[0].Err != nil || r[0].Level != sr.CompatNone {
			t.Fatalf("subject level: %+v", r[0])
		}
		s3, err := cl.CreateSchema(ctx, "clicks-value", bad)
		if err != nil || s3.Version != 3 {
			t.Fatalf("v3 under NONE: %+v %v", s3, err)
		}
		if r := cl.ResetCompatibility(ctx, "clicks-value"); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		if r := cl.Compatibility(ctx, "clicks-value"); code(r[0].Err) != 40408 {
			t.Fatalf("after reset: %+v, want 40408", r[0])
		}
		if r := cl.SetMode(ctx, sr.ModeReadOnly, "other-value"); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		if _, err := cl.CreateSchema(ctx, "other-value", v2); code(err) != 42205 {
			t.Fatalf("register in READONLY: %v, want 42205", err)
		}
		if r := cl.Mode(ctx); r[0].Err != nil || r[0].Mode != sr.ModeReadWrite {
			t.Fatalf("global mode: %+v", r[0])
		}
		if r := cl.ResetMode(ctx, "other-value"); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
	})

	t.Run("json schema", func(t *testing.T) {
		// Closed content models: Confluent's rules (ours) refuse a
		// property added to an open one.
		js := func(props, required string) sr.Schema {
			return sr.Schema{Type: sr.TypeJSON, Schema: `{"type":"object","properties":{` + props + `},"required":[` + required + `],"additionalProperties":false}`}
		}
		v1, err := cl.CreateSchema(ctx, "signup-value", js(`"user":{"type":"string"}`, `"user"`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.CreateSchema(ctx, "signup-value", js(`"user":{"type":"string"},"plan":{"type":"string"}`, `"user","plan"`)); code(err) != 409 {
			t.Fatalf("a required property added: %v, want 409", err)
		}
		v2, err := cl.CreateSchema(ctx, "signup-value", js(`"user":{"type":"string"},"plan":{"type":"string"}`, `"user"`))
		if err != nil || v2.Version != 2 || v2.ID == v1.ID || v2.Type != sr.TypeJSON {
			t.Fatalf("an optional property added: %+v %v", v2, err)
		}
	})

	t.Run("import", func(t *testing.T) {
		if r := cl.SetMode(ctx, sr.ModeImport, "imported-value"); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		s, err := cl.CreateSchemaWithIDAndVersion(ctx, "imported-value", sr.Schema{Schema: `"bytes"`}, 100, 5)
		if err != nil || s.ID != 100 || s.Version != 5 {
			t.Fatalf("import with id 100 version 5: %+v %v", s, err)
		}
		if r := cl.ResetMode(ctx, "imported-value"); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		n, err := cl.CreateSchema(ctx, "after-import-value", sr.Schema{Schema: `"double"`})
		if err != nil || n.ID != 101 {
			t.Fatalf("after an import of id 100: %+v %v, want id 101", n, err)
		}
	})

	t.Run("delete", func(t *testing.T) {
		if err := cl.DeleteSchema(ctx, "clicks-value", 3, sr.HardDelete); code(err) != 40407 {
			t.Fatalf("hard delete before soft: %v, want 40407", err)
		}
		if err := cl.DeleteSchema(ctx, "clicks-value", 3, sr.SoftDelete); err != nil {
			t.Fatal(err)
		}
		vs, _ := cl.SubjectVersions(ctx, "clicks-value")
		if !slices.Equal(vs, []int{1, 2}) {
			t.Fatalf("after soft delete of v3: %v", vs)
		}
		if err := cl.DeleteSchema(ctx, "clicks-value", 3, sr.HardDelete); err != nil {
			t.Fatal(err)
		}
		gone, err := cl.DeleteSubject(ctx, "other-value", sr.SoftDelete)
		if err != nil || !slices.Equal(gone, []int{1}) {
			t.Fatalf("soft delete of the subject: %v %v", gone, err)
		}
		subs, _ := cl.Subjects(ctx)
		if !slices.Equal(subs, []string{"after-import-value", "clicks-value", "imported-value", "signup-value"}) {
			t.Fatalf("subjects after delete: %v", subs)
		}
		if _, err := cl.DeleteSubject(ctx, "other-value", sr.HardDelete); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.DeleteSubject(ctx, "other-value", sr.SoftDelete); code(err) != 40401 {
			t.Fatalf("deleting it again: %v, want 40401", err)
		}
	})

	t.Run("references", func(t *testing.T) {
		// Avro: a record naming a type of another subject.
		addr, err := cl.CreateSchema(ctx, "addr-value", sr.Schema{Schema: `{"type":"record","name":"Address","namespace":"web","fields":[{"name":"city","type":"string"}]}`})
		if err != nil {
			t.Fatal(err)
		}
		person := func(fields string) sr.Schema {
			return sr.Schema{
				Schema:     `{"type":"record","name":"Person","namespace":"web","fields":[{"name":"home","type":"web.Address"}` + fields + `]}`,
				References: []sr.SchemaReference{{Name: "web.Address", Subject: "addr-value", Version: addr.Version}},
			}
		}
		if _, err := cl.CreateSchema(ctx, "person-value", sr.Schema{Schema: person("").Schema}); code(err) != 42201 {
			t.Fatalf("a named type of another subject without its reference: %v, want 42201", err)
		}
		p1, err := cl.CreateSchema(ctx, "person-value", person(""))
		if err != nil || len(p1.References) != 1 {
			t.Fatalf("with the reference: %+v %v", p1, err)
		}
		// The check resolves the reference: a field without a default is
		// as incompatible as without references.
		if _, err := cl.CreateSchema(ctx, "person-value", person(`,{"name":"age","type":"int"}`)); code(err) != 409 {
			t.Fatalf("a field added without a default: %v, want 409", err)
		}
		by, err := cl.SchemaReferences(ctx, "addr-value", 1)
		if err != nil || len(by) != 1 || by[0].ID != p1.ID || by[0].Subject != "person-value" {
			t.Fatalf("referencedby: %+v %v", by, err)
		}
		if err := cl.DeleteSchema(ctx, "addr-value", 1, sr.SoftDelete); code(err) != 42206 {
			t.Fatalf("deleting a referenced version: %v, want 42206", err)
		}
		if _, err := cl.DeleteSubject(ctx, "addr-value", sr.SoftDelete); code(err) != 42206 {
			t.Fatalf("deleting a referenced subject: %v, want 42206", err)
		}

		// JSON Schema: $ref to another subject by the reference's name.
		money, err := cl.CreateSchema(ctx, "money-value", sr.Schema{Type: sr.TypeJSON, Schema: `{"type":"object","properties":{"amount":{"type":"number"}}}`})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.CreateSchema(ctx, "order-value", sr.Schema{Type: sr.TypeJSON, Schema: `{"type":"object","properties":{"total":{"type":"string"}}}`}); err != nil {
			t.Fatal(err)
		}
		// Read through the $ref, total becomes an object: old documents
		// (a string) no longer validate.
		refd := sr.Schema{Type: sr.TypeJSON, Schema: `{"type":"object","properties":{"total":{"$ref":"money.json"}}}`,
			References: []sr.SchemaReference{{Name: "money.json", Subject: "money-value", Version: money.Version}}}
		if _, err := cl.CreateSchema(ctx, "order-value", refd); code(err) != 409 {
			t.Fatalf("a string property replaced by a $ref to an object: %v, want 409", err)
		}
		if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "order-value"); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		if _, err := cl.CreateSchema(ctx, "order-value", refd); err != nil {
			t.Fatal(err)
		}

		// Referrers first, then what they reference; everything permanently,
		// so that the ids of later subtests stay where they were.
		for _, s := range []string{"person-value", "order-value", "addr-value", "money-value"} {
			if _, err := cl.DeleteSubject(ctx, s, sr.SoftDelete); err != nil {
				t.Fatalf("soft delete of %s: %v", s, err)
			}
			if _, err := cl.DeleteSubject(ctx, s, sr.HardDelete); err != nil {
				t.Fatalf("hard delete of %s: %v", s, err)
			}
		}
	})

	t.Run("protobuf", func(t *testing.T) {
		pb := func(body string) sr.Schema {
			return sr.Schema{Type: sr.TypeProtobuf, Schema: `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order { google.protobuf.Timestamp at = 1; ` + body + ` }`}
		}
		v1, err := cl.CreateSchema(ctx, "pb-value", pb(`string id = 2;`))
		if err != nil || v1.Type != sr.TypeProtobuf {
			t.Fatalf("%+v %v", v1, err)
		}
		if _, err := cl.CreateSchema(ctx, "pb-value", pb(`int32 id = 2;`)); code(err) != 409 || !strings.Contains(err.Error(), "FIELD_SCALAR_KIND_CHANGED") {
			t.Fatalf("field 2 from string to int32: %v, want 409 naming FIELD_SCALAR_KIND_CHANGED", err)
		}
		if _, err := cl.CreateSchema(ctx, "pb-value", pb(`strin id = 2;`)); code(err) != 42201 {
			t.Fatalf("unknown type: %v, want 42201", err)
		}
		if v2, err := cl.CreateSchema(ctx, "pb-value", pb(`string id = 2; int64 qty = 3;`)); err != nil || v2.Version != 2 {
			t.Fatalf("a field added: %+v %v", v2, err)
		}
		// normalize: layout and comments do not make another schema.
		nctx := sr.WithParams(ctx, sr.Normalize)
		n1, err := cl.CreateSchema(nctx, "pb-value", pb(`string id = 2; int64 qty = 3; /* quantity */`))
		if err != nil {
			t.Fatal(err)
		}
		n2, err := cl.CreateSchema(nctx, "pb-value", pb("string id=2;\n  int64 qty=3;"))
		if err != nil || n2.ID != n1.ID || n2.Version != n1.Version {
			t.Fatalf("normalized twice: %+v then %+v %v", n1, n2, err)
		}
		types, err := cl.SupportedTypes(ctx)
		if err != nil || !slices.Contains(types, sr.TypeProtobuf) {
			t.Fatalf("types %v %v", types, err)
		}
		if _, err := cl.DeleteSubject(ctx, "pb-value", sr.SoftDelete); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.DeleteSubject(ctx, "pb-value", sr.HardDelete); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("second registry", func(t *testing.T) {
		// `tributary registry` against the same cluster reads the same
		// topic: same ids, and what one registers the other serves.
		url2 := fmt.Sprintf("http://127.0.0.1:%d", testbroker.FreePort(t))
		cmd := exec.Command(testbroker.Binary(t), "registry", "-b", b.Addr(), "--listen", strings.TrimPrefix(url2, "http://"))
		logs := &lockedBuffer{}
		cmd.Stderr = logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Errorf("tributary registry: %v\n%s", err, logs.String())
			}
		}()
		waitRegistry(t, url2)
		cl2, _ := sr.NewClient(sr.URLs(url2))
		s, err := cl2.SchemaByVersion(ctx, "clicks-value", 2)
		if err != nil || s.ID != id2 {
			t.Fatalf("v2 on the second registry: %+v %v, want id %d", s, err, id2)
		}
		n, err := cl2.CreateSchema(ctx, "second-value", sr.Schema{Schema: `"float"`})
		if err != nil || n.ID != 102 {
			t.Fatalf("registered on the second registry: %+v %v, want id 102", n, err)
		}
		// Outside a broker it is never the leader: it forwards the write to
		// the registry of the broker that leads _schemas partition 0.
		if !strings.Contains(logs.String(), "forwarded a write to the leader") {
			t.Fatalf("tributary registry did not forward its write:\n%s", logs.String())
		}
		// Both registries take writes at once (forwarded to one leader; the
		// records that would lose a race are ignored by every reader and
		// retried), so every registration succeeds once, with one id per
		// schema, and both agree.
		for _, r := range cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "race-value", "race2-value") {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		const races = 12
		ids := make([]int, 2*races)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range 2 * races {
			c := cl
			if i%2 == 1 {
				c = cl2
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Pairs (2k, 2k+1) register one schema through both
				// registries, under two subjects: one id for the two.
				schema := sr.Schema{Schema: fmt.Sprintf(`{"type":"enum","name":"E","symbols":["S%d"]}`, i/2)}
				subject := "race-value"
				if i%2 == 1 {
					subject = "race2-value"
				}
				id, err := c.RegisterSchema(ctx, subject, schema, -1, -1)
				if err != nil {
					t.Errorf("registration %d: %v", i, err)
				}
				ids[i] = id
			}()
		}
		wg.Wait()
		seen := map[int]int{}
		for i := 0; i < 2*races; i += 2 {
			if ids[i] != ids[i+1] {
				t.Errorf("schema %d got ids %d and %d", i/2, ids[i], ids[i+1])
			}
			if other, dup := seen[ids[i]]; dup {
				t.Errorf("schemas %d and %d share id %d", other, i/2, ids[i])
			}
			seen[ids[i]] = i / 2
		}
		for _, c := range []*sr.Client{cl, cl2} {
			deadline := time.Now().Add(30 * time.Second)
			for {
				all, err := c.AllSchemas(ctx)
				got := 0
				for _, s := range all {
					if strings.HasPrefix(s.Subject, "race") {
						got++
					}
				}
				if err == nil && got == 2*races {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a registry serves %d of the %d race registrations: %v", got, 2*races, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		t.Logf("%d registrations through two registries in %v; races lost: in-process registry %d, tributary registry %d",
			2*races, time.Since(start).Round(time.Millisecond),
			strings.Count(b.Log(), "lost a write race"), strings.Count(logs.String(), "lost a write race"))
		for _, subject := range []string{"race-value", "race2-value"} {
			a, _ := cl.Schemas(ctx, subject)
			b, _ := cl2.Schemas(ctx, subject)
			if fmt.Sprint(a) != fmt.Sprint(b) || len(a) != races {
				t.Fatalf("%s: the registries disagree or miss versions:\n%v\n%v", subject, a, b)
			}
		}

		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err := cl.SchemaByVersion(ctx, "second-value", 1)
			if err == nil && got.ID == n.ID {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the first registry never served it: %+v %v", got, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("ready when the topic ends without a record", func(t *testing.T) {
		// Every record of the topic deleted (DeleteRecords up to its end):
		// the tail reads no record, yet the registry must become ready.
		const topic = "_schemas_emptied"
		kc, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		defer kc.Close()
		adm := kadm.NewClient(kc)
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		if err := kc.ProduceSync(ctx, &kgo.Record{Key: []byte(`{"keytype":"NOOP","magic":0}`)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		del, err := adm.DeleteRecords(ctx, kadm.Offsets(ends.Offsets()))
		if err != nil || del.Error() != nil {
			t.Fatalf("delete records: %v %v", err, del.Error())
		}
		r, err := registry.Start(registry.Config{Brokers: []string{b.Addr()}, Topic: topic, Listen: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close(ctx)
		select {
		case <-r.Ready():
		case <-time.After(20 * time.Second):
			t.Fatal("not ready 20s after start")
		}
	})

	t.Run("restart keeps ids", func(t *testing.T) {
		b.Stop()
		b.Restart()
		waitRegistry(t, url)
		s, err := cl.SchemaByVersion(ctx, "clicks-value", 2)
		if err != nil || s.ID != id2 {
			t.Fatalf("v2 after restart: %+v %v, want id %d", s, err, id2)
		}
		again, err := cl.RegisterSchema(ctx, "clicks-value", v2, -1, -1)
		if err != nil || again != id2 {
			t.Fatalf("v2 registered again after restart: %d %v, want %d", again, err, id2)
		}
		n, err := cl.CreateSchema(ctx, "new-value", sr.Schema{Schema: `"string"`})
		if err != nil || n.ID != 103+12 {
			t.Fatalf("a new schema after restart: %+v %v, want id %d", n, err, 103+12)
		}
	})
}

// lockedBuffer collects a child process's stderr while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
