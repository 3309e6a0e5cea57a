package conformance

// The differential tools suite: each of Apache Kafka 4.4's command-line
// tools that talks to a broker runs with the same arguments against a real
// Apache Kafka broker and against Tributary, and what it prints (stdout, the
// tool's own stderr lines, the exit status) must be the same once broker
// addresses, ids, directories and times are normalised. Where an output
// legitimately differs the step says why in one line (differs), or that it
// waits for another branch (pending); the table in docs/compat.md is
// written from these steps (TRIBUTARY_UPDATE_COMPAT=1) and a normal run
// checks it is current.
//
// Everything Java runs in one JVM (tools_jvm_test.go): Kafka's brokers, one
// node and three, and every tool invocation, the Kafka and Tributary sides
// of a step at the same time.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

const diffToolTimeout = 90 * time.Second

// diffSide is one of the two systems under comparison.
type diffSide struct {
	name  string   // "kafka" or "tributary"
	addrs []string // bootstrap addresses, node 1 first
	dir   string   // a directory of its own for files the tools read
	// dataDir is node id's log directory (DumpLogSegments, LogDirsCommand).
	dataDir func(id int) string
}

func (s diffSide) bs() string { return strings.Join(s.addrs, ",") }

// diffStep is one tool invocation, made on both sides.
type diffStep struct {
	tool  string   // the class's simple name, the table's first column
	class string   // main class
	args  []string // {bs} is the side's bootstrap list, {dir} its directory
	// files are written into the side's directory first (name → content).
	files map[string]string
	// norm normalises further, for outputs with numbers that are not
	// expected to agree (measured rates, offsets of another layout).
	norm func(string) string
	// differs says in one line why the outputs legitimately differ; they
	// are still printed when the test is verbose.
	differs string
	// pending: the outputs differ until another branch lands; the test
	// fails once they agree, so that the reason is removed.
	pending string
	// known names a difference that norm removes, so the rest is still
	// compared: the table says "same, but" and why.
	known string
	// do runs before the tool on each side (data to read, offsets).
	do func(t *testing.T, side diffSide)
	// plain runs the tool in the tool JVM that holds no broker.
	plain bool
	// exits: the tool ends with System.exit (VerifiableProducer,
	// VerifiableConsumer), so it runs in the shared JVM only where that
	// intercepts it.
	exits bool
	// check makes extra assertions on the (normalised) results.
	check func(t *testing.T, kafka, trib toolResult)
}

// diffRow is one line of the table in docs/compat.md.
type diffRow struct {
	tool, invocation, result string
	nodes                    int
}

type differ struct {
	java           javaKafka
	jvm            *toolJVM
	plain          *toolJVM // without brokers
	interceptsExit bool
	kafka, trib    diffSide
	mu             sync.Mutex
	rows           []diffRow
}

var (
	diffUUID   = regexp.MustCompile(`(^|[^A-Za-z0-9_-])([A-Za-z0-9_-]{22})($|[^A-Za-z0-9_-])`)
	diffMillis = regexp.MustCompile(`\b1[6-9]\d{11}\b`)
	diffLogRe  = regexp.MustCompile(`^\[\d{4}-\d\d-\d\d[ T]`)
)

// normalise replaces what legitimately differs between any two clusters:
// broker addresses (by node id), the side's directory, Kafka Uuids (topic
// and cluster ids) and times in Unix milliseconds.
func (s diffSide) normalise(out string) string {
	for i := len(s.addrs) - 1; i >= 0; i-- {
		out = strings.ReplaceAll(out, s.addrs[i], fmt.Sprintf("<broker%d>", i+1))
		_, port, _ := strings.Cut(s.addrs[i], ":")
		out = strings.ReplaceAll(out, "localhost:"+port, fmt.Sprintf("<broker%d>", i+1))
		// A port alone, as kafka-cluster list-endpoints prints it.
		out = regexp.MustCompile(`\b`+port+`\b`).ReplaceAllString(out, fmt.Sprintf("<port%d>", i+1))
	}
	out = strings.ReplaceAll(out, s.dir, "<dir>")
	for id := 1; id <= len(s.addrs); id++ {
		out = strings.ReplaceAll(out, s.dataDir(id), fmt.Sprintf("<logdir%d>", id))
	}
	out = diffUUID.ReplaceAllStringFunc(out, func(m string) string {
		sub := diffUUID.FindStringSubmatch(m)
		// A Uuid has upper and lower case letters; a long topic name
		// or word rarely does.
		if id := sub[2]; strings.ToLower(id) == id || strings.ToUpper(id) == id {
			return m
		}
		return sub[1] + "<uuid>" + sub[3]
	})
	return diffMillis.ReplaceAllString(out, "<ms>")
}

// toolStderr is what a tool printed itself on stderr: its log lines
// (timestamped) and stack traces are left out.
func toolStderr(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || diffLogRe.MatchString(l) || strings.HasPrefix(t, "at ") || strings.HasPrefix(t, "Caused by:") ||
			(strings.HasPrefix(t, "...") && strings.HasSuffix(t, " more")) {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

func (d *differ) expand(side diffSide, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		a = strings.ReplaceAll(a, "{bs}", side.bs())
		a = strings.ReplaceAll(a, "{logdir}", side.dataDir(1))
		// Times relative to the first record's.
		a = strings.ReplaceAll(a, "{epoch+12s}", fmt.Sprint(diffEpoch.Add(12*time.Second).UnixMilli()))
		a = strings.ReplaceAll(a, "{datetime+13s}", diffEpoch.Add(13*time.Second).UTC().Format("2006-01-02T15:04:05.000Z"))
		out[i] = strings.ReplaceAll(a, "{dir}", side.dir)
	}
	return out
}

// step runs s on both sides at once and compares.
func (d *differ) step(t *testing.T, s diffStep) {
	t.Helper()
	inv := strings.Join(s.args, " ")
	inv = strings.ReplaceAll(inv, "--bootstrap-server {bs} ", "")
	inv = strings.TrimSuffix(inv, " --bootstrap-server {bs}")
	inv = strings.ReplaceAll(inv, "{dir}/", "")
	var res [2]toolResult
	var errs [2]error
	var wg sync.WaitGroup
	began := time.Now()
	for _, side := range []diffSide{d.kafka, d.trib} {
		if s.do != nil {
			s.do(t, side)
		}
	}
	for i, side := range []diffSide{d.kafka, d.trib} {
		for name, content := range s.files {
			if err := os.WriteFile(filepath.Join(side.dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r toolResult
			var err error
			switch {
			case s.exits && !d.interceptsExit:
				r, err = d.runOwnJVM(t, s.class, d.expand(side, s.args))
			case s.plain || s.exits:
				r, err = d.plain.run(diffToolTimeout, s.class, d.expand(side, s.args)...)
			default:
				r, err = d.jvm.run(diffToolTimeout, s.class, d.expand(side, s.args)...)
			}
			r.stdout, r.stderr = side.normalise(r.stdout), side.normalise(toolStderr(r.stderr))
			if s.norm != nil {
				r.stdout, r.stderr = s.norm(r.stdout), s.norm(r.stderr)
			}
			res[i], errs[i] = r, err
		}()
	}
	wg.Wait()
	t.Logf("%s %s: %v", s.tool, inv, time.Since(began).Round(time.Millisecond))
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s side: %v", []string{"kafka", "tributary"}[i], err)
		}
	}
	k, tr := res[0], res[1]
	same := k == tr
	show := fmt.Sprintf("Kafka (status %d):\n%s\n%s\nTributary (status %d):\n%s\n%s", k.code, k.stdout, k.stderr, tr.code, tr.stdout, tr.stderr)
	result := "same"
	if s.known != "" {
		result = "same, but " + s.known
	}
	switch {
	case s.pending != "":
		result = "pending: " + strings.TrimPrefix(s.pending, "pending ")
		if same {
			t.Errorf("%s %s: the outputs agree now; remove %q:\n%s", s.tool, inv, s.pending, show)
		} else if testing.Verbose() {
			t.Logf("%s %s: %s\n%s", s.tool, inv, s.pending, show)
		}
	case s.differs != "":
		result = "differs: " + s.differs
		if testing.Verbose() {
			t.Logf("%s %s: %s\n%s", s.tool, inv, s.differs, show)
		}
	case !same:
		t.Errorf("%s %s: the outputs differ\n%s", s.tool, inv, show)
	case os.Getenv("CONFORMANCE_TOOLS_SHOW") != "":
		t.Logf("%s %s: %s\n%s", s.tool, inv, result, show)
	}
	if s.check != nil {
		s.check(t, k, tr)
	}
	d.mu.Lock()
	d.rows = append(d.rows, diffRow{s.tool, inv, result, len(d.kafka.addrs)})
	d.mu.Unlock()
}

func (d *differ) runOwnJVM(t *testing.T, class string, args []string) (toolResult, error) {
	stdout, stderr, err := d.java.run(t, diffToolTimeout, d.java.classpath(), nil, class, args...)
	r := toolResult{stdout: stdout, stderr: stderr}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code, err = exit.ExitCode(), nil
	}
	return r, err
}

// diffProduce writes the same records to both sides: n records a partition
// of topic, keyed, with timestamps 1 s apart from a fixed instant, each
// partition's in one request, so the logs hold the same batches.
func diffProduce(t *testing.T, addrs []string, topic string, partitions, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for p := 0; p < partitions; p++ {
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p),
				Key:       []byte(fmt.Sprintf("key-%d", i%5)),
				Value:     []byte(fmt.Sprintf("value %d of partition %d", i, p)),
				Timestamp: diffEpoch.Add(time.Duration(p*n+i) * time.Second)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s-%d at %v: %v", topic, p, addrs, err)
		}
	}
}

// diffEpoch is the first record's timestamp: recent, or retention
// (7 days by default) would delete the records on one side and not yet on
// the other.
var diffEpoch = time.Now().Add(-10 * time.Minute).Truncate(time.Minute)

// diffCommit commits offsets of group for topic without a member.
func diffCommit(t *testing.T, addrs []string, group, topic string, offsets map[int32]int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := kadm.Offsets{}
	for p, at := range offsets {
		o.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	resp, err := kadm.NewClient(cl).CommitOffsets(ctx, group, o)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit %s at %v: %v", group, addrs, err)
	}
}

// numbers replaces every number: for measurements (rates, latencies) whose
// layout is compared but whose values are not.
var diffNumber = regexp.MustCompile(`-?\d+(\.\d+)?`)

const measured = "the measured rates and latencies, compared by layout only"

func numbers(s string) string { return diffNumber.ReplaceAllString(s, "N") }

func TestKafkaToolsDiff(t *testing.T) {
	k := javaSetup(t)
	jvm := startToolJVM(t, k)
	began := time.Now()

	// Kafka's single node starts in the tool JVM, its three nodes in a
	// second one (two brokers with one node.id in one JVM share the metadata
	// loader's publishers by id, and one kills the process), while the
	// Tributary nodes start beside them.
	var kOne, kThree kafkaNodes
	var tOne *testbroker.Broker
	var tThree *testcluster.Cluster
	var plain *toolJVM
	var wg sync.WaitGroup
	wg.Add(5)
	go func() { defer wg.Done(); plain = startToolJVM(t, k) }()
	go func() { defer wg.Done(); kOne = jvm.startKafkaNodes(t, 1) }()
	go func() { defer wg.Done(); kThree = startToolJVM(t, k).startKafkaNodes(t, 3) }()
	// The single Tributary node's file sets what the Kafka node's sets
	// (those it can: its listeners are its own), for describe --all.
	go func() {
		defer wg.Done()
		tOne = extBroker(t, "group.initial.rebalance.delay.ms=0", "node.id=1", "process.roles=broker,controller",
			"num.partitions=1", "offsets.topic.replication.factor=1", "offsets.topic.num.partitions=3",
			"transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1")
	}()
	go func() { defer wg.Done(); tThree = testcluster.Start(t, 3, "group.initial.rebalance.delay.ms=0") }()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("brokers up after %v", time.Since(began).Round(time.Millisecond))

	intercepts := plain.interceptExit(t)
	single := &differ{java: k, jvm: jvm, plain: plain, interceptsExit: intercepts,
		kafka: diffSide{name: "kafka", addrs: kOne.addrs, dir: t.TempDir()},
		trib:  diffSide{name: "tributary", addrs: []string{tOne.Addr()}, dir: t.TempDir()},
	}
	single.kafka.dataDir = func(id int) string { return kOne.logDirs[id-1] }
	single.trib.dataDir = func(int) string { return tOne.DataDir() }
	three := &differ{java: k, jvm: jvm, plain: plain, interceptsExit: intercepts,
		kafka: diffSide{name: "kafka", addrs: kThree.addrs, dir: t.TempDir()},
		trib:  diffSide{name: "tributary", dir: t.TempDir()},
	}
	for _, n := range tThree.Nodes {
		three.trib.addrs = append(three.trib.addrs, n.Addr())
	}
	three.kafka.dataDir = func(id int) string { return kThree.logDirs[id-1] }
	three.trib.dataDir = func(id int) string { return tThree.Node(int32(id)).DataDir() }
	// The two clusters' steps run side by side: they share nothing.
	wg.Add(2)
	go func() { defer wg.Done(); diffSingleNode(t, single) }()
	go func() { defer wg.Done(); diffThreeNodes(t, three) }()
	wg.Wait()
	rows := append(single.rows, three.rows...)

	writeCompatTable(t, rows)
	t.Logf("differential tools suite: %v in all", time.Since(began).Round(time.Millisecond))
}

// elrMinISR: Kafka 4.4 with ELR on (eligible.leader.replicas.version=1,
// the default of a new cluster) stores min.insync.replicas on every topic
// it creates; Tributary has no ELR and stores only what was asked for.
const elrMinISR = "Kafka 4.4 with ELR sets min.insync.replicas as a dynamic cluster default, which every topic shows; Tributary has no ELR"

// tribLacksTopicConfig are Kafka 4.4's topic configs Tributary does not know.
var tribLacksTopicConfig = map[string]bool{
	"compression.gzip.level": true, "compression.lz4.level": true, "compression.zstd.level": true,
	"errors.deadletterqueue.group.enable": true, "local.retention.bytes": true, "local.retention.ms": true,
	"max.decompressed.message.bytes": true, "remote.copy.lag.bytes": true, "remote.copy.lag.ms": true,
	"remote.log.copy.disable": true, "remote.log.delete.on.disable": true, "remote.storage.enable": true,
}

// sortBlocks sorts the blocks of s that start with a line beginning with
// head: for tools that print topics in the order of a hash map.
func sortBlocks(s, head string) string {
	var blocks []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, head) || len(blocks) == 0 {
			blocks = append(blocks, l)
		} else {
			blocks[len(blocks)-1] += "\n" + l
		}
	}
	sort.Strings(blocks)
	return strings.Join(blocks, "\n")
}

// elrDefault and dropELRDefault: the same for the cluster-default broker
// configs, which Tributary stores only when asked (docs/cluster.md).
const elrDefault = "Kafka 4.4 stores a cluster default min.insync.replicas when it formats its metadata (KIP-966's ELR); Tributary stores none"

func dropELRDefault(s string) string {
	return regexp.MustCompile(`(?m)^  min\.insync\.replicas=1 sensitive=false synonyms=\{DYNAMIC_DEFAULT_BROKER_CONFIG:min\.insync\.replicas=1\}\n`).ReplaceAllString(s, "")
}

// brokerAllDiffers are the broker properties both know whose description
// by kafka-configs --describe --all differs on purpose, and why.
var brokerAllDiffers = []struct{ why, names string }{
	{"set in the file of Kafka's test node, which has a controller listener of its own",
		"advertised.listeners controller.listener.names controller.quorum.voters inter.broker.listener.name listeners"},
	{"defaults Tributary chooses differently from Kafka's, on purpose",
		"listener.security.protocol.map log.dir queued.max.request.bytes socket.receive.buffer.bytes"},
	{"a cluster default Kafka stores for ELR", "min.insync.replicas"},
	{"no default in Kafka, one in Tributary, whose single node starts without a file", "node.id process.roles"},
	{"Tributary only: Kafka reads it from meta.properties", "cluster.id"},
	{"Tributary only: the in-process schema registry and its client properties",
		"schema.registry.listeners schema.registry.authentication.method schema.registry.kafkastore.sasl.jaas.config schema.registry.kafkastore.sasl.mechanism schema.registry.kafkastore.security.protocol schema.registry.kafkastore.ssl.truststore.location"},
	{"Tributary only: its HDFS remote storage manager's settings, under Kafka's rsm.config. prefix", "rsm.config.fetch.chunk.cache.size rsm.config.fetch.chunk.timeout.ms rsm.config.storage.cleanup.grace.ms rsm.config.storage.hdfs.io.timeout.ms rsm.config.storage.hdfs.user rsm.config.storage.uri"},
	{"Tributary only: the tier's own bounds, which Kafka does not have", "tributary.tier.delete.records.timeout.ms tributary.tier.pass.timeout.ms"},
	{"Kafka's StandardAuthorizer reads them from the broker's file, but Kafka does not list them", "allow.everyone.if.no.acl.found super.users"},
	{"Kafka's defaults are GSSAPI and JKS, which Tributary does not offer (docs/security.md)",
		"sasl.enabled.mechanisms ssl.keystore.type ssl.truststore.type"},
}

func brokerAllDiffer() string {
	var parts []string
	for _, d := range brokerAllDiffers {
		parts = append(parts, strings.ReplaceAll(d.names, " ", ", ")+" ("+d.why+")")
	}
	return strings.Join(parts, "; ")
}

// brokerKeysBothKnow keeps the lines of kafka-configs --describe --all on
// a broker that name a property Tributary knows, but brokerAllDiffers.
func brokerKeysBothKnow(s string) string {
	skip := map[string]bool{}
	for _, d := range brokerAllDiffers {
		for _, n := range strings.Fields(d.names) {
			skip[n] = true
		}
	}
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		name, _, isConfig := strings.Cut(strings.TrimSpace(l), "=")
		if _, known := config.BrokerDefs[name]; isConfig && (!known || skip[name]) {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

func dropELRMinISR(s string) string {
	s = strings.ReplaceAll(s, "min.insync.replicas=1,", "")
	s = strings.ReplaceAll(s, "Configs: min.insync.replicas=1", "Configs: ")
	return regexp.MustCompile(`(?m)^  min\.insync\.replicas=1 sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:min\.insync\.replicas=1, DEFAULT_CONFIG:min\.insync\.replicas=1\}\n`).ReplaceAllString(s, "")
}

// quorumNorm hides the metadata log's offsets, which differ between any
// two clusters (their metadata logs hold different records).
func quorumNorm(s string) string {
	s = regexp.MustCompile(`(HighWatermark|MaxFollowerLag|MaxFollowerLagTimeMs): +\d+`).ReplaceAllString(s, "$1: N")
	return regexp.MustCompile(`(?m)^(\d+ +\t\S+\t)\d+ *\t`).ReplaceAllString(s, "${1}N\t")
}

func diffSingleNode(t *testing.T, d *differ) {
	bs := []string{"--bootstrap-server", "{bs}"}
	with := func(tool, class string, args ...string) diffStep {
		return diffStep{tool: tool, class: class, args: append(append([]string{}, bs...), args...)}
	}
	topics := func(args ...string) diffStep { return with("TopicCommand", topicCommandClass, args...) }
	elr := func(s diffStep) diffStep { s.norm, s.known = dropELRMinISR, elrMinISR; return s }
	d.step(t, topics("--create", "--topic", "diff", "--partitions", "3", "--replication-factor", "1", "--config", "retention.ms=3600000"))
	d.step(t, topics("--create", "--topic", "diff", "--partitions", "3", "--replication-factor", "1"))
	d.step(t, topics("--create", "--topic", "data", "--partitions", "3"))
	d.step(t, topics("--create", "--topic", "vp", "--partitions", "1"))
	d.step(t, topics("--create", "--topic", "perf", "--partitions", "1"))
	// Kafka answers CreateTopics once its controller has the topic, and
	// its broker's metadata (which --list reads) follows a moment later.
	topicList := topics("--list")
	topicList.do = func(t *testing.T, side diffSide) { diffTopicsVisible(t, side.addrs, "data", "diff", "perf", "vp") }
	d.step(t, topicList)
	d.step(t, elr(topics("--describe", "--topic", "diff")))
	d.step(t, topics("--alter", "--topic", "diff", "--partitions", "4"))
	d.step(t, elr(topics("--describe", "--topic", "diff")))
	d.step(t, diffStep{tool: "TopicCommand", class: topicCommandClass, args: append(append([]string{}, bs...), "--describe", "--topics-with-overrides"),
		differs: elrMinISR + " (so every topic has an override)"})
	d.step(t, topics("--describe", "--under-replicated-partitions"))
	d.step(t, topics("--describe", "--unavailable-partitions"))
	d.step(t, topics("--describe", "--topic", "nothing"))

	configs := func(args ...string) diffStep {
		return with("ConfigCommand", "org.apache.kafka.tools.ConfigCommand", args...)
	}
	d.step(t, elr(configs("--describe", "--entity-type", "topics", "--entity-name", "diff")))
	d.step(t, configs("--alter", "--entity-type", "topics", "--entity-name", "diff", "--add-config", "cleanup.policy=[compact,delete],max.message.bytes=200000"))
	d.step(t, elr(configs("--describe", "--entity-type", "topics", "--entity-name", "diff")))
	d.step(t, configs("--alter", "--entity-type", "topics", "--entity-name", "diff", "--delete-config", "max.message.bytes"))
	byTopic := configs("--describe", "--entity-type", "topics")
	byTopic.norm, byTopic.known = func(s string) string { return sortBlocks(dropELRMinISR(s), "Dynamic configs for topic ") }, elrMinISR
	d.step(t, byTopic)
	all := configs("--describe", "--all", "--entity-type", "topics", "--entity-name", "diff")
	all.norm = func(s string) string {
		s = strings.ReplaceAll(s, "DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1, ", "")
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			name, _, _ := strings.Cut(strings.TrimSpace(l), "=")
			if !tribLacksTopicConfig[name] {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	all.known = "Tributary does not know Kafka 4.4's topic configs for compression levels, tiered storage, errors.deadletterqueue.group.enable and max.decompressed.message.bytes; " + elrMinISR
	d.step(t, all)
	d.step(t, configs("--alter", "--entity-type", "topics", "--entity-name", "nothing", "--add-config", "retention.ms=1"))
	d.step(t, configs("--describe", "--entity-type", "brokers", "--entity-name", "1"))
	defaults := configs("--describe", "--entity-type", "brokers", "--entity-default")
	defaults.norm, defaults.known = dropELRDefault, elrDefault
	d.step(t, defaults)
	d.step(t, configs("--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config", "log.cleaner.threads=2"))
	d.step(t, configs("--alter", "--entity-type", "brokers", "--entity-default", "--add-config", "log.retention.ms=86400000"))
	d.step(t, configs("--describe", "--entity-type", "brokers", "--entity-name", "1"))
	d.step(t, defaults)
	brokerAll := configs("--describe", "--all", "--entity-type", "brokers", "--entity-name", "1")
	brokerAll.norm, brokerAll.known = brokerKeysBothKnow, "only the keys both know are compared (Kafka 4.4 has some 270 more); these differ by design: "+brokerAllDiffer()
	d.step(t, brokerAll)
	d.step(t, configs("--alter", "--entity-type", "brokers", "--entity-default", "--delete-config", "log.retention.ms"))
	d.step(t, configs("--alter", "--entity-type", "brokers", "--entity-name", "1", "--delete-config", "log.cleaner.threads"))
	d.step(t, defaults)
	diffClientQuotas(t, d, configs)

	// Ten records in each partition of data, the same on both sides.
	offsets := func(args ...string) diffStep {
		return with("GetOffsetShell", getOffsetShellClass, args...)
	}
	first := offsets("--topic", "data", "--time", "-1")
	first.do = func(t *testing.T, side diffSide) { diffProduce(t, side.addrs, "data", 3, 10) }
	d.step(t, first)
	d.step(t, offsets("--topic", "data", "--time", "-2"))
	d.step(t, offsets("--topic", "data", "--time", "-3"))
	d.step(t, offsets("--topic", "data", "--time", "{epoch+12s}"))
	d.step(t, offsets("--topic-partitions", "data:0,data:2", "--time", "latest"))
	d.step(t, offsets("--topic", "d.*", "--time", "earliest"))

	groups := func(args ...string) diffStep {
		return with("ConsumerGroupCommand", consumerGroupCommandClass, args...)
	}
	list := groups("--list")
	list.do = func(t *testing.T, side diffSide) {
		diffCommit(t, side.addrs, "lagging", "data", map[int32]int64{0: 3, 1: 5, 2: 10})
	}
	d.step(t, list)
	d.step(t, groups("--describe", "--group", "lagging"))
	d.step(t, groups("--describe", "--group", "lagging", "--state"))
	d.step(t, groups("--describe", "--group", "lagging", "--members"))
	d.step(t, groups("--describe", "--group", "lagging", "--offsets", "--verbose"))
	d.step(t, groups("--describe", "--all-groups"))
	d.step(t, groups("--describe", "--group", "nothing"))
	d.step(t, groups("--reset-offsets", "--group", "lagging", "--topic", "data", "--to-earliest"))
	d.step(t, groups("--reset-offsets", "--group", "lagging", "--topic", "data", "--to-earliest", "--execute"))
	d.step(t, groups("--reset-offsets", "--group", "lagging", "--topic", "data", "--to-offset", "4", "--execute"))
	d.step(t, groups("--reset-offsets", "--group", "lagging", "--topic", "data:1,2", "--shift-by", "-3", "--execute"))
	d.step(t, groups("--reset-offsets", "--group", "lagging", "--topic", "data", "--to-datetime", "{datetime+13s}", "--execute"))
	d.step(t, groups("--reset-offsets", "--group", "lagging", "--topic", "data:0", "--to-latest", "--execute"))
	d.step(t, groups("--reset-offsets", "--group", "lagging", "--all-topics", "--by-duration", "PT1H", "--dry-run"))
	d.step(t, groups("--delete-offsets", "--group", "lagging", "--topic", "data:2"))
	d.step(t, groups("--describe", "--group", "lagging"))
	d.step(t, groups("--delete", "--group", "lagging"))
	d.step(t, groups("--delete", "--group", "nothing"))
	d.step(t, groups("--list"))

	streams := with("StreamsResetter", "org.apache.kafka.tools.StreamsResetter", "--application-id", "app", "--input-topics", "data")
	streams.do = func(t *testing.T, side diffSide) {
		diffCommit(t, side.addrs, "app", "data", map[int32]int64{0: 7, 1: 7, 2: 7})
	}
	d.step(t, streams)
	d.step(t, groups("--describe", "--group", "app"))

	d.step(t, diffStep{tool: "DeleteRecordsCommand", class: "org.apache.kafka.tools.DeleteRecordsCommand",
		args:  append(append([]string{}, bs...), "--offset-json-file", "{dir}/delete.json"),
		files: map[string]string{"delete.json": `{"partitions":[{"topic":"data","partition":0,"offset":4}],"version":1}`}})
	d.step(t, offsets("--topic", "data", "--time", "-2"))

	d.step(t, with("LogDirsCommand", "org.apache.kafka.tools.LogDirsCommand", "--describe", "--topic-list", "data"))
	d.step(t, diffStep{tool: "DumpLogSegments", class: "org.apache.kafka.tools.DumpLogSegments",
		args: []string{"--deep-iteration", "--print-data-log", "--files", "{logdir}/data-1/00000000000000000000.log"}})
	d.logDumpSame(t, "{logdir}/data-1/00000000000000000000.log")
	d.step(t, diffStep{tool: "DumpLogSegments", class: "org.apache.kafka.tools.DumpLogSegments",
		args:    []string{"--files", "{logdir}/data-1/00000000000000000000.index,{logdir}/data-1/00000000000000000000.timeindex"},
		differs: "Kafka preallocates an active segment's index files (zeros, which the tool reads as an entry at offset 0); Tributary's hold only the entries written"})

	d.step(t, with("LeaderElectionCommand", "org.apache.kafka.tools.LeaderElectionCommand", "--election-type", "preferred", "--all-topic-partitions"))
	d.step(t, with("LeaderElectionCommand", "org.apache.kafka.tools.LeaderElectionCommand", "--election-type", "unclean", "--topic", "data", "--partition", "1"))
	quorum := with("MetadataQuorumCommand", "org.apache.kafka.tools.MetadataQuorumCommand", "describe", "--status")
	quorum.norm = quorumNorm
	quorum.differs = "Tributary answers DescribeQuorum up to v1, without the voters' endpoints (v2, KIP-853)"
	d.step(t, quorum)
	repl := with("MetadataQuorumCommand", "org.apache.kafka.tools.MetadataQuorumCommand", "describe", "--replication")
	repl.norm = quorumNorm
	repl.differs = "Tributary reports no fetch times for the quorum leader itself (-1)"
	d.step(t, repl)
	d.step(t, diffStep{tool: "FeatureCommand", class: "org.apache.kafka.tools.FeatureCommand", args: append(append([]string{}, bs...), "describe"),
		differs: "Tributary serves and finalizes transaction.version (at 2) and group.version (at 1), as Kafka 4.4 does; Kafka also lists metadata.version, kraft.version and its other features"})
	// ClusterTool in the JVM of Kafka's in-process broker makes its
	// metadata loader fail fatally: it runs in the JVM without brokers.
	for _, cmd := range []string{"cluster-id", "list-endpoints"} {
		s := with("ClusterTool", "org.apache.kafka.tools.ClusterTool", cmd)
		s.args = append([]string{cmd}, bs...)
		s.plain = true
		d.step(t, s)
	}

	vp := with("VerifiableProducer", "org.apache.kafka.tools.VerifiableProducer", "--topic", "vp", "--max-messages", "20")
	vp.exits = true
	vp.norm = func(s string) string {
		return regexp.MustCompile(`"avg_throughput":[0-9.E-]+`).ReplaceAllString(s, `"avg_throughput":N`)
	}
	vp.known = measured
	d.step(t, vp)
	vc := with("VerifiableConsumer", "org.apache.kafka.tools.VerifiableConsumer", "--topic", "vp", "--group-id", "vc", "--max-messages", "20", "--reset-policy", "earliest")
	vc.exits = true
	d.step(t, vc)
	perf := diffStep{tool: "ProducerPerformance", class: "org.apache.kafka.tools.ProducerPerformance",
		args: []string{"--topic", "perf", "--num-records", "500", "--record-size", "100", "--throughput", "-1", "--producer-props", "bootstrap.servers={bs}", "acks=all"},
		norm: numbers, known: measured}
	d.step(t, perf)
	cperf := with("ConsumerPerformance", "org.apache.kafka.tools.ConsumerPerformance", "--topic", "perf", "--num-records", "500")
	cperf.norm, cperf.known = numbers, measured
	d.step(t, cperf)
	e2e := with("EndToEndLatency", "org.apache.kafka.tools.EndToEndLatency", "--topic", "perf", "--num-records", "50", "--producer-acks", "all", "--record-size", "100")
	e2e.norm, e2e.known = numbers, measured
	d.step(t, e2e)
}

// diffThreeNodes runs the cluster tools: a topic placed by hand, moved by
// a reassignment, its preferred leaders elected again.
func diffThreeNodes(t *testing.T, d *differ) {
	bs := []string{"--bootstrap-server", "{bs}"}
	with := func(tool, class string, args ...string) diffStep {
		return diffStep{tool: tool, class: class, args: append(append([]string{}, bs...), args...)}
	}
	topics := func(args ...string) diffStep { return with("TopicCommand", topicCommandClass, args...) }
	elr := func(s diffStep) diffStep { s.norm, s.known = dropELRMinISR, elrMinISR; return s }
	reassign := func(args ...string) diffStep {
		return with("ReassignPartitionsCommand", "org.apache.kafka.tools.reassign.ReassignPartitionsCommand", args...)
	}
	elect := func(args ...string) diffStep {
		return with("LeaderElectionCommand", "org.apache.kafka.tools.LeaderElectionCommand", args...)
	}
	d.step(t, topics("--create", "--topic", "moved", "--replica-assignment", "1:2,2:3,3:1"))
	desc := elr(topics("--describe", "--topic", "moved"))
	desc.do = func(t *testing.T, side diffSide) { diffProduce(t, side.addrs, "moved", 3, 10) }
	d.step(t, desc)
	gen := reassign("--generate", "--topics-to-move-json-file", "{dir}/move.json", "--broker-list", "1,2,3")
	gen.files = map[string]string{"move.json": `{"topics":[{"topic":"moved"}],"version":1}`}
	gen.norm = func(s string) string {
		before, _, _ := strings.Cut(s, "Proposed partition reassignment configuration")
		return before
	}
	gen.known = "the proposed assignment starts at a random broker, in Kafka as in Tributary: only the current one is compared"
	d.step(t, gen)
	plan := `{"version":1,"partitions":[{"topic":"moved","partition":0,"replicas":[2,3],"log_dirs":["any","any"]},` +
		`{"topic":"moved","partition":1,"replicas":[3,1]},{"topic":"moved","partition":2,"replicas":[1,2]}]}`
	exec := reassign("--execute", "--reassignment-json-file", "{dir}/plan.json")
	exec.files = map[string]string{"plan.json": plan}
	d.step(t, exec)
	verify := reassign("--verify", "--reassignment-json-file", "{dir}/plan.json")
	verify.do = func(t *testing.T, side diffSide) {
		diffReassigned(t, side.addrs, "moved", map[int32][]int32{0: {2, 3}, 1: {3, 1}, 2: {1, 2}})
	}
	d.step(t, verify)
	d.step(t, reassign("--list"))
	d.step(t, reassign("--cancel", "--reassignment-json-file", "{dir}/plan.json"))
	d.step(t, elr(topics("--describe", "--topic", "moved")))
	d.step(t, elect("--election-type", "preferred", "--topic", "moved", "--partition", "0"))
	d.step(t, elect("--election-type", "preferred", "--all-topic-partitions"))
	d.step(t, elect("--election-type", "unclean", "--topic", "moved", "--partition", "1"))
	d.step(t, elr(topics("--describe", "--topic", "moved")))
	d.step(t, with("GetOffsetShell", getOffsetShellClass, "--topic", "moved", "--time", "-1"))
	d.step(t, with("LogDirsCommand", "org.apache.kafka.tools.LogDirsCommand", "--describe", "--broker-list", "1,2,3", "--topic-list", "moved"))

	// A throttled move: the tool sets the throttles before it moves.
	d.step(t, topics("--create", "--topic", "throttled", "--replica-assignment", "1"))
	throttled := reassign("--execute", "--reassignment-json-file", "{dir}/throttled.json", "--throttle", "1000000")
	throttled.files = map[string]string{"throttled.json": `{"version":1,"partitions":[{"topic":"throttled","partition":0,"replicas":[2]}]}`}
	// The tool prints the current replica's log dir, or "any" while the
	// broker has not created the replica yet (a loaded Kafka takes
	// seconds): both sides start from a replica that exists.
	throttled.do = func(t *testing.T, side diffSide) { diffReplicaInLogDir(t, side.addrs[0], "throttled", 0) }
	d.step(t, throttled)
	// The runbook's next lines: the throttles are there, --verify reports
	// the move complete and removes them.
	configs := func(args ...string) diffStep {
		return with("ConfigCommand", "org.apache.kafka.tools.ConfigCommand", args...)
	}
	// Each describe first waits until the broker it asks has applied the
	// tool's change (a loaded Kafka broker applies its metadata late).
	throttles := func(set bool) {
		for i, id := range []string{"1", "2"} {
			s := configs("--describe", "--entity-type", "brokers", "--entity-name", id)
			s.do = func(t *testing.T, side diffSide) {
				diffBrokerConfig(t, side.addrs[i], int32(i+1), "leader.replication.throttled.rate", set)
			}
			d.step(t, s)
		}
		d.step(t, elr(configs("--describe", "--entity-type", "topics", "--entity-name", "throttled")))
	}
	throttles(true)
	verify = reassign("--verify", "--reassignment-json-file", "{dir}/throttled.json")
	verify.do = func(t *testing.T, side diffSide) {
		diffReassigned(t, side.addrs, "throttled", map[int32][]int32{0: {2}})
	}
	d.step(t, verify)
	throttles(false)
	// A quota set through any node (forwarded to the active controller)
	// is in every node's metadata when the tool's describe reads one.
	d.step(t, configs("--alter", "--entity-type", "users", "--entity-name", "carol", "--add-config", "producer_byte_rate=1024"))
	d.step(t, configs("--describe", "--entity-type", "users", "--entity-name", "carol"))
	d.step(t, configs("--alter", "--entity-type", "users", "--entity-name", "carol", "--delete-config", "producer_byte_rate"))
	d.step(t, configs("--describe", "--entity-type", "users"))
}

// diffClientQuotas: kafka-configs.sh's client quotas (KIP-546), users,
// client ids, both, defaults and IPs, with the broker's refusals. Every
// quota is removed at the end, so no later step is throttled.
func diffClientQuotas(t *testing.T, d *differ, configs func(args ...string) diffStep) {
	byEntity := func(s diffStep) diffStep {
		s.norm = func(out string) string { return sortBlocks(out, "Quota configs for ") }
		return s
	}
	d.step(t, configs("--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152"))
	d.step(t, configs("--alter", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app", "--add-config", "request_percentage=50"))
	d.step(t, configs("--alter", "--entity-type", "clients", "--entity-default", "--add-config", "producer_byte_rate=104857600"))
	d.step(t, configs("--alter", "--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-default", "--add-config", "controller_mutation_rate=1000"))
	d.step(t, configs("--alter", "--entity-type", "ips", "--entity-name", "10.1.2.3", "--add-config", "connection_creation_rate=20"))
	d.step(t, configs("--describe", "--entity-type", "users", "--entity-name", "alice"))
	d.step(t, configs("--describe", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app"))
	d.step(t, byEntity(configs("--describe", "--entity-type", "users")))
	d.step(t, byEntity(configs("--describe", "--entity-type", "clients")))
	d.step(t, configs("--describe", "--entity-type", "clients", "--entity-default"))
	d.step(t, byEntity(configs("--describe", "--entity-type", "ips")))
	d.step(t, configs("--alter", "--entity-type", "users", "--entity-name", "bob", "--add-config", "producer_byte_rate=-5"))
	d.step(t, configs("--alter", "--entity-type", "users", "--entity-name", "bob", "--add-config", "producer_byte_rate=1.5"))
	d.step(t, configs("--alter", "--entity-type", "users", "--entity-name", "bob", "--add-config", "bogus_rate=5"))
	d.step(t, configs("--alter", "--entity-type", "ips", "--entity-name", "10.1.2.3", "--add-config", "producer_byte_rate=5"))
	d.step(t, configs("--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "producer_byte_rate,consumer_byte_rate"))
	d.step(t, configs("--alter", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app", "--delete-config", "request_percentage"))
	d.step(t, configs("--alter", "--entity-type", "clients", "--entity-default", "--delete-config", "producer_byte_rate"))
	d.step(t, configs("--alter", "--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-default", "--delete-config", "controller_mutation_rate"))
	d.step(t, configs("--alter", "--entity-type", "ips", "--entity-name", "10.1.2.3", "--delete-config", "connection_creation_rate"))
	d.step(t, byEntity(configs("--describe", "--entity-type", "users")))
}

// logDumpSame runs Kafka's DumpLogSegments and "tributary log dump", with
// the same (Kafka's) flags, on the same segment of Tributary's, and wants
// the same output: a kafka-dump-log.sh line of a runbook works unchanged.
func (d *differ) logDumpSame(t *testing.T, file string) {
	t.Helper()
	args := d.expand(d.trib, []string{"--deep-iteration", "--print-data-log", "--files", file})
	kafka, err := d.jvm.run(diffToolTimeout, "org.apache.kafka.tools.DumpLogSegments", args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(testbroker.Binary(t), append([]string{"log", "dump"}, args...)...).Output()
	if err != nil || kafka.code != 0 || string(out) != kafka.stdout {
		t.Errorf("tributary log dump %s (%v) and DumpLogSegments (status %d) print differently:\n%s\nKafka's:\n%s", strings.Join(args, " "), err, kafka.code, out, kafka.stdout)
	}
	d.mu.Lock()
	d.rows = append(d.rows, diffRow{"tributary log dump", "--deep-iteration --print-data-log --files " + file, "same as DumpLogSegments on the same file", 1})
	d.mu.Unlock()
}

// diffTopicsVisible waits until every broker's metadata lists topics.
func diffTopicsVisible(t *testing.T, addrs []string, topics ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, addr := range addrs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			m, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.SeedBrokers()[0])
			cancel()
			listed := map[string]bool{}
			if err == nil {
				for _, mt := range m.Topics {
					if mt.Topic != nil {
						listed[*mt.Topic] = mt.ErrorCode == 0
					}
				}
			}
			all := true
			for _, want := range topics {
				all = all && listed[want]
			}
			if all {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not list all of %v after 30s (%v)", addr, topics, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// diffReassigned waits until no reassignment is in progress and every
// broker's metadata shows topic's partitions on the replicas of want: the
// tool may ask any of them (Kafka's brokers learn the end of a move a
// moment after the controller lists none).
// diffBrokerConfig waits until the broker at addr (node id) reports the
// dynamic config name set, or not.
func diffBrokerConfig(t *testing.T, addr string, id int32, name string, set bool) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeBroker, fmt.Sprint(id), []string{name}
		req.Resources = append(req.Resources, rr)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := req.RequestWith(ctx, cl)
		cancel()
		if err == nil && len(r.Resources) == 1 && r.Resources[0].ErrorCode == 0 {
			found := slices.ContainsFunc(r.Resources[0].Configs, func(c kmsg.DescribeConfigsResponseResourceConfig) bool {
				return c.Name == name && c.Source == kmsg.ConfigSourceDynamicBrokerConfig
			})
			if found == set {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: broker %d config %s set=%v not seen after 60 s (%v)", addr, id, name, set, err)
		}
	}
}

// diffReplicaInLogDir waits until the broker at addr reports the
// partition in one of its log dirs.
func diffReplicaInLogDir(t *testing.T, addr, topic string, partition int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := kmsg.NewPtrDescribeLogDirsRequest().RequestWith(ctx, cl)
		cancel()
		if err == nil {
			for _, d := range r.Dirs {
				for _, tp := range d.Topics {
					if tp.Topic == topic && slices.ContainsFunc(tp.Partitions, func(p kmsg.DescribeLogDirsResponseDirTopicPartition) bool { return p.Partition == partition }) {
						return
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s-%d in no log dir after 60 s (%v)", addr, topic, partition, err)
		}
	}
}

func diffReassigned(t *testing.T, addrs []string, topic string, want map[int32][]int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	placed := func(ctx context.Context) bool {
		for _, b := range cl.DiscoveredBrokers() {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			m, err := req.RequestWith(ctx, b)
			if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != len(want) {
				return false
			}
			for _, p := range m.Topics[0].Partitions {
				if fmt.Sprint(p.Replicas) != fmt.Sprint(want[p.Partition]) {
					return false
				}
			}
		}
		return len(cl.DiscoveredBrokers()) == len(addrs)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctx, cl)
		done := err == nil && r.ErrorCode == 0 && len(r.Topics) == 0 && placed(ctx)
		cancel()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("reassignment at %v not done after 60s: %v %v", addrs, r, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeCompatTable writes the tools table into docs/compat.md
// (TRIBUTARY_UPDATE_COMPAT=1) or checks it is there as written.
func writeCompatTable(t *testing.T, rows []diffRow) {
	t.Helper()
	if t.Failed() {
		return
	}
	var b strings.Builder
	b.WriteString("| tool | invocation | nodes | result |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | `%s` | %d | %s |\n", r.tool, strings.ReplaceAll(r.invocation, "|", `\|`), r.nodes, r.result)
	}
	table := b.String()
	const begin, end = "<!-- tools-diff:begin (TestKafkaToolsDiff, TRIBUTARY_UPDATE_COMPAT=1) -->\n", "<!-- tools-diff:end -->\n"
	path := filepath.Join(testbroker.RepoRoot(), "docs", "compat.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if os.Getenv("TRIBUTARY_UPDATE_COMPAT") != "" {
		if i < 0 || j < i {
			t.Fatalf("%s has no %q ... %q section to write the table into", path, begin, end)
		}
		doc = doc[:i+len(begin)] + table + doc[j:]
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if i < 0 || j < i || doc[i+len(begin):j] != table {
		t.Errorf("docs/compat.md's tools table is not what this run found; rerun with TRIBUTARY_UPDATE_COMPAT=1 and commit it. The table:\n%s", table)
	}
}
