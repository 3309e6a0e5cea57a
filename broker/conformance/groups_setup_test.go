package conformance

// Consumer-group conformance (groups_*_test.go): real clients consume as
// groups against the broker. These tests run against one of two brokers:
//
//   - by default the real tributary binary (internal/testbroker). Each test
//     first asks ApiVersions whether the broker serves JoinGroup; while it
//     does not, the test skips with "consumer groups not implemented yet".
//     This skip is deliberate and temporary: it is correct only until the
//     group coordinator lands (CI included — a missing *broker feature* is
//     not a missing outside part). As soon as the broker lists JoinGroup the
//     tests run, under CI too, and must pass. Once groups have landed, this
//     skip should become a failure.
//   - with TRIBUTARY_GROUPS_AGAINST_KAFKA=1, a real Apache Kafka 4.4.0
//     (single-node KRaft on loopback, from the jars of scripts/kafka-jars.sh;
//     see docs/kafka-reference.md), one per test. This checks the tests
//     themselves: every test here must pass against Kafka.
//
//   go test ./broker/conformance -run 'TestGroups' -v
//   TRIBUTARY_GROUPS_AGAINST_KAFKA=1 go test ./broker/conformance -run 'TestGroups' -v

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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
// TRIBUTARY_GROUPS_AGAINST_KAFKA=1, else tributary, skipping while
// tributary does not list JoinGroup (see the top of this file).
func groupsStart(t *testing.T) groupsBroker {
	t.Helper()
	if groupsAgainstKafka() {
		r := startKafkaRef(t)
		groupsWarmUp(t, r.Addr())
		return r
	}
	// As the Kafka reference broker: no wait for more members before the
	// first rebalance of a new group (the default, 3s, would only slow
	// every test down).
	b := extBroker(t, "group.initial.rebalance.delay.ms=0")
	// JoinGroup is API key 11. The skip is correct only until the group
	// coordinator lands; it turns these tests on by itself, CI included.
	if !toolBrokerListsAPI(t, b.Addr(), 11) {
		t.Skip("consumer groups not implemented yet: the broker does not list JoinGroup (key 11) in ApiVersions; " +
			"TRIBUTARY_GROUPS_AGAINST_KAFKA=1 runs this test against Apache Kafka 4.4.0")
	}
	groupsWarmUp(t, b.Addr())
	return b
}

// kafkaRef is a real Apache Kafka 4.4.0: one process, broker and
// controller, on two free loopback ports, its data in the test's temporary
// directory.
type kafkaRef struct {
	t      *testing.T
	k      javaKafka
	dir    string
	props  string
	port   int
	cmd    *exec.Cmd
	done   chan struct{}
	logMu  sync.Mutex
	logBuf bytes.Buffer
}

func groupsFreePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startKafkaRef formats a KRaft log dir and starts Kafka on it; it is
// stopped (SIGTERM) when the test ends. Settings beyond the reference
// page's: no initial rebalance delay (as a test broker should have), and a
// __consumer_offsets of 3 partitions instead of 50, which Kafka creates
// faster.
func startKafkaRef(t *testing.T) *kafkaRef {
	t.Helper()
	k := javaSetup(t)
	r := &kafkaRef{t: t, k: k, dir: t.TempDir(), port: groupsFreePort(t)}
	cport := groupsFreePort(t)
	props := fmt.Sprintf(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:%[2]d
listeners=PLAINTEXT://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[1]d
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=%[3]s
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
`, r.port, cport, filepath.Join(r.dir, "data"))
	r.props = filepath.Join(r.dir, "server.properties")
	if err := os.WriteFile(r.props, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	// A cluster ID is a Kafka Uuid: 16 random bytes, base64url unpadded.
	id := make([]byte, 16)
	rand.Read(id)
	cid := base64.RawURLEncoding.EncodeToString(id)
	args := append(k.jvmArgs(k.classpath()), "kafka.tools.StorageTool", "format", "-t", cid, "-c", r.props)
	if out, err := exec.Command(k.java, args...).CombinedOutput(); err != nil {
		t.Fatalf("kafka StorageTool format: %v\n%s", err, out)
	}
	r.start()
	t.Cleanup(r.stop)
	return r
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

func (r *kafkaRef) start() {
	r.t.Helper()
	args := []string{"-Xms256m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true", "-cp", r.k.classpath()}
	if r.k.log4j != "" {
		// INFO, so that "Kafka Server started" shows.
		args = append(args, "-Dlog4j2.configurationFile="+r.k.log4j, "-Dkafka.log.level=INFO")
	}
	r.cmd = exec.Command(r.k.java, append(args, "kafka.Kafka", r.props)...)
	r.cmd.Stdout = &groupsLockedWriter{r}
	r.cmd.Stderr = &groupsLockedWriter{r}
	r.done = make(chan struct{})
	from := len(r.Log()) // a restart looks for its own "started"
	start := time.Now()
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go func() { r.cmd.Wait(); close(r.done) }()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(r.Log()[from:], "Kafka Server started") {
		select {
		case <-r.done:
			r.t.Fatalf("kafka exited before it started:\n%s", r.tail())
		case <-deadline:
			r.cmd.Process.Kill()
			<-r.done
			r.t.Fatalf("kafka not started after 60s:\n%s", r.tail())
		case <-time.After(50 * time.Millisecond):
		}
	}
	r.t.Logf("kafka 4.4.0 started on %s in %v", r.Addr(), time.Since(start).Round(time.Millisecond))
}

type groupsLockedWriter struct{ r *kafkaRef }

func (w *groupsLockedWriter) Write(p []byte) (int, error) {
	w.r.logMu.Lock()
	defer w.r.logMu.Unlock()
	return w.r.logBuf.Write(p)
}

func (r *kafkaRef) Addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

func (r *kafkaRef) Log() string {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	return r.logBuf.String()
}

// tail is the end of the log, WARN and above only.
func (r *kafkaRef) tail() string {
	var keep []string
	for _, l := range strings.Split(r.Log(), "\n") {
		if strings.Contains(l, "WARN") || strings.Contains(l, "ERROR") || strings.Contains(l, "Exception") {
			keep = append(keep, l)
		}
	}
	if len(keep) > 60 {
		keep = keep[len(keep)-60:]
	}
	return strings.Join(keep, "\n")
}

func (r *kafkaRef) running() bool {
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// Kill is kill -9.
func (r *kafkaRef) Kill() {
	r.cmd.Process.Kill()
	<-r.done
}

func (r *kafkaRef) Restart() {
	r.t.Helper()
	if r.running() {
		r.t.Fatal("Restart of a running kafka")
	}
	r.start()
}

func (r *kafkaRef) stop() {
	if !r.running() {
		return
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		r.cmd.Process.Kill()
		<-r.done
	}
	if r.t.Failed() {
		r.t.Logf("kafka log (WARN and above):\n%s", r.tail())
	}
}

// groupsDeadline bounds one test's consumption.
const groupsDeadline = 60 * time.Second

// groupsCreateTopic creates topic with n partitions (kadm).
func groupsCreateTopic(t *testing.T, addr, topic string, n int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, n, 1, nil, topic)
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
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
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
