package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// scrape reads a /metrics page into series ("name{labels}") and values.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// An operator's dashboard and alerts read these series from a live broker
// after ordinary traffic: produce, a consumer group reading it all, and a
// consumer left long-polling at the end of the log.
func TestBrokerMetricsAfterTraffic(t *testing.T) {
	// fsync every message so that the log flush time has observations.
	b := testbroker.Start(t, "log.flush.interval.messages=1")
	metricsURL := "http://" + b.AdminAddr() + "/metrics"
	const topic, groupID, n = "page-views", "dashboards", 200

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	adm := kadm.NewClient(prod)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		prod.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "user-%d", i%17), Value: fmt.Appendf(nil, `{"page":"/p/%d"}`, i)}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for got := 0; got < n; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	// The consumer now long-polls at the log end: a fetch in the purgatory.
	go func() {
		for ctx.Err() == nil {
			cons.PollFetches(ctx)
		}
	}()

	var m map[string]float64
	deadline := time.Now().Add(20 * time.Second)
	for {
		m = scrape(t, metricsURL)
		if m[`tributary_broker_purgatory_size{operation="fetch"}`] >= 1 && m[`tributary_broker_groups{state="Stable"}`] >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no long-polling fetch in the purgatory, or no stable group, within 20s: purgatory %v, stable groups %v",
				m[`tributary_broker_purgatory_size{operation="fetch"}`], m[`tributary_broker_groups{state="Stable"}`])
		}
		time.Sleep(200 * time.Millisecond)
	}

	type want struct {
		series string
		check  func(float64) bool
		what   string
	}
	positive := func(v float64) bool { return v > 0 }
	zero := func(v float64) bool { return v == 0 }
	is := func(x float64) func(float64) bool { return func(v float64) bool { return v == x } }
	topicLabel := `{topic="` + topic + `"}`
	for _, w := range []want{
		// Throughput per topic.
		{"tributary_broker_bytes_in_total" + topicLabel, positive, "> 0"},
		{"tributary_broker_messages_in_total" + topicLabel, is(n), fmt.Sprint(n)},
		{"tributary_broker_bytes_out_total" + topicLabel, positive, "> 0"},
		{"tributary_broker_log_size_bytes" + topicLabel, positive, "> 0"},
		// Requests per API.
		{`tributary_broker_requests_total{api="Produce"}`, positive, "> 0"},
		{`tributary_broker_requests_total{api="Fetch"}`, positive, "> 0"},
		{`tributary_broker_requests_total{api="JoinGroup"}`, positive, "> 0"},
		{`tributary_broker_requests_total{api="OffsetCommit"}`, positive, "> 0"},
		{`tributary_broker_request_seconds_count{api="Produce"}`, positive, "> 0"},
		{`tributary_broker_request_seconds_bucket{api="Fetch",le="+Inf"}`, positive, "> 0"},
		// Replication health: a single node is its own ISR.
		{"tributary_broker_under_replicated_partitions", zero, "0"},
		{"tributary_broker_under_min_isr_partitions", zero, "0"},
		{"tributary_broker_offline_partitions", zero, "0"},
		{"tributary_broker_isr_shrinks_total", zero, "0"},
		{"tributary_broker_isr_expands_total", zero, "0"},
		{"tributary_broker_partitions", func(v float64) bool { return v >= 3 }, ">= 3"},
		{"tributary_broker_leader_partitions", func(v float64) bool { return v >= 3 }, ">= 3"},
		{"tributary_broker_topics", func(v float64) bool { return v >= 2 }, ">= 2 (with __consumer_offsets)"},
		// Storage.
		{"tributary_broker_log_flush_seconds_count", positive, "> 0"},
		// Connections, groups, purgatory.
		{`tributary_broker_connections{listener="PLAINTEXT"}`, positive, "> 0"},
		{`tributary_broker_connections_created_total{listener="PLAINTEXT"}`, positive, "> 0"},
		{`tributary_broker_groups{state="Stable"}`, is(1), "1"},
		{`tributary_broker_groups{state="Empty"}`, zero, "0"},
		{"tributary_broker_group_rebalances_total", positive, "> 0"},
		{`tributary_broker_purgatory_size{operation="fetch"}`, positive, "> 0"},
		{`tributary_broker_purgatory_size{operation="rebalance"}`, zero, "0"},
		{"tributary_broker_rejected_frames_total", zero, "0"},
		// The consumer (franz-go) fetches in a session.
		{"tributary_broker_fetch_sessions", positive, "> 0"},
		// The runtime, for memory and CPU panels.
		{"process_resident_memory_bytes", positive, "> 0"},
		{"go_goroutines", positive, "> 0"},
	} {
		v, ok := m[w.series]
		switch {
		case !ok:
			t.Errorf("/metrics has no %s", w.series)
		case !w.check(v):
			t.Errorf("%s = %v, want %s", w.series, v, w.what)
		}
	}

	// Each request is counted once under its version too: the produces,
	// all done, add up by version to the produce count.
	var byVersion float64
	for k, v := range m {
		if strings.HasPrefix(k, `tributary_broker_requests_by_version_total{api="Produce",version="`) {
			byVersion += v
		}
	}
	if total := m[`tributary_broker_requests_total{api="Produce"}`]; byVersion != total || total == 0 {
		t.Errorf("Produce requests by version add up to %v, want the %v counted", byVersion, total)
	}

	// Deleting a topic removes its series, as Kafka removes its metrics,
	// so that topic churn does not grow /metrics without bound.
	cons.Close()
	if _, err := adm.DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	m = scrape(t, metricsURL)
	for _, name := range []string{"tributary_broker_bytes_in_total", "tributary_broker_bytes_out_total", "tributary_broker_messages_in_total", "tributary_broker_log_size_bytes"} {
		if _, ok := m[name+topicLabel]; ok {
			t.Errorf("%s%s is still on /metrics after the topic was deleted", name, topicLabel)
		}
	}
}
