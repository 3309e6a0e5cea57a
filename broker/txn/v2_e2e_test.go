package txn_test

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// finalizedTV is the transaction.version a broker's ApiVersions finalizes
// (0 when absent), with the max versions of Produce and EndTxn.
func finalizedTV(t *testing.T, addr string) (tv, produce, endTxn int16) {
	t.Helper()
	cl, err := kgo.NewClient(seeds(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp := request[*kmsg.ApiVersionsResponse](t, cl, kmsg.NewPtrApiVersionsRequest())
	supported := false
	for _, f := range resp.SupportedFeatures {
		if f.Name == "transaction.version" && f.MinVersion == 0 && f.MaxVersion == 2 {
			supported = true
		}
	}
	if !supported {
		t.Errorf("ApiVersions does not list transaction.version 0-2 as supported: %+v", resp.SupportedFeatures)
	}
	if resp.FinalizedFeaturesEpoch < 0 {
		t.Errorf("finalized features epoch %d", resp.FinalizedFeaturesEpoch)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			tv = f.MaxVersionLevel
		}
	}
	for _, k := range resp.ApiKeys {
		switch k.ApiKey {
		case kmsg.Produce.Int16():
			produce = k.MaxVersion
		case kmsg.EndTxn.Int16():
			endTxn = k.MaxVersion
		}
	}
	return tv, produce, endTxn
}

func updateTV(t *testing.T, cl *kgo.Client, level int16, upgradeType int8) int16 {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis = 10000
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "transaction.version", level, upgradeType
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	resp := request[*kmsg.UpdateFeaturesResponse](t, cl, req)
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	if len(resp.Results) == 1 {
		return resp.Results[0].ErrorCode
	}
	return 0
}

func endTxnV5(t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	resp := request[*kmsg.EndTxnResponse](t, cl, req)
	if resp.Version < 5 {
		t.Fatalf("EndTxn v%d sent, want v5", resp.Version)
	}
	return resp
}

// produceV12 is a transactional Produce at v12 (transactions v2).
func produceV12(t *testing.T, cl *kgo.Client, id, topic string, partition int32, batch []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.ProduceResponse](t, cl, req)
	if resp.Version < 12 {
		t.Fatalf("Produce v%d sent, want v12", resp.Version)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// v2Step is one step of the v2 protocol scenario: what it did, the error
// code it got, and the epoch it answered relative to the first.
type v2Step struct {
	what  string
	code  int16
	epoch int16
}

// v2Scenario runs transactions v2 on the wire against a broker at addr
// whose topic has 2 partitions, and returns each step's answer: a Produce
// v12 adds its partition (no AddPartitionsToTxn); EndTxn v5 bumps the
// epoch and returns it, and its retry gets the same answer; the late
// produce of a committed transaction, to its partition and to another;
// an abort, the abort of an empty transaction, the commit of one, and an
// EndTxn of a fenced epoch; then read_committed reads exactly the
// committed records.
func v2Scenario(t *testing.T, addr, topic string) []v2Step {
	// Produce v12 exactly: v13 (Kafka 4.1+) names topics by id.
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.Produce.Int16(), 12)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(v))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	id := topic + "-tx"
	pid, e0, code := initPID(t, cl, id, 10000)
	if code != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(code))
	}
	var steps []v2Step
	step := func(what string, code int16, epoch int16) {
		if epoch >= 0 {
			epoch -= e0
		}
		steps = append(steps, v2Step{what, code, epoch})
	}
	// A topic just created may not have its leader everywhere yet.
	produce := func(partition int32, batch []byte) int16 {
		got := produceV12(t, cl, id, topic, partition, batch)
		for i := 0; i < 100 && (got == kerr.NotLeaderForPartition.Code || got == kerr.UnknownTopicOrPartition.Code); i++ {
			cl.ForceMetadataRefresh()
			time.Sleep(100 * time.Millisecond)
			got = produceV12(t, cl, id, topic, partition, batch)
		}
		return got
	}
	// Kafka answers EndTxn before its markers are written and answers
	// CONCURRENT_TRANSACTIONS until they are, which clients retry: so
	// does the scenario, and it waits for a Prepare state to complete
	// before it describes.
	settled := func() kmsg.DescribeTransactionsResponseTransactionState {
		st := describeTxn(t, cl, id)
		for deadline := time.Now().Add(30 * time.Second); strings.HasPrefix(st.State, "Prepare") && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
			st = describeTxn(t, cl, id)
		}
		return st
	}
	end := func(what string, epoch int16, commit bool) {
		r := endTxnV5(t, cl, id, pid, epoch, commit)
		for deadline := time.Now().Add(30 * time.Second); r.ErrorCode == kerr.ConcurrentTransactions.Code && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
			r = endTxnV5(t, cl, id, pid, epoch, commit)
		}
		if r.ErrorCode == 0 && r.ProducerID != pid {
			t.Errorf("%s: producer id %d, want %d", what, r.ProducerID, pid)
		}
		step(what, r.ErrorCode, r.ProducerEpoch)
	}
	step("Produce v12 without AddPartitionsToTxn", produce(0, txnBatch(t, pid, e0, 0, "c1", "c2")), -1)
	st := describeTxn(t, cl, id)
	step("describe: "+st.State, 0, -1)
	end("EndTxn v5 commit", e0, true)
	end("EndTxn v5 commit retried", e0, true)
	end("EndTxn v5 abort at the epoch before the bump", e0, false)
	st = settled()
	step("describe: "+st.State, 0, st.ProducerEpoch)
	step("late produce to the transaction's partition", produce(0, txnBatch(t, pid, e0, 2, "late")), -1)
	step("late produce to another partition", produce(1, txnBatch(t, pid, e0, 0, "late")), -1)
	step("Produce v12 at the bumped epoch", produce(1, txnBatch(t, pid, e0+1, 0, "a1")), -1)
	end("EndTxn v5 abort", e0+1, false)
	end("EndTxn v5 abort of an empty transaction", e0+2, false)
	end("EndTxn v5 commit of an empty transaction", e0+3, true)
	end("EndTxn v5 of a fenced epoch", e0, true)
	var read []string
	for range 5 {
		if read = consumeAll(t, addr, topic, true, 2); len(read) >= 2 {
			break
		}
	}
	sameSet(t, addr+": read_committed", read, []string{"c1", "c2"})
	return steps
}

// v2Want is what Kafka 4.4 answers in v2Scenario (checked against it by
// TestTransactionsV2Java, which starts Kafka once for both comparisons).
var v2Want = []v2Step{
	{"Produce v12 without AddPartitionsToTxn", 0, -1},
	{"describe: Ongoing", 0, -1},
	{"EndTxn v5 commit", 0, 1},
	{"EndTxn v5 commit retried", 0, 1},
	{"EndTxn v5 abort at the epoch before the bump", kerr.InvalidTxnState.Code, -1},
	{"describe: CompleteCommit", 0, 1},
	{"late produce to the transaction's partition", kerr.InvalidProducerEpoch.Code, -1},
	{"late produce to another partition", kerr.InvalidProducerEpoch.Code, -1},
	{"Produce v12 at the bumped epoch", 0, -1},
	{"EndTxn v5 abort", 0, 2},
	{"EndTxn v5 abort of an empty transaction", 0, 3},
	{"EndTxn v5 commit of an empty transaction", kerr.InvalidTxnState.Code, -1},
	{"EndTxn v5 of a fenced epoch", kerr.ProducerFenced.Code, -1},
}

func compareSteps(t *testing.T, who string, got, want []v2Step) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		var g, w v2Step
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("%s step %d: got %q %v epoch %+d, want %q %v epoch %+d", who, i, g.what, kerr.ErrorForCode(g.code), g.epoch, w.what, kerr.ErrorForCode(w.code), w.epoch)
		}
	}
}

// TestTransactionsV2Protocol: transactions v2 (KIP-890 part 2) on the
// wire: Tributary gives v2Want (which TestTransactionsV2Java checks Kafka
// 4.4 gives too). transaction.version is finalized at 2 by default, and
// UpdateFeatures downgrades and upgrades it with Kafka's checks.
func TestTransactionsV2Protocol(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t, txnProps...)
	createTopic(t, b.Addr(), "v2", 2)
	if tv, produce, end := finalizedTV(t, b.Addr()); tv != 2 || produce < 12 || end < 5 {
		t.Fatalf("transaction.version %d finalized, Produce v%d, EndTxn v%d: want 2, 12, 5", tv, produce, end)
	}
	compareSteps(t, "tributary", v2Scenario(t, b.Addr(), "v2"), v2Want)

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The feature: Kafka's checks, and ApiVersions follows the level.
	wantCode(t, "downgrade typed as an upgrade", updateTV(t, cl, 1, 1), kerr.InvalidUpdateVersion)
	wantCode(t, "level beyond the supported range", updateTV(t, cl, 3, 1), kerr.InvalidUpdateVersion)
	wantCode(t, "safe downgrade to 1", updateTV(t, cl, 1, 2), nil)
	if tv, _, _ := finalizedTV(t, b.Addr()); tv != 1 {
		t.Fatalf("after the downgrade transaction.version is %d, want 1", tv)
	}
	wantCode(t, "upgrade to 2", updateTV(t, cl, 2, 1), nil)
	if tv, _, _ := finalizedTV(t, b.Addr()); tv != 2 {
		t.Fatalf("after the upgrade transaction.version is %d, want 2", tv)
	}
}

// TestTransactionsV2Fallback: franz-go turns transactions v2 on when the
// feature is finalized at 2 (its epoch moves at every commit) and stays on
// v1 at level 1 (the epoch stays); both read back exactly what they
// committed, and a v1 produce (v11) on a v2 cluster still needs its
// AddPartitionsToTxn.
func TestTransactionsV2Fallback(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t, txnProps...)
	createTopic(t, b.Addr(), "fb", 2)
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	run := func(id, prefix string) (first, last int16) {
		cl := txnProducer(t, b.Addr(), id)
		for i := range 3 {
			produceTxn(t, cl, "fb", values(prefix+string(rune('0'+i)), 4), true)
			st := describeTxn(t, admin, id)
			if i == 0 {
				first = st.ProducerEpoch
			}
			last = st.ProducerEpoch
		}
		produceTxn(t, cl, "fb", values(prefix+"x", 4), false)
		cl.Close()
		return first, last
	}
	first, last := run("fb-v2", "v2-")
	if last-first != 2 {
		t.Errorf("transaction.version 2: epoch %d after the first commit, %d after the third; want a bump per commit", first, last)
	}
	wantCode(t, "safe downgrade to 1", updateTV(t, admin, 1, 2), nil)
	first, last = run("fb-v1", "v1-")
	if last != first {
		t.Errorf("transaction.version 1: epoch moved from %d to %d across commits; want v1 (no bump)", first, last)
	}
	var want []string
	for _, p := range []string{"v2-", "v1-"} {
		for i := range 3 {
			want = append(want, values(p+string(rune('0'+i)), 4)...)
		}
	}
	sameSet(t, "read_committed", consumeAll(t, b.Addr(), "fb", true, len(want)), want)

	// A v1 produce is only verified, even with the feature at 2.
	wantCode(t, "upgrade to 2", updateTV(t, admin, 2, 1), nil)
	pid, epoch, code := initPID(t, admin, "fb-raw", 10000)
	if code != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(code))
	}
	v1, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), v1Versions())
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	wantCode(t, "Produce v11 without AddPartitionsToTxn", produceRaw(t, v1, "fb-raw", "fb", 0, txnBatch(t, pid, epoch, 0, "x")), kerr.InvalidTxnState)
}

// TestTransactionsV2Java: Kafka's Java producer (4.4) on transactions v2,
// against Tributary and Apache Kafka 4.4 (testdata/TxnV2.java): both show
// transaction.version 2, an epoch bump per commit and abort, the same
// errors for a fenced instance's late send and commit, and read_committed
// reads exactly the three committed transactions and the new instance's.
// Then the wire scenario (v2Scenario) on the same Kafka gives v2Want, as
// Tributary does. Kafka is required when CI=true.
func TestTransactionsV2Java(t *testing.T) {
	t.Parallel()
	k := testbroker.FindJDK(t)
	classes := compileTxnJava(t, k, "TxnV2")
	run := func(addr string) map[string]string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, k.Java, append(k.JVMArgs(k.Classpath(classes)), "TxnV2", addr, "jv2", "java-v2")...).Output()
		if err != nil || !strings.Contains(string(out), "TXN DONE") {
			t.Fatalf("TxnV2 against %s: %v\n%s", addr, err, out)
		}
		lines := map[string]string{}
		for _, l := range strings.Split(string(out), "\n") {
			if k, v, ok := strings.Cut(l, " "); ok && strings.ToUpper(k) == k {
				lines[k] = v
			}
		}
		return lines
	}
	b := testbroker.Start(t, txnProps...)
	createTopic(t, b.Addr(), "jv2", 2)
	ours := run(b.Addr())
	var want []string
	for _, tx := range []string{"t0", "t1", "t3", "b"} {
		for i := range 3 {
			want = append(want, tx+"-"+strconv.Itoa(i))
		}
	}
	slices.Sort(want)
	for k, v := range map[string]string{
		"TV":     "2",
		"EPOCHS": "commit:+1:CompleteCommit commit:+2:CompleteCommit abort:+3:CompleteAbort commit:+4:CompleteCommit",
		"READ":   strings.Join(want, ","),
	} {
		if ours[k] != v {
			t.Errorf("tributary %s %q, want %q", k, ours[k], v)
		}
	}
	if !strings.Contains(ours["ZOMBIE"], "Fenced") && !strings.Contains(ours["ZOMBIE"], "InvalidProducerEpoch") {
		t.Errorf("the zombie was not fenced: %s", ours["ZOMBIE"])
	}

	kafka := testbroker.StartKafka(t)
	createTopic(t, kafka.Addr(), "jv2", 2)
	theirs := run(kafka.Addr())
	// The wire scenario of TestTransactionsV2Protocol, on the same Kafka.
	createTopic(t, kafka.Addr(), "v2", 2)
	if tv, produce, end := finalizedTV(t, kafka.Addr()); tv != 2 || produce < 12 || end < 5 {
		t.Errorf("Kafka: transaction.version %d finalized, Produce v%d, EndTxn v%d", tv, produce, end)
	}
	compareSteps(t, "kafka", v2Scenario(t, kafka.Addr(), "v2"), v2Want)
	// Kafka answers EndTxn once the Prepare state is written and writes
	// the markers after; Tributary answers once they are written
	// (docs/transactions.md), so its state right after is Complete.
	theirs["EPOCHS"] = strings.NewReplacer("PrepareCommit", "CompleteCommit", "PrepareAbort", "CompleteAbort").Replace(theirs["EPOCHS"])
	t.Logf("tributary: %v", ours)
	t.Logf("kafka:     %v", theirs)
	for _, k := range []string{"TV", "EPOCHS", "ZOMBIE", "READ"} {
		if ours[k] != theirs[k] {
			t.Errorf("%s: tributary %q, Kafka %q", k, ours[k], theirs[k])
		}
	}
}
