package conformance

// Consumer groups with the Go clients (franz-go kgo.ConsumerGroup, Sarama
// ConsumerGroup, kafka-go Reader with GroupID) and librdkafka
// (python/groups.py): each consumes a topic as a group of two members that
// commit after processing. Also: two groups on one topic each get every
// record. See groups_setup_test.go for which broker these run against.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// groupsPartitions is the partition count of the Go clients' group topics.
const groupsPartitions = 4

// groupsMemberFunc runs one group member of a client library: it
// subscribes to topic in group, hands every record to rec (then commits
// it: commit after process), and returns once ctx is done, after closing
// the member (which leaves the group). Errors the client reports go to
// errf.
type groupsMemberFunc func(ctx context.Context, addr, topic, group, member string, rec func(p int32, o int64, v string), errf func(error))

var groupsGoClients = []struct {
	name string
	run  groupsMemberFunc
}{
	{"franz-go", franzGroupMember},
	{"sarama", saramaGroupMember},
	{"kafka-go", kafkagoGroupMember},
}

// groupsTracker collects what the members of one group processed.
type groupsTracker struct {
	mu        sync.Mutex
	byMember  map[string]int
	seen      map[goAck]int
	values    map[string]bool
	problems  []string
	dups      int
	clientErr []string
}

func newGroupsTracker() *groupsTracker {
	return &groupsTracker{byMember: map[string]int{}, seen: map[goAck]int{}, values: map[string]bool{}}
}

func (g *groupsTracker) rec(member string) func(p int32, o int64, v string) {
	return func(p int32, o int64, v string) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.byMember[member]++
		at := goAck{p, o}
		g.seen[at]++
		if g.seen[at] > 1 {
			g.dups++
		}
		g.values[v] = true
	}
}

func (g *groupsTracker) errf(member string) func(error) {
	return func(err error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.clientErr = append(g.clientErr, member+": "+err.Error())
	}
}

func (g *groupsTracker) members() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]int{}
	for k, v := range g.byMember {
		out[k] = v
	}
	return out
}

// missing is how many of the producer's records were not processed yet.
func (g *groupsTracker) missing(p *groupsProducer) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for id := range p.acks {
		if !g.values[fmt.Sprintf("%s/%d", p.topic, id)] {
			n++
		}
	}
	return n
}

func groupsWait(t *testing.T, what string, timeout time.Duration, cond func() bool, state func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; %s", timeout, what, state())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// groupsConsumeAsGroup runs members (one per name, each with its own run)
// in group on topic, producing while they work: 200 records, then 20 every
// 100ms until every member has processed some (so the group really is
// shared), then 200 more. It waits until every record was processed and
// the group's committed offsets are the end offsets, stops the members and
// returns the tracker.
func groupsConsumeAsGroup(t *testing.T, addr string, prod *groupsProducer, group string, runs map[string]groupsMemberFunc) *groupsTracker {
	t.Helper()
	tr := newGroupsTracker()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	prod.produce(200)
	start := time.Now()
	for name, run := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(ctx, addr, prod.topic, group, name, tr.rec(name), tr.errf(name))
		}()
	}
	state := func() string {
		return fmt.Sprintf("processed by member %v, %d of %d records not processed, client errors %q", tr.members(), tr.missing(prod), prod.count(), tr.clientErr)
	}
	deadline := time.Now().Add(groupsDeadline)
	for {
		m := tr.members()
		busy := 0
		for name := range runs {
			if m[name] > 0 {
				busy++
			}
		}
		if busy == len(runs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every member processed records after %v; %s", groupsDeadline, state())
		}
		prod.produce(20)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%s: every member processing after %v", group, time.Since(start).Round(time.Millisecond))
	prod.produce(200)
	groupsWait(t, "every record processed", groupsDeadline, func() bool { return tr.missing(prod) == 0 }, state)
	end := prod.ends()
	var committed map[int32]int64
	groupsWait(t, "commits up to the end offsets", 30*time.Second, func() bool {
		committed = groupsCommitted(t, addr, group, prod.topic)
		for p, e := range end {
			if committed[p] != e {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("committed %v, end offsets %v", committed, end) })
	t.Logf("%s: %d records processed in %v (by member %v, %d again), committed %v", group, prod.count(), time.Since(start).Round(time.Millisecond), tr.members(), tr.dups, committed)
	cancel()
	wg.Wait()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, e := range tr.clientErr {
		t.Errorf("client error: %s", e)
	}
	return tr
}

// TestGroupsGoClients: franz-go, Sarama and kafka-go each consume their
// own topic as a group of two members that commit.
func TestGroupsGoClients(t *testing.T) {
	b := groupsStart(t)
	for _, c := range groupsGoClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			topic := "groups-" + c.name
			groupsCreateTopic(t, b.Addr(), topic, groupsPartitions)
			prod := newGroupsProducer(t, b.Addr(), topic)
			groupsConsumeAsGroup(t, b.Addr(), prod, c.name+"-group", map[string]groupsMemberFunc{c.name + "-1": c.run, c.name + "-2": c.run})
		})
	}
}

// TestGroupsTwoGroups: two groups (franz-go, two members each) on the same
// topic each receive every record and commit their own offsets.
func TestGroupsTwoGroups(t *testing.T) {
	b := groupsStart(t)
	const topic = "groups-two"
	groupsCreateTopic(t, b.Addr(), topic, groupsPartitions)
	prod := newGroupsProducer(t, b.Addr(), topic)
	prod.produce(500)
	var wg sync.WaitGroup
	trs := map[string]*groupsTracker{}
	for _, group := range []string{"two-a", "two-b"} {
		tr := newGroupsTracker()
		trs[group] = tr
		wg.Add(1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			defer wg.Done()
			var mwg sync.WaitGroup
			for i := 1; i <= 2; i++ {
				name := fmt.Sprintf("%s-%d", group, i)
				mwg.Add(1)
				go func() {
					defer mwg.Done()
					franzGroupMember(ctx, b.Addr(), topic, group, name, tr.rec(name), tr.errf(name))
				}()
			}
			mwg.Wait()
		}()
	}
	for _, group := range []string{"two-a", "two-b"} {
		tr := trs[group]
		groupsWait(t, group+" processed every record", groupsDeadline, func() bool { return tr.missing(prod) == 0 },
			func() string { return fmt.Sprintf("%d not processed, by member %v", tr.missing(prod), tr.members()) })
	}
	end := prod.ends()
	for _, group := range []string{"two-a", "two-b"} {
		var committed map[int32]int64
		groupsWait(t, group+" committed the end offsets", 30*time.Second, func() bool {
			committed = groupsCommitted(t, b.Addr(), group, topic)
			for p, e := range end {
				if committed[p] != e {
					return false
				}
			}
			return true
		}, func() string { return fmt.Sprintf("committed %v, end %v", committed, end) })
		t.Logf("%s: every record, by member %v (%d again), committed %v", group, trs[group].members(), trs[group].dups, committed)
	}
}

// TestGroupsLibrdkafka: python/groups.py, two confluent-kafka Consumers in
// one group (commit after process), then the committed offsets through
// kadm.
func TestGroupsLibrdkafka(t *testing.T) {
	py := pythonSetup(t)
	b := groupsStart(t)
	const topic, group = "groups-rdkafka", "rdkafka-group"
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	script := filepath.Join(testbroker.RepoRoot(), "broker", "conformance", "python", "groups.py")
	cmd := exec.CommandContext(ctx, py, script, b.Addr(), topic, group)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	t.Logf("python groups.py: %v", time.Since(start).Round(time.Millisecond))
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after 120s: %w", err)
	}
	if err != nil || !strings.Contains(stdout.String(), "GROUPS OK") {
		t.Fatalf("python groups.py failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if testing.Verbose() {
		t.Logf("stdout:\n%s", stdout.String())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Errorf("python groups.py passed but wrote to stderr:\n%s", s)
	}
	// What the script says it committed, as the broker has it.
	var ends string
	for _, l := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(l, "END ") {
			ends = strings.TrimPrefix(l, "END ")
		}
	}
	end := map[int32]int64{}
	for _, f := range strings.Fields(ends) {
		var p int32
		var o int64
		if _, err := fmt.Sscanf(f, "%d=%d", &p, &o); err != nil {
			t.Fatalf("END line %q: %v", ends, err)
		}
		end[p] = o
	}
	if len(end) == 0 {
		t.Fatalf("groups.py printed no END line")
	}
	groupsCheckCommittedAtEnd(t, b.Addr(), group, topic, end)
}

// ------------------------------------------------------------------ franz-go

// franzGroupMember: kgo.ConsumerGroup with its default balancer
// (cooperative-sticky), autocommit off, BlockRebalanceOnPoll, a commit
// after each poll's records and a commit of what was processed on
// revocation.
func franzGroupMember(ctx context.Context, addr, topic, group, member string, rec func(int32, int64, string), errf func(error)) {
	var log goClientLog
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr), kgo.ClientID(member),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				log.add("commit on revoke: %v", err)
			}
		}),
		kgo.WithLogger(franzLogger{&log}),
	)
	if err != nil {
		errf(err)
		return
	}
	defer func() {
		cl.Close()
		log.mu.Lock()
		defer log.mu.Unlock()
		for _, m := range log.msgs {
			// franz-go logs a rebalance's refused commits and heartbeats
			// at WARN; they are not errors of the broker. They go in the
			// test log via the error list only when they are errors.
			if strings.HasPrefix(m, "ERROR") {
				errf(errors.New("franz-go logged: " + m))
			}
		}
	}()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				errf(fmt.Errorf("fetch %s/%d: %w", t, p, err))
			}
		})
		fs.EachRecord(func(r *kgo.Record) { rec(r.Partition, r.Offset, string(r.Value)) })
		if ctx.Err() == nil {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				log.add("commit: %v", err)
			}
		}
		cl.AllowRebalance()
	}
}

// ------------------------------------------------------------------- Sarama

type saramaGroupHandler struct {
	rec func(int32, int64, string)
}

func (saramaGroupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaGroupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim processes each message, marks it, and commits when no more
// messages are buffered (commit after process, a batch at a time).
func (h saramaGroupHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				sess.Commit()
				return nil
			}
			h.rec(m.Partition, m.Offset, string(m.Value))
			sess.MarkMessage(m, "")
			if len(claim.Messages()) == 0 {
				sess.Commit()
			}
		case <-sess.Context().Done():
			sess.Commit()
			return nil
		}
	}
}

// saramaGroupMember: sarama.ConsumerGroup with its defaults (range
// strategy) but manual commits from the oldest offset.
func saramaGroupMember(ctx context.Context, addr, topic, group, member string, rec func(int32, int64, string), errf func(error)) {
	cfg := saramaConfig()
	cfg.ClientID = member
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		errf(err)
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for err := range cg.Errors() {
			errf(fmt.Errorf("sarama: %w", err))
		}
	}()
	for ctx.Err() == nil {
		if err := cg.Consume(ctx, []string{topic}, saramaGroupHandler{rec}); err != nil && ctx.Err() == nil {
			errf(fmt.Errorf("sarama Consume: %w", err))
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := cg.Close(); err != nil {
		errf(fmt.Errorf("sarama Close: %w", err))
	}
	<-done
}

// ------------------------------------------------------------------ kafka-go

// kafkagoGroupMember: a kafka-go Reader with GroupID (its default Range
// and RoundRobin balancers), FetchMessage then a synchronous CommitMessages
// per message, from the first offset.
func kafkagoGroupMember(ctx context.Context, addr, topic, group, member string, rec func(int32, int64, string), errf func(error)) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{addr}, GroupID: group, Topic: topic,
		StartOffset:       kafka.FirstOffset,
		MaxWait:           2 * time.Second,
		HeartbeatInterval: 500 * time.Millisecond,
		Dialer:            &kafka.Dialer{ClientID: member, Timeout: 10 * time.Second},
		ErrorLogger: kafka.LoggerFunc(func(format string, args ...any) {
			msg := fmt.Sprintf(format, args...)
			// kafka-go logs every refused group request as an error. A
			// SyncGroup (or heartbeat) answered REBALANCE_IN_PROGRESS is the
			// protocol at work when the second member joins just after the
			// first one's JoinGroup: the member rejoins, as it must.
			if ctx.Err() == nil && !strings.Contains(msg, "[27] Rebalance In Progress") {
				errf(errors.New("kafka-go Reader logged an error: " + msg))
			}
		}),
	})
	defer func() {
		if err := r.Close(); err != nil {
			errf(fmt.Errorf("kafka-go Reader.Close: %w", err))
		}
	}()
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() == nil {
				errf(fmt.Errorf("kafka-go FetchMessage: %w", err))
			}
			return
		}
		rec(int32(m.Partition), m.Offset, string(m.Value))
		if err := r.CommitMessages(ctx, m); err != nil && ctx.Err() == nil {
			errf(fmt.Errorf("kafka-go CommitMessages: %w", err))
		}
	}
}
