package main

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tributary-io/tributary/formats/compat"
	"github.com/tributary-io/tributary/formats/srclient"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestSchemaCommands drives `tributary schema ...` against the broker's
// registry, then `consume --registry` over Avro, JSON Schema and Protobuf
// records framed with their ids, and one with an unknown id.
func TestSchemaCommands(t *testing.T) {
	t.Parallel()
	url := fmt.Sprintf("http://127.0.0.1:%d", testbroker.FreePort(t))
	b := testbroker.Start(t, "schema.registry.listeners="+url)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + "/subjects")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry not ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rec := func(fields string) string {
		return `{"type":"record","name":"Click","namespace":"web","fields":[` + fields + `]}`
	}
	v1 := write("v1.avsc", rec(`{"name":"url","type":"string"}`))
	v2text := rec(`{"name":"url","type":"string"},{"name":"ms","type":"long","default":0}`)
	v2 := write("v2.avsc", v2text)
	bad := write("bad.avsc", rec(`{"name":"url","type":"int"}`))
	js := write("signup.json", `{"type":"object","properties":{"user":{"type":"string"}}}`)
	pbText := `syntax = "proto3"; package shop; message Header { string x = 1; } message Order { string id = 1; int64 cents = 2; }`
	pb := write("order.proto", pbText)
	r := func(args ...string) string {
		return mustRunCLI(t, "", append([]string{"schema", "--registry", url}, args...)...)
	}

	if out := r("register", "clicks-value", "--file", v1); !strings.Contains(out, "version 1 id 1") {
		t.Fatalf("register v1: %q", out)
	}
	if out := r("check", "clicks-value", "--file", v2); !strings.Contains(out, "compatible with clicks-value") {
		t.Fatalf("check v2: %q", out)
	}
	wantCLIError(t, "", []string{"incompatible with clicks-value", "BACKWARD"}, "schema", "--registry", url, "check", "clicks-value", "--file", bad)
	wantCLIError(t, "", []string{"is incompatible with an earlier schema"}, "schema", "--registry", url, "register", "clicks-value", "--file", bad)
	r("register", "clicks-value", "--file", v2)
	jsOut := r("register", "signups-value", "--file", js)
	pbOut := r("register", "orders-value", "--file", pb)
	if out := r("list"); !strings.Contains(out, "clicks-value\t1 2\n") || !strings.Contains(out, "orders-value\t1\n") {
		t.Fatalf("list: %q", out)
	}
	if out := r("get", "clicks-value", "--schema-only"); strings.TrimSpace(out) != v2text {
		t.Fatalf("get latest: %q", out)
	}
	if out := r("get", "--id", "3"); !strings.Contains(out, `"schemaType": "JSON"`) {
		t.Fatalf("get --id 3: %q", out)
	}
	if out := r("config", "clicks-value", "--set", "full_transitive"); out != "clicks-value\tFULL_TRANSITIVE\n" {
		t.Fatalf("config --set: %q", out)
	}
	if out := r("config"); out != "(global)\tBACKWARD\n" {
		t.Fatalf("config: %q", out)
	}
	if out := r("mode", "orders-value", "--set", "readonly"); out != "orders-value\tREADONLY\n" {
		t.Fatalf("mode --set: %q", out)
	}
	wantCLIError(t, "", []string{"read-only"}, "schema", "--registry", url, "register", "orders-value", "--file", v1)
	r("mode", "orders-value", "--reset")

	// Records of each type, framed with their ids, through consume.
	var ids [3]int
	fmt.Sscanf(jsOut, "subject signups-value version 1 id %d", &ids[1])
	fmt.Sscanf(pbOut, "subject orders-value version 1 id %d", &ids[2])
	ids[0] = 2
	frame := func(id int, body []byte) []byte {
		return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), body...)
	}
	av, err := avro.Marshal(avro.MustParse(v2text), map[string]any{"url": "/a", "ms": int64(7)})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := compat.ParseProto(compat.Schema{Type: compat.Protobuf, Text: pbText})
	if err != nil {
		t.Fatal(err)
	}
	md := fd.Messages().Get(1)
	m := dynamicpb.NewMessage(md)
	m.Set(md.Fields().ByName("id"), protoreflect.ValueOfString("o1"))
	m.Set(md.Fields().ByName("cents"), protoreflect.ValueOfInt64(250))
	pbBody, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("mixed"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	if err := kc.ProduceSync(t.Context(),
		&kgo.Record{Value: frame(ids[0], av)},
		&kgo.Record{Value: frame(ids[1], []byte(`{"user":"u1"}`))},
		&kgo.Record{Value: frame(ids[2], append(srclient.AppendProtoIndexes(nil, []int{1}), pbBody...))},
		&kgo.Record{Value: frame(9999, []byte("x"))},
	).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runKafkaCmd(t, "", "consume", "mixed", "-b", b.Addr(), "--from-beginning", "--count", "4", "--registry", url)
	if err != nil {
		t.Fatalf("consume: %v\n%s", err, errOut)
	}
	want := `{"ms":7,"url":"/a"}` + "\n" + `{"user":"u1"}` + "\n" + `{"id":"o1","cents":"250"}` + "\n"
	if strings.ReplaceAll(out, " ", "") != want {
		t.Fatalf("consume --registry printed:\n%s\nwant:\n%s", out, want)
	}
	if !strings.Contains(errOut, "schema id 9999") || !strings.Contains(errOut, "1 not decoded") {
		t.Fatalf("consume stderr: %q", errOut)
	}

	if out := r("delete", "clicks-value"); out != "deleted clicks-value versions 1 2\n" {
		t.Fatalf("delete: %q", out)
	}
	if out := r("delete", "clicks-value", "--permanent"); out != "deleted clicks-value versions 1 2\n" {
		t.Fatalf("delete --permanent: %q", out)
	}
	if out := r("list", "--deleted"); strings.Contains(out, "clicks-value") {
		t.Fatalf("list after a permanent delete: %q", out)
	}
}
