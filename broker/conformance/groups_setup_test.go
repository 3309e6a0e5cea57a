package conformance

// Consumer-group conformance (groups_*_test.go): real clients consume as
// groups against the broker. These tests run against one of two brokers:
//
//   - by default the real tributary binary (internal/testbroker), which must
//     list JoinGroup in ApiVersions;
//   - with TRIBUTARY_GROUPS_AGAINST_KAFKA=1, a real Apache Kafka 4.4.0
//     (internal/testbroker.StartKafka), one per test. This checks the tests
//     themselves: every test here must pass against Kafka.
//
//   go test ./broker/conformance -run 'TestGroups' -v
//   TRIBUTARY_GROUPS_AGAINST_KAFKA=1 go test ./broker/conformance -run 'TestGroups' -v

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupsBroker is what a group test needs of a broker: an address, and a
// kill -9 followed by a restart on the same port and data.
type groupsBroker interface {
	Addr() string
	Kill()
	Restart()
	Log() string
}

// groupsAgainstKafka tells whether the tests run against a real Kafka.
func groupsAgainstKafka() bool { return os.Getenv("TRIBUTARY_GROUPS_AGAINST_KAFKA") == "1" }

// groupsStart starts the broker for one group test: a real Kafka 4.4.0 with
// TRIBUTARY_GROUPS_AGAINST_KAFKA=1, else tributary.
func groupsStart(t *testing.T) groupsBroker {
	t.Helper()
	if groupsAgainstKafka() {
		k := testbroker.StartKafka(t)
		groupsWarmUp(t, k.Addr())
		return k
	}
	// As the Kafka reference broker: no wait for more members before the
	// first rebalance of a new group (the default, 3s, would only slow
	// every test down).
	b := extBroker(t, "group.initial.rebalance.delay.ms=0")
	// JoinGroup is API key 11.
	if !toolBrokerListsAPI(t, b.Addr(), 11) {
		t.Fatal("the broker does not list JoinGroup (key 11) in ApiVersions")
	}
	groupsWarmUp(t, b.Addr())
	return b
}

// groupsWarmUp asks FindCoordinator until the broker answers without
// error. Kafka creates __consumer_offsets on the first ask and answers
// COORDINATOR_NOT_AVAILABLE until its partitions are loaded; tributary
// likewise answers COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE
// for a moment after creating it. Clients retry those, but kafka-go logs
// them as errors, which its test counts; the tests here are about groups,
// not about a broker's first second.
func groupsWarmUp(t *testing.T, addr string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	start := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = []string{"warm-up"}
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		if err == nil && len(resp.Coordinators) == 1 && resp.Coordinators[0].ErrorCode == 0 {
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("group coordinator not available after 60s: %v %+v", err, resp)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("group coordinator available after %v", time.Since(start).Round(time.Millisecond))
}

// groupsDeadline bounds one test's consumption.
const groupsDeadline = 60 * time.Second

// groupsCreateTopic creates topic with n partitions (kadm).
func groupsCreateTopic(t *testing.T, addr, topic string, n int32) {
	t.Helper()
	adm, ctx := goAdmin(t, addr)
	resp, err := adm.CreateTopic(ctx, n, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("CreateTopic %s: %v", topic, err)
	}
}

// groupsProducer produces records "<topic>/<id>" with ids 0, 1, 2, ... and
// keys spreading them over every partition (franz-go, acks=all,
// idempotent), keeping where each went.
type groupsProducer struct {
	t     *testing.T
	cl    *kgo.Client
	topic string
	mu    sync.Mutex
	next  int
	acks  map[int]goAck // by id
	errs  []error
}

func newGroupsProducer(t *testing.T, addr, topic string) *groupsProducer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &groupsProducer{t: t, cl: cl, topic: topic, acks: map[int]goAck{}}
}

// produce sends n more records and waits for their acks.
func (p *groupsProducer) produce(n int) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	p.mu.Lock()
	first := p.next
	p.next += n
	p.mu.Unlock()
	for id := first; id < first+n; id++ {
		wg.Add(1)
		r := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", id%101)), Value: []byte(fmt.Sprintf("%s/%d", p.topic, id))}
		p.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			p.mu.Lock()
			defer p.mu.Unlock()
			if err != nil {
				p.errs = append(p.errs, fmt.Errorf("record %d: %w", id, err))
				return
			}
			p.acks[id] = goAck{r.Partition, r.Offset}
		})
	}
	wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errs) > 0 {
		p.t.Fatalf("produce: %v", p.errs[0])
	}
}

// count is how many records were acknowledged.
func (p *groupsProducer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acks)
}

// ends are the partitions' end offsets after what was produced.
func (p *groupsProducer) ends() map[int32]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	end := map[int32]int64{}
	for _, a := range p.acks {
		end[a.Partition] = max(end[a.Partition], a.Offset+1)
	}
	return end
}

// groupsCommitted fetches group's committed offsets for topic (OffsetFetch
// through kadm).
func groupsCommitted(t *testing.T, addr, group, topic string) map[int32]int64 {
	t.Helper()
	adm, ctx := goAdmin(t, addr)
	offs, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		t.Fatalf("FetchOffsets %s: %v", group, err)
	}
	got := map[int32]int64{}
	for p, o := range offs[topic] {
		got[p] = o.At
	}
	return got
}

// groupsCheckCommittedAtEnd checks group committed exactly the end offset
// of every partition of topic that holds records.
func groupsCheckCommittedAtEnd(t *testing.T, addr, group, topic string, end map[int32]int64) {
	t.Helper()
	got := groupsCommitted(t, addr, group, topic)
	for p, e := range end {
		if got[p] != e {
			t.Errorf("group %s: committed offset of %s/%d is %d, want the end offset %d (all committed: %v)", group, topic, p, got[p], e, got)
		}
	}
}

// groupsDescribe is DescribeGroups of one group (kmsg, so that nothing is
// interpreted): its state, protocol type and protocol, and each member's
// assignment decoded as a consumer assignment.
func groupsDescribe(t *testing.T, addr, group string) (state, protocol string, members map[string][]int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("DescribeGroups %s: %v (%d groups)", group, err, len(resp.Groups))
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 {
		t.Fatalf("DescribeGroups %s: error %d", group, g.ErrorCode)
	}
	members = map[string][]int32{}
	for _, m := range g.Members {
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(m.MemberAssignment); err != nil && len(m.MemberAssignment) > 0 {
			t.Errorf("DescribeGroups %s: member %s: assignment not a consumer assignment: %v", group, m.MemberID, err)
		}
		var parts []int32
		for _, tp := range a.Topics {
			parts = append(parts, tp.Partitions...)
		}
		members[m.MemberID] = parts
	}
	return g.State, g.ProtocolType + "/" + g.Protocol, members
}
