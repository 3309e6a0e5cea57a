// Package conformance runs real Kafka clients against the real tributary
// broker binary (internal/testbroker): each client creates a topic through
// its own admin API, produces keyed records with headers and timestamps,
// and reads them back by assigned partitions (groups are not served yet).
// Every record is checked against what its producer was told: partition,
// offset, key, value, headers and timestamp, and the order in each
// partition. Compressed batches are produced by one client and read by
// another, so the codecs are proven between independent implementations.
//
// This file holds what the Go clients share: the records, the checks, the
// client table and the compression matrix. franzgo_test.go, sarama_test.go
// and kafkago_test.go adapt each client; crash_test.go kills the broker
// under an idempotent producer.
package conformance

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// goPartitions is the partition count of every topic these tests create.
const goPartitions = 3

// goRecord is one record as produced and as consumed.
type goRecord struct {
	Key, Value []byte
	Headers    []goHeader
	Timestamp  time.Time // millisecond precision, set by the producer
}

type goHeader struct {
	Key   string
	Value []byte
}

// goAck is where the broker said a produced record went.
type goAck struct {
	Partition int32
	Offset    int64
}

// goConsumed is a record read back, at its partition and offset.
type goConsumed struct {
	goRecord
	Partition int32
	Offset    int64
}

// goRecords makes n records for run (the topic name): 97 keys, values of
// varied length that compress (words repeat) and carry the run and index,
// three to five headers (a binary one, an empty one and, on every third
// record, a repeated key, whose order must survive), and timestamps a
// millisecond apart starting ten minutes ago.
func goRecords(run string, n int) []goRecord {
	words := []string{"page_view", "click", "search", "user", "session", "tributary", "partition", "offset"}
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Millisecond)
	recs := make([]goRecord, n)
	for i := range recs {
		var v strings.Builder
		fmt.Fprintf(&v, "%s/%08d|", run, i)
		for j := 0; j < 4+i%40; j++ {
			v.WriteString(words[(i*7+j)%len(words)])
			v.WriteByte(' ')
		}
		h := []goHeader{
			{"idx", []byte(strconv.Itoa(i))},
			{"bin", []byte{0, byte(i), byte(i >> 8), 0xff}},
			{"empty", []byte{}},
		}
		if i%3 == 0 {
			h = append(h, goHeader{"dup", []byte("first")}, goHeader{"dup", []byte("second")})
		}
		recs[i] = goRecord{
			Key:       []byte(fmt.Sprintf("key-%02d", i%97)),
			Value:     []byte(v.String()),
			Headers:   h,
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return recs
}

// goClient is one Kafka client library, adapted to the same three steps.
type goClient struct {
	name string
	// create makes a topic of goPartitions partitions through the
	// client's admin API.
	create func(t *testing.T, addr, topic string)
	// produce sends recs in order and returns, for each, where the broker
	// put it. codec is "", "gzip", "snappy", "lz4" or "zstd"; "" keeps the
	// client's default.
	produce func(t *testing.T, addr, topic string, recs []goRecord, codec string) []goAck
	// consume reads each partition from offset 0 up to (not including)
	// end[partition], by assignment, in the order the client delivers.
	consume func(t *testing.T, addr, topic string, end map[int32]int64) []goConsumed
}

var goClients = map[string]goClient{}

// goRoundTrip is the whole conformance cycle: prod's admin creates the
// topic, prod produces n records with codec, cons reads them back, and
// everything is checked.
func goRoundTrip(t *testing.T, b *testbroker.Broker, prod, cons goClient, codec string, n int) {
	t.Helper()
	addr := b.Addr()
	topic := strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())
	prod.create(t, addr, topic)
	recs := goRecords(topic, n)
	start := time.Now()
	acks := prod.produce(t, addr, topic, recs, codec)
	t.Logf("%s produced %d records (codec %q) in %v", prod.name, n, codec, time.Since(start))
	end := goCheckAcks(t, recs, acks)
	goCheckEndOffsets(t, addr, topic, end)
	if codec != "" {
		goCheckCodec(t, b.DataDir(), topic, codec)
	}
	start = time.Now()
	got := cons.consume(t, addr, topic, end)
	t.Logf("%s consumed %d records in %v", cons.name, len(got), time.Since(start))
	goCheckConsumed(t, recs, acks, got)
}

// goCheckAcks checks what the producer was told: every partition used,
// each key in one partition only, offsets in production order and without
// gaps. It returns each partition's end offset.
func goCheckAcks(t *testing.T, recs []goRecord, acks []goAck) map[int32]int64 {
	t.Helper()
	if len(acks) != len(recs) {
		t.Fatalf("%d acks for %d records", len(acks), len(recs))
	}
	end := map[int32]int64{}
	keyPart := map[string]int32{}
	for i, a := range acks {
		if a.Partition < 0 || a.Partition >= goPartitions {
			t.Fatalf("record %d: acked in partition %d", i, a.Partition)
		}
		if p, ok := keyPart[string(recs[i].Key)]; ok && p != a.Partition {
			t.Fatalf("record %d: key %q went to partition %d and %d", i, recs[i].Key, p, a.Partition)
		}
		keyPart[string(recs[i].Key)] = a.Partition
		// Records are produced in order, so in each partition their
		// offsets follow one another: 0, 1, 2, ...
		if want := end[a.Partition]; a.Offset != want {
			t.Fatalf("record %d: acked at %d/%d, want offset %d (the next in production order)", i, a.Partition, a.Offset, want)
		}
		end[a.Partition]++
	}
	if len(end) != goPartitions {
		t.Fatalf("records went to %d partitions (%v), want all %d", len(end), end, goPartitions)
	}
	return end
}

// goCheckEndOffsets checks the broker's end offsets (ListOffsets latest,
// asked with kadm) are exactly what was acknowledged: nothing appended
// twice, nothing missing.
func goCheckEndOffsets(t *testing.T, addr, topic string, end map[int32]int64) {
	t.Helper()
	adm, ctx := goAdmin(t, addr)
	offs, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		t.Fatalf("ListEndOffsets %s: %v", topic, err)
	}
	for p := int32(0); p < goPartitions; p++ {
		o, ok := offs.Lookup(topic, p)
		if !ok || o.Offset != end[p] {
			t.Errorf("partition %d: end offset %d (found %v), acknowledged %d records", p, o.Offset, ok, end[p])
		}
	}
}

// goCodecs are the batch attributes' compression codes.
var goCodecs = map[string]int16{"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// goCheckCodec reads the topic's segment files and checks that every
// batch is compressed with codec, so that a client which quietly sent
// uncompressed batches does not pass for one that compressed them.
func goCheckCodec(t *testing.T, dataDir, topic, codec string) {
	t.Helper()
	batches := 0
	for p := 0; p < goPartitions; p++ {
		segs, err := filepath.Glob(filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, p), "*.log"))
		if err != nil || len(segs) == 0 {
			t.Fatalf("segments of %s-%d: %v (found %d)", topic, p, err, len(segs))
		}
		for _, seg := range segs {
			data, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			for len(data) >= 23 {
				size := 12 + int(binary.BigEndian.Uint32(data[8:12]))
				if size > len(data) {
					t.Fatalf("%s: batch of %d bytes, %d left in the file", seg, size, len(data))
				}
				// Attributes follow base offset (8), length (4), leader
				// epoch (4), magic (1) and CRC (4).
				if got := int16(binary.BigEndian.Uint16(data[21:23])) & 7; got != goCodecs[codec] {
					t.Fatalf("%s: a batch with compression code %d, want %d (%s)", seg, got, goCodecs[codec], codec)
				}
				batches++
				data = data[size:]
			}
		}
	}
	t.Logf("%d batches on disk, all %s", batches, codec)
}

// goCheckConsumed checks the consumed records are exactly the produced
// ones at their acknowledged partitions and offsets, delivered in offset
// order in each partition.
func goCheckConsumed(t *testing.T, recs []goRecord, acks []goAck, got []goConsumed) {
	t.Helper()
	want := map[goAck]int{}
	for i, a := range acks {
		want[a] = i
	}
	last := map[int32]int64{}
	seen := map[goAck]bool{}
	bad := 0
	fail := func(format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, c := range got {
		at := goAck{c.Partition, c.Offset}
		if l, ok := last[c.Partition]; ok && c.Offset <= l {
			fail("partition %d: offset %d delivered after %d", c.Partition, c.Offset, l)
		}
		last[c.Partition] = c.Offset
		i, ok := want[at]
		if !ok {
			fail("consumed %d/%d, which no produce acknowledged", c.Partition, c.Offset)
			continue
		}
		if seen[at] {
			fail("consumed %d/%d twice", c.Partition, c.Offset)
		}
		seen[at] = true
		if diff := goDiff(recs[i], c.goRecord); diff != "" {
			fail("record %d at %d/%d: %s", i, c.Partition, c.Offset, diff)
		}
	}
	if len(seen) != len(acks) {
		var missing []goAck
		for a := range want {
			if !seen[a] {
				missing = append(missing, a)
			}
		}
		sort.Slice(missing, func(i, j int) bool {
			if missing[i].Partition != missing[j].Partition {
				return missing[i].Partition < missing[j].Partition
			}
			return missing[i].Offset < missing[j].Offset
		})
		if len(missing) > 5 {
			missing = missing[:5]
		}
		fail("consumed %d of %d acknowledged records; first missing: %v", len(seen), len(acks), missing)
	}
	if bad > 10 {
		t.Errorf("... %d problems in all", bad)
	}
}

// goDiff describes how got differs from want, or is "".
func goDiff(want, got goRecord) string {
	var d []string
	if !bytes.Equal(want.Key, got.Key) {
		d = append(d, fmt.Sprintf("key %q, want %q", got.Key, want.Key))
	}
	if !bytes.Equal(want.Value, got.Value) {
		d = append(d, fmt.Sprintf("value %.40q, want %.40q", got.Value, want.Value))
	}
	if !want.Timestamp.Equal(got.Timestamp) {
		d = append(d, fmt.Sprintf("timestamp %d, want %d", got.Timestamp.UnixMilli(), want.Timestamp.UnixMilli()))
	}
	same := len(want.Headers) == len(got.Headers)
	for i := 0; same && i < len(want.Headers); i++ {
		same = want.Headers[i].Key == got.Headers[i].Key && bytes.Equal(want.Headers[i].Value, got.Headers[i].Value)
	}
	if !same {
		d = append(d, fmt.Sprintf("headers %q, want %q", got.Headers, want.Headers))
	}
	return strings.Join(d, "; ")
}

// goClientLog collects what a client logs at warning level or above
// while it works against the broker. A client that retries quietly (a
// retriable error code, a response it could not parse) still delivers, so
// its log is the only trace; report fails the test with it.
type goClientLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *goClientLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, fmt.Sprintf(format, args...))
}

func (l *goClientLog) report(t *testing.T, client string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, m := range l.msgs {
		if i == 10 {
			t.Errorf("... %d messages in all", len(l.msgs))
			break
		}
		t.Errorf("%s logged: %s", client, m)
	}
}

// goDeadline is how long a produce or consume of one test may take.
const goDeadline = 90 * time.Second

// goBroker starts the broker for one test. Its log is printed when the
// test fails, or always with CONFORMANCE_BROKER_LOG=1; the broker inherits
// the environment, so TRIBUTARY_LOG_LEVEL=debug makes it log at debug level
// (for instance why it closed a connection).
func goBroker(t *testing.T, props ...string) *testbroker.Broker {
	t.Helper()
	b := testbroker.Start(t, props...)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("CONFORMANCE_BROKER_LOG") != "" {
			t.Logf("broker log:\n%s", b.Log())
		}
	})
	return b
}

// TestGoClients runs each client's whole cycle on its own, 10,000 records
// with the client's default producer settings (franz-go compresses with
// snappy by default; Sarama and kafka-go send uncompressed).
func TestGoClients(t *testing.T) {
	b := goBroker(t)
	cases := []struct {
		name string
		c    goClient
	}{
		{"franz-go", goClients["franz-go"]},
		{"sarama", goClients["sarama"]},
		{"sarama-idempotent", goClients["sarama-idempotent"]},
		{"kafka-go", goClients["kafka-go"]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			goRoundTrip(t, b, tc.c, tc.c, "", 10000)
		})
	}
}

// TestGoCompression produces each codec with all three clients and reads
// each topic with another client, so every codec is written by three
// implementations and read by two others.
func TestGoCompression(t *testing.T) {
	b := goBroker(t)
	readers := map[string][2]string{
		// producer: consumer for gzip and lz4, consumer for snappy and zstd
		"franz-go": {"sarama", "kafka-go"},
		"sarama":   {"kafka-go", "franz-go"},
		"kafka-go": {"franz-go", "sarama"},
	}
	for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
		for _, prod := range []string{"franz-go", "sarama", "kafka-go"} {
			cons := readers[prod][0]
			if codec == "snappy" || codec == "zstd" {
				cons = readers[prod][1]
			}
			t.Run(codec+"/"+prod+"-to-"+cons, func(t *testing.T) {
				t.Parallel()
				goRoundTrip(t, b, goClients[prod], goClients[cons], codec, 10000)
			})
		}
	}
}

// goAdmin is a franz-go admin client for addr and a context bounding its
// calls; both end with the test.
func goAdmin(t testing.TB, addr string) (*kadm.Client, context.Context) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return kadm.NewClient(cl), ctx
}
