package loader_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tributary-io/tributary/formats/compat"
	"github.com/tributary-io/tributary/formats/srclient"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestLoadRegistry: `load run --format avro --registry` over a topic
// whose producer moves through three compatible Avro versions registered
// in the broker's registry. The first run writes the v1 columns; records of
// v2 and v3 evolve the table at the next run (new nullable columns, no
// restart); a record with an id the registry does not know and one whose
// body does not decode land in _errors with the reason, and the run
// succeeds. pyarrow reads every file back. Then a JSON Schema subject
// through --format json --registry.
func TestLoadRegistry(t *testing.T) {
	t.Parallel()
	url := fmt.Sprintf("http://127.0.0.1:%d", testbroker.FreePort(t))
	b := testbroker.Start(t, "schema.registry.listeners="+url)
	ctx := t.Context()
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := cl.Subjects(ctx); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("registry not ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	const topic = "clicks"
	testbroker.CreateTopic(t, b.Addr(), topic, 2)
	kc, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()

	versions := []string{
		`{"name":"id","type":"string"},{"name":"n","type":"long"}`,
		`{"name":"id","type":"string"},{"name":"n","type":"long"},{"name":"tag","type":["null","string"],"default":null}`,
		`{"name":"id","type":"string"},{"name":"n","type":"long"},{"name":"tag","type":["null","string"],"default":null},{"name":"score","type":["null","double"],"default":null}`,
	}
	frame := func(id int, body []byte) []byte {
		b := binary.BigEndian.AppendUint32([]byte{0}, uint32(id))
		return append(b, body...)
	}
	var ids []int
	send := func(v, from, n int) {
		text := `{"type":"record","name":"Click","namespace":"web","fields":[` + versions[v] + `]}`
		ss, err := cl.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: text})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ss.ID)
		as := avro.MustParse(text)
		var recs []*kgo.Record
		for i := from; i < from+n; i++ {
			m := map[string]any{"id": fmt.Sprintf("c%d", i), "n": int64(i)}
			if v >= 1 {
				m["tag"] = fmt.Sprintf("t%d", i)
			}
			if v >= 2 {
				m["score"] = float64(i) / 2
			}
			body, err := avro.Marshal(as, m)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, &kgo.Record{Value: frame(ss.ID, body)})
		}
		if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	target := "file://" + t.TempDir()
	load := func() string {
		return mustLoad(t, "-b", b.Addr(), "--topics", topic, "--format", "avro", "--registry", url, "--target", target)
	}

	send(0, 0, 200)
	load()
	send(1, 200, 200)
	send(2, 400, 200)
	bad := []*kgo.Record{
		{Value: frame(9999, []byte{2, 'x'})}, // an id the registry never gave
		{Value: frame(ids[0], []byte{0x80})}, // a truncated body
		{Value: []byte(`{"not":"framed"}`)},  // no Confluent framing
	}
	if err := kc.ProduceSync(ctx, bad...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out := load()
	if !strings.Contains(out, "3 bad records") {
		t.Errorf("the second run does not report 3 bad records:\n%s", out)
	}

	dir := t.TempDir()
	fs, err := fsys.Open(target, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	copyTree(t, fs, topic, filepath.Join(dir, topic))
	copyTree(t, fs, "_errors/"+topic, filepath.Join(dir, "_errors"))
	fs.Close()
	reasons := strings.Builder{}
	errFiles, _ := filepath.Glob(filepath.Join(dir, "_errors", "*.jsonl"))
	for _, f := range errFiles {
		b, _ := os.ReadFile(f)
		reasons.Write(b)
	}
	for _, want := range []string{"Avro schema id 9999: unknown to the schema registry", "invalid Avro", "not Confluent Avro framing"} {
		if !strings.Contains(reasons.String(), want) {
			t.Errorf("no bad record with reason %q in:\n%s", want, reasons.String())
		}
	}

	// Every record with every field it was written with, by pyarrow.
	py := testbroker.Python(t, "pyarrow")
	script := `import json,os,sys
import pyarrow.parquet as pq
for root, _, files in sorted(os.walk(sys.argv[1])):
    for f in sorted(files):
        if f.endswith(".parquet"):
            t = pq.read_table(os.path.join(root, f))
            for r in t.to_pylist():
                print(json.dumps({"cols": t.column_names, "row": r}, default=str))`
	res, err := exec.Command(py, "-c", script, filepath.Join(dir, topic)).Output()
	if err != nil {
		t.Fatalf("pyarrow: %v", err)
	}
	seen := map[string]bool{}
	widest := 0
	sc := bufio.NewScanner(bytes.NewReader(res))
	for sc.Scan() {
		var r struct {
			Cols []string       `json:"cols"`
			Row  map[string]any `json:"row"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		widest = max(widest, len(r.Cols))
		id, _ := r.Row["id"].(string)
		var i int
		fmt.Sscanf(id, "c%d", &i)
		if seen[id] || r.Row["n"] != float64(i) {
			t.Fatalf("row %v: duplicate or wrong n", r.Row)
		}
		seen[id] = true
		switch {
		case i >= 400 && r.Row["score"] != float64(i)/2:
			t.Fatalf("v3 row %v: score lost", r.Row)
		case i >= 200 && r.Row["tag"] != fmt.Sprintf("t%d", i):
			t.Fatalf("v2/v3 row %v: tag lost", r.Row)
		case i < 200 && r.Row["tag"] != nil:
			t.Fatalf("v1 row %v has a tag", r.Row)
		}
	}
	if len(seen) != 600 {
		t.Fatalf("%d distinct records in the lake, want 600", len(seen))
	}
	// A version that breaks the table (n from long to string), registered
	// with the subject's checks off: the next run refuses it, naming it.
	if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, topic+"-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if _, err := cl.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: `{"type":"record","name":"Click","namespace":"web","fields":[{"name":"id","type":"string"},{"name":"n","type":"string"}]}`}); err != nil {
		t.Fatal(err)
	}
	if out, err := tributary(t, nil, "load", "run", "-b", b.Addr(), "--topics", topic, "--format", "avro", "--registry", url, "--target", target); err == nil ||
		!strings.Contains(out, "subject clicks-value version 4") || !strings.Contains(out, "version 3") {
		t.Fatalf("a run after an incompatible version: %v\n%s", err, out)
	}
	if widest != 8 { // id, n, tag, score, _partition, _offset, and dt, hr from the directories
		t.Fatalf("the widest file has %d columns, want 8", widest)
	}

	// A JSON Schema subject: framed JSON records, one with an unknown id.
	js, err := cl.CreateSchema(ctx, "signups-value", sr.Schema{Type: sr.TypeJSON,
		Schema: `{"type":"object","properties":{"user":{"type":"string"},"seats":{"type":"integer"}},"required":["user"]}`})
	if err != nil {
		t.Fatal(err)
	}
	testbroker.CreateTopic(t, b.Addr(), "signups", 1)
	var jrecs []*kgo.Record
	for i := range 50 {
		jrecs = append(jrecs, &kgo.Record{Topic: "signups", Value: frame(js.ID, []byte(fmt.Sprintf(`{"user":"u%d","seats":%d}`, i, i)))})
	}
	jrecs = append(jrecs, &kgo.Record{Topic: "signups", Value: frame(9998, []byte(`{"user":"x"}`))})
	if err := kc.ProduceSync(ctx, jrecs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out = mustLoad(t, "-b", b.Addr(), "--topics", "signups", "--format", "json", "--registry", url, "--target", target, "--job", "signups")
	if !strings.Contains(out, "50 rows") || !strings.Contains(out, "1 bad record") {
		t.Fatalf("json run:\n%s", out)
	}
	fs, err = fsys.Open(target, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	copyTree(t, fs, "signups", filepath.Join(dir, "signups"))
	fs.Close()
	res, err = exec.Command(py, "-c", `import sys,glob,pyarrow.parquet as pq
rows=[r for f in sorted(glob.glob(sys.argv[1]+"/**/*.parquet", recursive=True)) for r in pq.read_table(f).to_pylist()]
print(len(rows), sum(r["seats"] for r in rows), sorted(rows[0].keys()))`, filepath.Join(dir, "signups")).Output()
	if err != nil {
		t.Fatalf("pyarrow: %v", err)
	}
	if got := strings.TrimSpace(string(res)); got != "50 1225 ['_offset', '_partition', 'dt', 'hr', 'seats', 'user']" {
		t.Fatalf("signups read back: %s", got)
	}

	// A Protobuf subject: the table is the file's second message, records
	// carry the message index [1]; one body does not decode.
	pbText := `syntax = "proto3"; package shop; import "google/protobuf/timestamp.proto";
message Header { string x = 1; }
message Order { string id = 1; int64 cents = 2; google.protobuf.Timestamp at = 3; repeated string tags = 4; }`
	pbs, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Type: sr.TypeProtobuf, Schema: pbText})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := compat.ParseProto(compat.Schema{Type: compat.Protobuf, Text: pbText})
	if err != nil {
		t.Fatal(err)
	}
	md := fd.Messages().ByName("Order")
	testbroker.CreateTopic(t, b.Addr(), "orders", 1)
	var precs []*kgo.Record
	for i := range 20 {
		m := dynamicpb.NewMessage(md)
		f := md.Fields()
		m.Set(f.ByName("id"), protoreflect.ValueOfString(fmt.Sprintf("o%d", i)))
		m.Set(f.ByName("cents"), protoreflect.ValueOfInt64(int64(i)*100))
		ts := dynamicpb.NewMessage(f.ByName("at").Message())
		ts.Set(ts.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(1764633600+int64(i)))
		m.Set(f.ByName("at"), protoreflect.ValueOfMessage(ts))
		m.Mutable(f.ByName("tags")).List().Append(protoreflect.ValueOfString("t"))
		body, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		precs = append(precs, &kgo.Record{Topic: "orders", Value: frame(pbs.ID, append(srclient.AppendProtoIndexes(nil, []int{1}), body...))})
	}
	precs = append(precs, &kgo.Record{Topic: "orders", Value: frame(pbs.ID, []byte{2, 2, 0xff})})
	if err := kc.ProduceSync(ctx, precs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out = mustLoad(t, "-b", b.Addr(), "--topics", "orders", "--format", "protobuf", "--proto-message", "Order", "--registry", url, "--target", target, "--job", "orders")
	if !strings.Contains(out, "20 rows") || !strings.Contains(out, "1 bad record") {
		t.Fatalf("protobuf run:\n%s", out)
	}
	fs, err = fsys.Open(target, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	copyTree(t, fs, "orders", filepath.Join(dir, "orders"))
	fs.Close()
	res, err = exec.Command(py, "-c", `import sys,glob,pyarrow.parquet as pq
rows=[r for f in sorted(glob.glob(sys.argv[1]+"/**/*.parquet", recursive=True)) for r in pq.read_table(f).to_pylist()]
print(len(rows), sum(r["cents"] for r in rows), rows[-1]["at"].isoformat(), rows[-1]["tags"], sorted(rows[0].keys()))`, filepath.Join(dir, "orders")).Output()
	if err != nil {
		t.Fatalf("pyarrow: %v", err)
	}
	if got := strings.TrimSpace(string(res)); got != "20 19000 2025-12-02T00:00:19+00:00 ['t'] ['_offset', '_partition', 'at', 'cents', 'dt', 'hr', 'id', 'tags']" {
		t.Fatalf("orders read back: %s", got)
	}
}
