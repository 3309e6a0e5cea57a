package kafkacli

import (
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

func TestFormat(t *testing.T) {
	m := &kafka.Message{
		Topic: "orders", Partition: 2, Offset: 41, Key: []byte("k1"), Value: []byte("v 1"),
		Headers: []kafka.Header{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("")}},
		Time:    time.UnixMilli(1700000000123),
	}
	for _, c := range []struct{ tmpl, want string }{
		{DefaultFormat, "v 1\n"},
		{`%t/%p@%o %k=%s (%K,%S) %T [%h]\n`, "orders/2@41 k1=v 1 (2,3) 1700000000123 [a=1,b=]\n"},
		{`100%% \\ \t|\r`, "100% \\ \t|\r"},
		{`no newline`, "no newline"},
		{``, ""},
	} {
		f, err := ParseFormat(c.tmpl)
		if err != nil {
			t.Errorf("%q: %v", c.tmpl, err)
			continue
		}
		if got := string(f.Append(nil, m)); got != c.want {
			t.Errorf("%q: got %q, want %q", c.tmpl, got, c.want)
		}
	}
	// A null key has length -1, as kcat prints it.
	f, _ := ParseFormat(`%K %S`)
	if got := string(f.Append(nil, &kafka.Message{Value: []byte{}})); got != "-1 0" {
		t.Errorf("null key, empty value: %q", got)
	}
	for tmpl, want := range map[string]string{
		`%x`:     `unknown directive %x at byte 0`,
		`ab%`:    `% at the end`,
		`\q`:     `unknown escape \q at byte 0`,
		`%s\`:    `\ at the end`,
		`%s %z `: `unknown directive %z at byte 3`,
	} {
		_, err := ParseFormat(tmpl)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--format") {
			t.Errorf("%q: err = %v, want it to contain %q", tmpl, err, want)
		}
	}
}

func TestParseBootstrap(t *testing.T) {
	for in, want := range map[string]string{
		"localhost:9092":            "localhost:9092",
		"a:1, b:2":                  "a:1,b:2",
		"kafka-1":                   "kafka-1:9092",
		"[::1]:19092":               "[::1]:19092",
		"127.0.0.1:19092,127.0.0.2": "127.0.0.1:19092,127.0.0.2:9092",
	} {
		got, err := ParseBootstrap(in)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("%q: %v, %v; want %s", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":            "no broker address",
		"host:port":   `bad port "port"`,
		"host:70000":  `bad port "70000"`,
		":9092":       "no host",
		"a:1:2:3":     "is not host:port",
		" , ":         "no broker address",
		"ok:1,bad:-1": `bad port "-1" in "bad:-1"`,
	} {
		_, err := ParseBootstrap(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--bootstrap") {
			t.Errorf("%q: err = %v, want it to contain %q", in, err, want)
		}
	}
}

func TestParseOptions(t *testing.T) {
	for in, want := range map[string]kafka.RequiredAcks{"all": kafka.RequireAll, "-1": kafka.RequireAll, "ALL": kafka.RequireAll, "1": kafka.RequireOne, "0": kafka.RequireNone} {
		if got, err := ParseAcks(in); err != nil || got != want {
			t.Errorf("acks %q: %v, %v", in, got, err)
		}
	}
	if _, err := ParseAcks("2"); err == nil || !strings.Contains(err.Error(), `--acks "2"`) {
		t.Errorf("acks 2: %v", err)
	}
	for _, in := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		if _, err := ParseCompression(in); err != nil {
			t.Errorf("compression %q: %v", in, err)
		}
	}
	if _, err := ParseCompression("brotli"); err == nil || !strings.Contains(err.Error(), `--compression "brotli"`) {
		t.Errorf("compression brotli: %v", err)
	}
	if k, v, err := ParseKV("set", "a=b=c"); err != nil || k != "a" || v != "b=c" {
		t.Errorf("a=b=c: %q %q %v", k, v, err)
	}
	for _, bad := range []string{"novalue", "=v"} {
		if _, _, err := ParseKV("set", bad); err == nil || !strings.Contains(err.Error(), "--set "+`"`+bad+`"`) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestMatchTopics(t *testing.T) {
	topics := []TopicInfo{{Name: "__consumer_offsets", Internal: true}, {Name: "orders"}, {Name: "orders-eu"}, {Name: "payments"}}
	names := func(ts []TopicInfo) string {
		var s []string
		for _, t := range ts {
			s = append(s, t.Name)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		exprs    []string
		internal bool
		want     string
	}{
		{nil, false, "orders,orders-eu,payments"},
		{nil, true, "__consumer_offsets,orders,orders-eu,payments"},
		{[]string{"orders"}, false, "orders"}, // whole names only
		{[]string{"orders.*"}, false, "orders,orders-eu"},
		{[]string{"ord|pay.*"}, false, "payments"}, // alternation stays inside the anchors
		{[]string{"eu"}, false, ""},
		{[]string{"__.*"}, false, ""},
		{[]string{"__.*"}, true, "__consumer_offsets"},
		{[]string{"orders", "payments"}, false, "orders,payments"},
	} {
		res, err := CompileTopicRegexps(c.exprs)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(MatchTopics(topics, res, c.internal)); got != c.want {
			t.Errorf("%q internal=%v: %s, want %s", c.exprs, c.internal, got, c.want)
		}
	}
	_, err := CompileTopicRegexps([]string{"ok", "a(b"})
	if err == nil || err.Error() != `topic regex "a(b": missing closing )` {
		t.Errorf("bad regex: %v", err)
	}
}

func TestPartitioner(t *testing.T) {
	// Java's murmur2 of these keys (Kafka's UtilsTest, librdkafka's
	// rdmurmur2.c): a keyed record goes to (hash & 0x7fffffff) % n.
	for key, hash := range map[string]uint32{"kafka": 0xd067cf64, "1234": 0x9fc97b14, "34": 0x873930da, "": 0x106e08d9} {
		for _, n := range []int{1, 3, 7} {
			ps := make([]int, n)
			for i := range ps {
				ps[i] = i
			}
			want := int((hash & 0x7fffffff) % uint32(n))
			if got := NewPartitioner(-1).Balance(kafka.Message{Key: []byte(key)}, ps...); got != want {
				t.Errorf("key %q over %d partitions: %d, want %d", key, n, got, want)
			}
		}
	}
	p := NewPartitioner(-1)
	seen := map[int]bool{}
	for range 6 {
		seen[p.Balance(kafka.Message{}, 0, 1, 2)] = true
	}
	if len(seen) != 3 {
		t.Errorf("records without a key went to %v, want all of 0, 1, 2", seen)
	}
	if got := NewPartitioner(2).Balance(kafka.Message{Key: []byte("kafka")}, 0, 1, 2); got != 2 {
		t.Errorf("fixed partition 2: %d", got)
	}
}

func TestPerfLines(t *testing.T) {
	r := &PerfProduceResult{Records: 100, RecordsPerSec: 50, MBPerSec: 0.01, AvgMs: 1.5, MaxMs: 9, P50Ms: 1, P95Ms: 2, P99Ms: 3, P999Ms: 4}
	want := "100 records sent, 50.0 records/sec (0.01 MB/sec), 1.50 ms avg latency, 9.00 ms max latency, 1.00 ms 50th, 2.00 ms 95th, 3.00 ms 99th, 4.00 ms 99.9th."
	if r.String() != want {
		t.Errorf("produce line:\n%s\nwant\n%s", r, want)
	}
	start := time.Date(2024, 5, 1, 12, 0, 0, 7e6, time.UTC)
	c := &PerfConsumeResult{Start: start, End: start.Add(1500 * time.Millisecond), Records: 3000, Bytes: 3 << 20, Seconds: 1.5, RecordsPerSec: 2000, MBPerSec: 2}
	want = "2024-05-01 12:00:00:007, 2024-05-01 12:00:01:507, 3.0000, 2.0000, 3000, 2000.0000, 0, 1500, 2.0000, 2000.0000"
	if c.String() != want {
		t.Errorf("consume line:\n%s\nwant\n%s", c, want)
	}
	if n := len(strings.Split(PerfConsumeHeader, ", ")); n != len(strings.Split(want, ", ")) {
		t.Errorf("header has %d columns, line %d", n, len(strings.Split(want, ", ")))
	}
}
