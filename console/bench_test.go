package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// BenchmarkConsolePages times the pages a big cluster makes expensive:
// the overview, the topic list and the first page of groups, on a real
// broker with TRIBUTARY_BENCH_PARTITIONS partitions (default 5,000, in
// topics of 100) and 1,000 consumer groups each committed on one topic.
// The target is under a second for 10,000 partitions; a broker holds
// about three file descriptors a partition (log, offset and time index),
// so 10,000 needs `ulimit -n` over 32,000 where the benchmark runs
// (make bench; docs/PERFORMANCE.md has the numbers).
func BenchmarkConsolePages(b *testing.B) {
	partitions := 5000
	if v, err := strconv.Atoi(os.Getenv("TRIBUTARY_BENCH_PARTITIONS")); err == nil && v > 0 {
		partitions = v
	}
	const perTopic, groups = 100, 1000
	br := testbroker.Start(b, "group.initial.rebalance.delay.ms=0")
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	began := time.Now()
	var topics []string
	for i := 0; i*perTopic < partitions; i++ {
		name := fmt.Sprintf("bench-%03d", i)
		n := min(perTopic, partitions-i*perTopic)
		if _, err := adm.CreateTopic(ctx, int32(n), 1, nil, name); err != nil {
			b.Fatalf("create %s: %v", name, err)
		}
		topics = append(topics, name)
	}
	for g := range groups {
		o := kadm.Offsets{}
		o.Add(kadm.Offset{Topic: topics[g%len(topics)], Partition: 0, At: 0, LeaderEpoch: -1})
		if rs, err := adm.CommitOffsets(ctx, fmt.Sprintf("bench-group-%04d", g), o); err != nil || rs.Error() != nil {
			b.Fatalf("commit: %v %v", err, rs.Error())
		}
	}
	b.Logf("%d partitions in %d topics and %d groups made in %v", partitions, len(topics), groups, time.Since(began).Round(time.Millisecond))

	s, err := New(Config{Seeds: []string{br.Addr()}, LoopbackOnly: true, SampleEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer func() { hs.Close(); s.Close() }()
	get := func(b *testing.B, path string) {
		res, err := http.Get(hs.URL + path)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("GET %s: %d", path, res.StatusCode)
		}
	}
	for _, page := range []struct{ name, path string }{{"overview", "/"}, {"topics", "/topics"}, {"groups", "/groups"}, {"topic", "/topics/bench-000"}} {
		b.Run(page.name, func(b *testing.B) {
			get(b, page.path) // warm the connections
			b.ResetTimer()
			for b.Loop() {
				get(b, page.path)
			}
		})
	}
}
