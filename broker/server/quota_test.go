package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// quotaRate is the byte-rate quota of the throttled clients: small enough
// that loopback and two loaded cores offer twice it with ease.
const quotaRate = 160 << 10

// TestClientQuotas runs, on one broker: the admin APIs (validation with
// Kafka's messages, validate_only, the describe filters), then, at once, a
// producer and a consumer at twice their byte-rate quotas beside
// unthrottled ones with other client ids, and the controller mutation
// quota. The sample window is 2 × 1 s so that the measurement settles
// within the test's seconds (Kafka's 11 × 1 s lets a new client through
// 10 s of quota before throttling it, which the rate unit test in
// broker/quota covers); rates are measured from the 2nd to the 10th
// second, past the first window's allowance and over four windows, as a
// sampled rate is only the quota on average over whole windows.
func TestClientQuotas(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t, "quota.window.num=2", "quota.window.size.seconds=1", "num.partitions=1")
	// Small batches: a fetch returns at least one whole batch, and a 1 MB
	// one would owe seconds at once.
	admin := quotaClient(t, b.Addr(), "quota-admin", kgo.ProducerBatchMaxBytes(16<<10))
	// A hang detector: on a loaded machine the preload and the
	// unthrottled reads alone can take most of a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	t.Run("admin", func(t *testing.T) { quotaAdmin(ctx, t, admin) })
	// Preload for the consumers, before any byte quota exists.
	value := bytes.Repeat([]byte("c"), 4<<10)
	var rs []*kgo.Record
	for range 600 { // 2.4 MB
		rs = append(rs, &kgo.Record{Topic: "quota-consume", Value: value})
	}
	if err := admin.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	alterQuotas(ctx, t, admin, false,
		quotaEntry("client-id", quotaName("slow-producer"), "producer_byte_rate", quotaRate),
		quotaEntry("client-id", quotaName("slow-consumer"), "consumer_byte_rate", quotaRate),
		quotaEntry("client-id", quotaName("mutator"), "controller_mutation_rate", 1),
		quotaEntry("client-id", quotaName("busy"), "request_percentage", 0.5))

	t.Run("group", func(t *testing.T) {
		t.Run("produce", func(t *testing.T) { t.Parallel(); quotaProduce(ctx, t, b.Addr()) })
		t.Run("consume", func(t *testing.T) { t.Parallel(); quotaConsume(ctx, t, b.Addr()) })
		t.Run("mutations", func(t *testing.T) { t.Parallel(); quotaMutations(ctx, t, b.Addr()) })
		t.Run("requests", func(t *testing.T) { t.Parallel(); quotaRequests(ctx, t, b.Addr()) })
	})

	// connection_creation_rate of an IP address: of a burst of new
	// connections, those past the rate are closed unanswered.
	alterQuotas(ctx, t, admin, false, quotaEntry("ip", quotaName("127.0.0.1"), "connection_creation_rate", 5))
	answered, refused := quotaConnBurst(t, b.Addr(), 12)
	t.Logf("12 connections at once from an IP limited to 5/s: %d answered, %d closed", answered, refused)
	if answered < 4 || answered > 8 || refused < 4 {
		t.Errorf("12 connections at once with connection_creation_rate=5: %d answered, %d closed; want about 5 answered", answered, refused)
	}
	alterQuotas(ctx, t, admin, false, quotaEntry("ip", quotaName("127.0.0.1"), "connection_creation_rate", nil))

	// The throttling shows per client in /metrics.
	resp, err := http.Get("http://" + b.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`tributary_broker_client_quota_throttle_seconds_total{client_id="slow-producer",quota_type="Produce",user=""}`,
		`tributary_broker_client_quota_throttle_seconds_total{client_id="slow-consumer",quota_type="Fetch",user=""}`,
		`tributary_broker_client_quota_bytes_total{client_id="slow-producer",quota_type="Produce",user=""}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(string(body), `client_id="fast-producer"`) {
		t.Error("/metrics has series of a client under no quota")
	}
}

// quotaThrottles counts the throttle times a client was told, and the
// bytes of fetch responses it read between from and to after start: what
// consumer_byte_rate limits (records alone would miss the partial batch
// that ends a full response).
type quotaThrottles struct {
	n     atomic.Int64
	total atomic.Int64 // ms

	start     time.Time
	from, to  time.Duration
	fetchRead atomic.Int64
}

func (h *quotaThrottles) OnBrokerRead(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, _ error) {
	if at := time.Since(h.start); key == kmsg.Fetch.Int16() && !h.start.IsZero() && at >= h.from && at < h.to {
		h.fetchRead.Add(int64(n))
	}
}

func (h *quotaThrottles) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.n.Add(1)
	h.total.Add(d.Milliseconds())

}

func quotaClient(t *testing.T, addr, clientID string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchCompression(kgo.NoCompression())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// offer produces 4 KiB records at rate bytes/s until ctx ends, and returns
// the bytes acknowledged between from and to after the start.
func quotaOffer(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, rate int, from, to time.Duration) float64 {
	value := bytes.Repeat([]byte("p"), 4<<10)
	start := time.Now()
	var mu sync.Mutex
	var acked int
	var errs atomic.Int64
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	for time.Since(start) < to {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-tick.C:
		}
		for due := int(time.Since(start).Seconds() * float64(rate)); sent < due; sent += len(value) {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(r *kgo.Record, err error) {
				if err != nil {
					errs.Add(1)
					return
				}
				if at := time.Since(start); at >= from && at < to {
					mu.Lock()
					acked += len(r.Value)
					mu.Unlock()
				}
			})
		}
	}
	if n := errs.Load(); n > 0 {
		t.Errorf("%d produce errors", n)
	}
	mu.Lock()
	defer mu.Unlock()
	return float64(acked) / (to - from).Seconds()
}

func quotaProduce(ctx context.Context, t *testing.T, addr string) {
	var slowT, fastT quotaThrottles
	// Small batches and one partition: the measurement is not lumpy.
	opts := []kgo.Opt{kgo.ProducerBatchMaxBytes(16 << 10), kgo.ProducerLinger(0)}
	slow := quotaClient(t, addr, "slow-producer", append(opts, kgo.WithHooks(&slowT))...)
	fast := quotaClient(t, addr, "fast-producer", append(opts, kgo.WithHooks(&fastT))...)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var fastRate float64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fastRate = quotaOffer(pctx, t, fast, "quota-fast", 2*quotaRate, 2*time.Second, 10*time.Second)
	}()
	slowRate := quotaOffer(pctx, t, slow, "quota-slow", 2*quotaRate, 2*time.Second, 10*time.Second)
	wg.Wait()
	t.Logf("producer at 2× its quota of %d B/s: %.0f B/s (%.2f×), %d throttles, %d ms; unthrottled client: %.0f B/s, %d throttles",
		quotaRate, slowRate, slowRate/quotaRate, slowT.n.Load(), slowT.total.Load(), fastRate, fastT.n.Load())
	if d := slowRate/quotaRate - 1; d > 0.1 || d < -0.1 {
		t.Errorf("throttled producer made %.0f B/s, want %d within 10%%", slowRate, quotaRate)
	}
	if slowT.n.Load() == 0 {
		t.Error("the throttled producer was never told throttle_time_ms")
	}
	if fastRate < 1.8*quotaRate || fastT.n.Load() > 0 {
		t.Errorf("the producer with another client id made %.0f B/s with %d throttles, want ~%d and none", fastRate, fastT.n.Load(), 2*quotaRate)
	}
}

// quotaRead consumes until to after the start or until it has read all
// the preloaded records, and returns what it read.
func quotaRead(ctx context.Context, t *testing.T, cl *kgo.Client, to time.Duration) int {
	start := time.Now()
	total := 0
	for time.Since(start) < to && total < 600*(4<<10) {
		fctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := cl.PollFetches(fctx)
		cancel()
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { total += len(r.Value) })
	}
	return total
}

func quotaConsume(ctx context.Context, t *testing.T, addr string) {
	var slowT, fastT quotaThrottles
	opts := []kgo.Opt{kgo.ConsumeTopics("quota-consume"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(16 << 10), kgo.FetchMaxPartitionBytes(16 << 10)}
	slowT.from, slowT.to = 2*time.Second, 10*time.Second
	slow := quotaClient(t, addr, "slow-consumer", append(opts, kgo.WithHooks(&slowT))...)
	fast := quotaClient(t, addr, "fast-consumer", append(opts, kgo.WithHooks(&fastT))...)
	began := time.Now()
	all := quotaRead(ctx, t, fast, 30*time.Second)
	fastTook := time.Since(began)
	slowT.start = time.Now()
	quotaRead(ctx, t, slow, slowT.to)
	slowRate := float64(slowT.fetchRead.Load()) / (slowT.to - slowT.from).Seconds()
	t.Logf("consumer at its quota of %d B/s: %.0f B/s (%.2f×), %d throttles, %d ms; unthrottled client read %d bytes in %v, %d throttles",
		quotaRate, slowRate, slowRate/quotaRate, slowT.n.Load(), slowT.total.Load(), all, fastTook, fastT.n.Load())
	if d := slowRate/quotaRate - 1; d > 0.1 || d < -0.1 {
		t.Errorf("throttled consumer read %.0f B/s, want %d within 10%%", slowRate, quotaRate)
	}
	if slowT.n.Load() == 0 {
		t.Error("the throttled consumer was never told throttle_time_ms")
	}
	// 2.4 MB at the quota would take 15 s.
	if all < 600*(4<<10) || fastTook > 5*time.Second || fastT.n.Load() > 0 {
		t.Errorf("the consumer with another client id read %d bytes in %v with %d throttles", all, fastTook, fastT.n.Load())
	}
}

// quotaMutations: controller_mutation_rate=1 over 2 s lets 2 partitions
// through at once; a CreateTopics of 4 is accepted (Kafka lets the request
// that empties the bucket through) and leaves the bucket owing 2 s, so a
// second client with the same client id is refused with
// THROTTLING_QUOTA_EXCEEDED and the throttle time, while another client id
// is not.
func quotaMutations(ctx context.Context, t *testing.T, addr string) {
	create := func(cl *kgo.Client, topic string, partitions int32) *kmsg.CreateTopicsResponse {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 10000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	a := quotaClient(t, addr, "mutator")
	if r := create(a, "quota-mut-1", 4); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("first CreateTopics: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	b := quotaClient(t, addr, "mutator")
	r := create(b, "quota-mut-2", 1)
	if err := kerr.ErrorForCode(r.Topics[0].ErrorCode); err != kerr.ThrottlingQuotaExceeded || r.ThrottleMillis <= 0 {
		t.Errorf("CreateTopics past the mutation quota: %v, throttle %d ms; want THROTTLING_QUOTA_EXCEEDED and a throttle", err, r.ThrottleMillis)
	}
	other := quotaClient(t, addr, "other-mutator")
	if r := create(other, "quota-mut-3", 4); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Errorf("another client id: %v, throttle %d ms", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
}

func quotaName(s string) *string { return &s }

func quotaEntry(typ string, name *string, kv ...any) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type, ent.Name = typ, name
	e.Entity = append(e.Entity, ent)
	for i := 0; i+1 < len(kv); i += 2 {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key = kv[i].(string)
		switch v := kv[i+1].(type) {
		case nil:
			op.Remove = true
		case int:
			op.Value = float64(v)
		case float64:
			op.Value = v
		}
		e.Ops = append(e.Ops, op)
	}
	return e
}

// alterQuotas sends the entries and returns each one's error ("" when
// none) as "CODE: message".
func alterQuotas(ctx context.Context, t *testing.T, cl *kgo.Client, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) []string {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries, req.ValidateOnly = entries, validateOnly
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range resp.Entries {
		if e.ErrorCode == 0 {
			out = append(out, "")
			continue
		}
		msg := ""
		if e.ErrorMessage != nil {
			msg = *e.ErrorMessage
		}
		out = append(out, fmt.Sprintf("%s: %s", kerr.ErrorForCode(e.ErrorCode).(*kerr.Error).Message, msg))
	}
	return out
}

// describeQuotas prints the matching entities as "type=name,...:key=value,..."
// lines, sorted by the broker.
func describeQuotas(ctx context.Context, t *testing.T, cl *kgo.Client, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) (string, error) {
	t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Components, req.Strict = comps, strict
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		return "", fmt.Errorf("%s: %s", kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error).Message, *resp.ErrorMessage)
	}
	var lines []string
	for _, e := range resp.Entries {
		var ps, vs []string
		for _, p := range e.Entity {
			n := "<default>"
			if p.Name != nil {
				n = *p.Name
			}
			ps = append(ps, p.Type+"="+n)
		}
		for _, v := range e.Values {
			vs = append(vs, fmt.Sprintf("%s=%v", v.Key, v.Value))
		}
		lines = append(lines, strings.Join(ps, ",")+":"+strings.Join(vs, ","))
	}
	return strings.Join(lines, "\n"), nil
}

func quotaComp(typ string, match kmsg.QuotasMatchType, name *string) kmsg.DescribeClientQuotasRequestComponent {
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType, c.Match = typ, match, name
	return c
}

func quotaAdmin(ctx context.Context, t *testing.T, cl *kgo.Client) {
	// Bad input: one entry's error leaves the others alone.
	two := quotaEntry("user", quotaName("alice"))
	two.Entity = append(two.Entity, kmsg.AlterClientQuotasRequestEntryEntity{Type: "ip", Name: quotaName("10.0.0.1")})
	got := alterQuotas(ctx, t, cl, false,
		quotaEntry("user", quotaName("alice"), "producer_byte_rate", 1024, "request_percentage", 12.5),
		quotaEntry("user", quotaName("bob"), "bogus_rate", 1),
		quotaEntry("user", quotaName("carol"), "producer_byte_rate", -5),
		quotaEntry("user", quotaName("dave"), "consumer_byte_rate", 1.5),
		quotaEntry("group", quotaName("g")),
		two,
		quotaEntry("user", quotaName(""), "producer_byte_rate", 1),
		quotaEntry("ip", nil, "producer_byte_rate", 1),
	)
	want := []string{
		"",
		"INVALID_REQUEST: Invalid configuration key bogus_rate",
		"INVALID_REQUEST: Quota producer_byte_rate must be greater than 0",
		"INVALID_REQUEST: consumer_byte_rate cannot be a fractional value.",
		"INVALID_REQUEST: Unhandled client quota entity type: group",
		"INVALID_REQUEST: Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
		"INVALID_REQUEST: Empty user not supported",
		"INVALID_REQUEST: Invalid configuration key producer_byte_rate",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("AlterClientQuotas errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// validate_only checks and stores nothing.
	if got := alterQuotas(ctx, t, cl, true, quotaEntry("user", quotaName("erin"), "producer_byte_rate", 10), quotaEntry("user", quotaName("erin2"), "nope", 1)); got[0] != "" || got[1] == "" {
		t.Errorf("validate_only: %q", got)
	}
	uc := quotaEntry("user", quotaName("alice"), "consumer_byte_rate", 2048)
	uc.Entity = append(uc.Entity, kmsg.AlterClientQuotasRequestEntryEntity{Type: "client-id", Name: quotaName("app")})
	alterQuotas(ctx, t, cl, false, uc,
		quotaEntry("user", nil, "controller_mutation_rate", 100),
		quotaEntry("ip", quotaName("10.0.0.1"), "connection_creation_rate", 50))

	for _, c := range []struct {
		name   string
		strict bool
		comps  []kmsg.DescribeClientQuotasRequestComponent
		want   string
	}{
		{"everything", false, nil, "user=alice:producer_byte_rate=1024,request_percentage=12.5\nclient-id=app,user=alice:consumer_byte_rate=2048\nuser=<default>:controller_mutation_rate=100\nip=10.0.0.1:connection_creation_rate=50"},
		{"exact user", false, []kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeExact, quotaName("alice"))}, "user=alice:producer_byte_rate=1024,request_percentage=12.5\nclient-id=app,user=alice:consumer_byte_rate=2048"},
		{"exact user, strict", true, []kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeExact, quotaName("alice"))}, "user=alice:producer_byte_rate=1024,request_percentage=12.5"},
		{"default user", false, []kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeDefault, nil)}, "user=<default>:controller_mutation_rate=100"},
		{"any client-id", false, []kmsg.DescribeClientQuotasRequestComponent{quotaComp("client-id", kmsg.QuotasMatchTypeAny, nil)}, "client-id=app,user=alice:consumer_byte_rate=2048"},
		{"any ip", false, []kmsg.DescribeClientQuotasRequestComponent{quotaComp("ip", kmsg.QuotasMatchTypeAny, nil)}, "ip=10.0.0.1:connection_creation_rate=50"},
	} {
		got, err := describeQuotas(ctx, t, cl, c.strict, c.comps...)
		if err != nil || quotaSortLines(got) != quotaSortLines(c.want) {
			t.Errorf("describe %s: %v\n%s\nwant:\n%s", c.name, err, got, c.want)
		}
	}
	for _, c := range []struct {
		comps []kmsg.DescribeClientQuotasRequestComponent
		want  string
	}{
		{[]kmsg.DescribeClientQuotasRequestComponent{quotaComp("group", kmsg.QuotasMatchTypeAny, nil)}, "UNSUPPORTED_VERSION: Unsupported entity type group"},
		{[]kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeExact, nil)}, "INVALID_REQUEST: Request specified MATCH_TYPE_EXACT, but set match string to null."},
		{[]kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeAny, nil), quotaComp("user", kmsg.QuotasMatchTypeDefault, nil)}, "INVALID_REQUEST: Entity type user cannot appear more than once in the filter."},
		{[]kmsg.DescribeClientQuotasRequestComponent{quotaComp("ip", kmsg.QuotasMatchTypeAny, nil), quotaComp("user", kmsg.QuotasMatchTypeAny, nil)}, "INVALID_REQUEST: Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."},
	} {
		_, err := describeQuotas(ctx, t, cl, false, c.comps...)
		if err == nil || err.Error() != c.want {
			t.Errorf("describe %v: %v, want %s", c.comps, err, c.want)
		}
	}
	// Removing every key removes the entity; removing what is not there is
	// no error. The default user quota goes too: it would limit the
	// traffic that follows.
	got = alterQuotas(ctx, t, cl, false,
		quotaEntry("user", quotaName("alice"), "producer_byte_rate", nil, "request_percentage", nil, "consumer_byte_rate", nil),
		quotaEntry("user", nil, "controller_mutation_rate", nil))
	if got[0] != "" || got[1] != "" {
		t.Errorf("removals: %q", got)
	}
	if got, _ := describeQuotas(ctx, t, cl, false, quotaComp("user", kmsg.QuotasMatchTypeAny, nil)); got != "client-id=app,user=alice:consumer_byte_rate=2048" {
		t.Errorf("after removals: %q", got)
	}
}

func quotaSortLines(s string) string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return strings.Join(l, "\n")
}

// quotaConnBurst opens n connections at once and sends ApiVersions on
// each: it returns how many were answered and how many closed unanswered.
func quotaConnBurst(t *testing.T, addr string, n int) (answered, closed int) {
	t.Helper()
	var conns []net.Conn
	for range n {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		conns = append(conns, nc)
	}
	for _, nc := range conns {
		if quotaApiVersions(nc) == nil {
			answered++
		} else {
			closed++
		}
	}
	return answered, closed
}

// quotaApiVersions sends ApiVersions v0 on nc and reads the answer.
func quotaApiVersions(nc net.Conn) error {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("burst")).AppendRequest(nil, req, 1)
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(frame); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return err
	}
	_, err := io.ReadFull(nc, make([]byte, binary.BigEndian.Uint32(size[:])))
	return err
}

// max.connection.creation.rate: the broker accepts past it only as fast
// as it allows, and refuses nobody.
func TestMaxConnectionCreationRate(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t, "max.connection.creation.rate=10", "quota.window.num=2", "quota.window.size.seconds=1")
	began := time.Now()
	for i := range 25 {
		nc, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if err := quotaApiVersions(nc); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		nc.Close()
	}
	took := time.Since(began)
	t.Logf("25 connections at max.connection.creation.rate=10: %v", took)
	// 10 in the first (padded) second, then 10 a second: about 1.5 s. The
	// lower bound is the quota; the upper one only catches a broker that
	// throttles many times too long, with room for a loaded machine's
	// round trips under the race detector.
	if took < 1200*time.Millisecond || took > 15*time.Second {
		t.Errorf("25 connections at max.connection.creation.rate=10 took %v, want about 1.5 s", took)
	}
}

// quotaRequests: request_percentage=0.5 (5 ms of handler time a second):
// Metadata requests soon come back with a throttle time.
func quotaRequests(ctx context.Context, t *testing.T, addr string) {
	cl := quotaClient(t, addr, "busy")
	began := time.Now()
	for n := 1; time.Since(began) < 10*time.Second; n++ {
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ThrottleMillis > 0 {
			t.Logf("request_percentage=0.5: Metadata request %d throttled %d ms", n, resp.ThrottleMillis)
			return
		}
	}
	t.Error("request_percentage=0.5: no Metadata response in 10 s carried a throttle time")
}
