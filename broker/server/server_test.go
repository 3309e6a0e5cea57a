package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/config"
)

// startBroker runs a broker on a free loopback port with its data in a
// temporary directory, and stops it when the test ends.
func startBroker(t testing.TB, props map[string]string) *Server {
	t.Helper()
	all := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}
	for k, v := range props {
		all[k] = v
	}
	cfg, err := config.ParseBroker(all)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := New(cfg, Options{Logger: logger})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s
}

func TestProduceConsumeRoundTrip(t *testing.T) {
	s := startBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr("PLAINTEXT")), kgo.DefaultProduceTopic("events"),
		kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	create := kmsg.NewCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "events", 3, 1
	create.Topics = append(create.Topics, rt)
	cresp, err := create.RequestWith(ctx, cl)
	if err != nil || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic: %v %+v", err, cresp)
	}

	const n = 2000
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("user-%d", i%17)), Value: []byte(fmt.Sprintf("event %d", i)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("poll: %v (have %d of %d)", err, len(got), n)
		}
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
	}
	if len(got) != n {
		t.Fatalf("consumed %d distinct records, want %d", len(got), n)
	}
}

func topicSpec(name string) cluster.TopicSpec {
	return cluster.TopicSpec{Name: name, Partitions: 1, ReplicationFactor: 1}
}

// A role split that is not built is refused at start, naming the value,
// rather than run as a combined node the operator did not ask for.
// A single node (no controller.quorum.voters) is both broker and
// controller: a split role there would be a node nobody can use.
func TestSplitRolesNeedAQuorum(t *testing.T) {
	for _, roles := range []string{"broker", "controller"} {
		cfg, err := config.ParseBroker(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(), "process.roles": roles})
		if err != nil {
			t.Fatal(err)
		}
		err = New(cfg, Options{Logger: slog.New(slog.DiscardHandler)}).Start()
		if err == nil || !strings.Contains(err.Error(), "process.roles="+roles) || !strings.Contains(err.Error(), "controller.quorum.voters") {
			t.Errorf("process.roles=%s: start error %v, want one naming the value", roles, err)
		}
	}
}
