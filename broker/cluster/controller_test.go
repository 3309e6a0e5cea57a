package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/config"
)

func openTest(t *testing.T, dir string) *Controller {
	t.Helper()
	cfg, err := config.ParseBroker(map[string]string{"num.partitions": "2"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenController(dir, cfg, "test-cluster", []config.Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantCode(t *testing.T, err error, code *kerr.Error) {
	t.Helper()
	if !errors.Is(err, code) {
		t.Fatalf("error %v, want %s", err, code.Message)
	}
}

// Every change survives a restart, because the image is rebuilt from the
// metadata log alone.
func TestControllerReplaysItsLog(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir)
	events, err := c.CreateTopic(TopicSpec{Name: "events", Partitions: 3, Configs: map[string]string{"retention.ms": "1000"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(TopicSpec{Name: "gone", Partitions: -1}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePartitions("events", 5, nil, false); err != nil {
		t.Fatal(err)
	}
	v := "compact"
	if err := c.AlterTopicConfigs("events", []ConfigChange{{Name: "cleanup.policy", Value: &v}, {Name: "retention.ms"}}, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	first, err := c.AllocateProducerIDs(ProducerIDBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()

	c = openTest(t, dir)
	defer c.Close()
	img := c.Image()
	got, ok := img.Topics["events"]
	if !ok || got.ID != events.ID || len(got.Partitions) != 5 {
		t.Fatalf("after restart: %+v", got)
	}
	if got.Configs["cleanup.policy"] != "compact" || got.Configs["retention.ms"] != "" {
		t.Fatalf("configs after restart: %v", got.Configs)
	}
	if _, ok := img.Topics["gone"]; ok {
		t.Fatal("deleted topic is back after restart")
	}
	if next, _ := c.AllocateProducerIDs(ProducerIDBlockSize); next != first+ProducerIDBlockSize {
		t.Fatalf("producer ids restart at %d, want %d: ids would be reused", next, first+ProducerIDBlockSize)
	}
}

// A crash in the middle of appending leaves a line without its newline;
// that change never reached anyone and is dropped, the rest loads.
func TestControllerDropsTornLastLine(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir)
	if _, err := c.CreateTopic(TopicSpec{Name: "kept", Partitions: 1}, false); err != nil {
		t.Fatal(err)
	}
	c.Close()
	f, _ := os.OpenFile(filepath.Join(dir, MetadataLogFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"topic":{"name":"torn","id":"AAAA`)
	f.Close()
	c = openTest(t, dir)
	defer c.Close()
	if _, ok := c.Image().Topics["kept"]; !ok {
		t.Fatal("complete change lost")
	}
	if _, ok := c.Image().Topics["torn"]; ok {
		t.Fatal("torn change applied")
	}
	if _, err := c.CreateTopic(TopicSpec{Name: "after", Partitions: 1}, false); err != nil {
		t.Fatal(err)
	}
}

func TestControllerRefusesBadChanges(t *testing.T) {
	c := openTest(t, t.TempDir())
	defer c.Close()
	if _, err := c.CreateTopic(TopicSpec{Name: "a.b", Partitions: 1}, false); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		spec TopicSpec
		code *kerr.Error
	}{
		{TopicSpec{Name: "a.b"}, kerr.TopicAlreadyExists},
		{TopicSpec{Name: "a_b"}, kerr.InvalidTopicException},
		{TopicSpec{Name: "bad topic!"}, kerr.InvalidTopicException},
		{TopicSpec{Name: ".."}, kerr.InvalidTopicException},
		{TopicSpec{Name: "zero", Partitions: -5}, kerr.InvalidPartitions},
		{TopicSpec{Name: "rf", ReplicationFactor: 3}, kerr.InvalidReplicationFactor},
		{TopicSpec{Name: "cfg", Configs: map[string]string{"retention.ms": "abc"}}, kerr.InvalidConfig},
		{TopicSpec{Name: "cfg2", Configs: map[string]string{"no.such.config": "1"}}, kerr.InvalidConfig},
		{TopicSpec{Name: "assign", Assignment: [][]int32{{7}}}, kerr.InvalidReplicaAssignment},
	}
	for _, tc := range cases {
		_, err := c.CreateTopic(tc.spec, false)
		wantCode(t, err, tc.code)
	}
	wantCode(t, c.CreatePartitions("a.b", 1, nil, false), kerr.InvalidPartitions)
	wantCode(t, c.CreatePartitions("nope", 3, nil, false), kerr.UnknownTopicOrPartition)
	bad := "-7"
	wantCode(t, c.AlterTopicConfigs("a.b", []ConfigChange{{Name: "segment.bytes", Value: &bad}}, false, false), kerr.InvalidConfig)
	_, err := c.DeleteTopic("nope")
	wantCode(t, err, kerr.UnknownTopicOrPartition)
	// validate_only changes nothing.
	if _, err := c.CreateTopic(TopicSpec{Name: "dry", Partitions: 4}, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Image().Topics["dry"]; ok {
		t.Fatal("validate_only created the topic")
	}
}

// TestControllerDecidesWhileSubscribersWork: the subscribers' side effects
// (the replica manager creating logs on disk) run without the controller's
// lock: while one is busy with a new topic, a conflicting change is refused
// at once, and changes decided meanwhile (producer-id blocks, each built on
// the last) are applied in order once it is done, none handing out the
// same ids.
func TestControllerDecidesWhileSubscribersWork(t *testing.T) {
	c := openTest(t, t.TempDir())
	defer c.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	unblock := sync.OnceFunc(func() { close(release) })
	defer unblock() // before Close, so that a failed test ends
	c.Subscribe(func(prev, next *Image) {
		if _, ok := next.Topics["slow"]; ok && prev.Topics["slow"] == nil {
			close(entered)
			<-release
		}
	})
	created := make(chan error, 1)
	go func() {
		_, err := c.CreateTopic(TopicSpec{Name: "slow", Partitions: 1}, false)
		created <- err
	}()
	<-entered
	refused := make(chan error, 1)
	go func() { refused <- c.commit([]Record{{Topic: &TopicRecord{Name: "slow", ID: NewTopicID()}}}) }()
	select {
	case err := <-refused:
		if err == nil {
			t.Fatal("a second topic named slow was accepted while the first was being applied")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a conflicting change waited for a subscriber: the controller's lock is held while subscribers work")
	}
	const n = 8
	firsts := make(chan int64, n)
	for range n {
		go func() {
			first, err := c.AllocateProducerIDs(ProducerIDBlockSize)
			if err != nil {
				t.Error(err)
			}
			firsts <- first
		}()
	}
	time.Sleep(100 * time.Millisecond)
	unblock()
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for range n {
		first := <-firsts
		if seen[first] || first%ProducerIDBlockSize != 0 {
			t.Fatalf("producer id block %d handed out twice or misaligned: %v", first, seen)
		}
		seen[first] = true
	}
	if got := c.Image().NextProducerID; got != n*ProducerIDBlockSize {
		t.Fatalf("next producer id %d after %d blocks, want %d", got, n, n*ProducerIDBlockSize)
	}
}

// Concurrent AlterConfigs (replace) of one resource, each naming one
// property: whatever order they commit in, exactly one property is left,
// the last one's. Decided from a stale image, an alter misses what another
// set meanwhile and leaves it.
func TestControllerAltersConfigsAtomically(t *testing.T) {
	t.Parallel()
	c := openTest(t, t.TempDir())
	defer c.Close()
	if _, err := c.CreateTopic(TopicSpec{Name: "t", Partitions: 1}, false); err != nil {
		t.Fatal(err)
	}
	brokerKeys := map[string]string{"log.retention.ms": "3600000", "log.segment.bytes": "1048576", "message.max.bytes": "100000",
		"log.roll.ms": "60000", "log.cleaner.delete.retention.ms": "1000", "log.flush.interval.messages": "1000"}
	topicKeys := map[string]string{"retention.ms": "3600000", "segment.bytes": "1048576", "max.message.bytes": "100000",
		"segment.ms": "60000", "delete.retention.ms": "1000", "flush.messages": "1000"}
	for round := range 10 {
		var wg sync.WaitGroup
		for k, v := range brokerKeys {
			wg.Go(func() {
				if err := c.AlterBrokerConfigs("", []ConfigChange{{Name: k, Value: &v}}, true, false); err != nil {
					t.Error(err)
				}
			})
		}
		for k, v := range topicKeys {
			wg.Go(func() {
				if err := c.AlterTopicConfigs("t", []ConfigChange{{Name: k, Value: &v}}, true, false); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		img := c.Image()
		if got := img.BrokerConfigs[""]; len(got) != 1 {
			t.Fatalf("round %d: the cluster default holds %v after replacing alters, want one property", round, got)
		}
		if got := img.Topics["t"].Configs; len(got) != 1 {
			t.Fatalf("round %d: topic t holds %v after replacing alters, want one override", round, got)
		}
	}
}
