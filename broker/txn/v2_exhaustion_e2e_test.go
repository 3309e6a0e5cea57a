package txn_test

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestTransactionsV2EpochExhaustion: producers start at epoch 32765 (the
// test hook TRIBUTARY_TEST_TXN_FIRST_EPOCH). A commit at 32766 moves the
// producer to a new id at epoch 0. A timeout at 32766 (the fence would
// bump past 32767) also moves to a new id, and the fenced client's EndTxn
// at 32766 is not taken for a retry: no epoch ever wraps, and the
// transactions committed after either exhaustion end in their partition
// (read_committed reads exactly the committed records, the LSO moves).
func TestTransactionsV2EpochExhaustion(t *testing.T) {
	t.Setenv("TRIBUTARY_TEST_TXN_FIRST_EPOCH", "32765") // no t.Parallel: the broker inherits it
	b := testbroker.Start(t, txnProps...)
	createTopic(t, b.Addr(), "ex", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	commit := func(id string, pid int64, epoch int16, val string) (int64, int16) {
		t.Helper()
		wantCode(t, "Produce v12 of "+val, produceV12(t, cl, id, "ex", 0, txnBatch(t, pid, epoch, 0, val)), nil)
		r := endTxnV5(t, cl, id, pid, epoch, true)
		wantCode(t, "EndTxn v5 commit of "+val, r.ErrorCode, nil)
		return r.ProducerID, r.ProducerEpoch
	}

	// The client's own commit at 32766.
	pid, epoch, code := initPID(t, cl, "ex-a", 60000)
	if code != 0 || epoch != math.MaxInt16-2 {
		t.Fatalf("InitProducerId: epoch %d, %v; want 32765 (is the test hook compiled in?)", epoch, kerr.ErrorForCode(code))
	}
	p1, e1 := commit("ex-a", pid, epoch, "a1")
	p2, e2 := commit("ex-a", p1, e1, "a2")
	if p1 != pid || e1 != math.MaxInt16-1 || p2 == pid || e2 != 0 {
		t.Errorf("commits at 32765 and 32766: (%d, %d) then (%d, %d); want (%d, 32766) then a new id at 0", p1, e1, p2, e2, pid)
	}
	commit("ex-a", p2, e2, "a3")

	// A timeout at 32766.
	pid, epoch, code = initPID(t, cl, "ex-b", 1000)
	if code != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(code))
	}
	pid, epoch = commit("ex-b", pid, epoch, "b1")
	wantCode(t, "Produce v12 of the transaction left to time out", produceV12(t, cl, "ex-b", "ex", 0, txnBatch(t, pid, epoch, 0, "b-timed-out")), nil)
	deadline := time.Now().Add(60 * time.Second)
	for describeTxn(t, cl, "ex-b").State != "CompleteAbort" {
		if time.Now().After(deadline) {
			t.Fatalf("the transaction at epoch %d did not time out: %+v", epoch, describeTxn(t, cl, "ex-b"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st := describeTxn(t, cl, "ex-b"); st.ProducerID == pid || st.ProducerEpoch < 0 || st.ProducerEpoch > 1 {
		t.Errorf("after the timeout at (%d, %d): (%d, %d); want a new producer id at its first epoch", pid, epoch, st.ProducerID, st.ProducerEpoch)
	}
	// The fenced client aborts, as the Java client does after its
	// produce fails, and goes on with what it is told.
	r := endTxnV5(t, cl, "ex-b", pid, epoch, false)
	if r.ErrorCode == 0 {
		t.Errorf("EndTxn v5 abort of the fenced producer (%d, %d): NONE with (%d, %d), want it refused", pid, epoch, r.ProducerID, r.ProducerEpoch)
		pid, epoch = r.ProducerID, r.ProducerEpoch
	} else if pid, epoch, code = initPID(t, cl, "ex-b", 1000); code != 0 {
		t.Fatalf("InitProducerId after the fence: %v", kerr.ErrorForCode(code))
	}
	if epoch < 0 {
		t.Errorf("epoch %d: wrapped", epoch)
	}
	commit("ex-b", pid, epoch, "b2")
	sameSet(t, "read_committed", consumeAll(t, b.Addr(), "ex", true, 5), []string{"a1", "a2", "a3", "b1", "b2"})
}

// TestTransactionsV2NoRetryAfterV1: a v2 client's EndTxn v5 at the epoch
// before the current one is a retry only when the transaction it names
// ran on v2. Here a new instance on v1 took the epoch after it and aborted
// a v1 transaction (no bump): the old instance's EndTxn v5 is a zombie's
// and is fenced, where taking it for a retry would hand it the new
// instance's epoch.
func TestTransactionsV2NoRetryAfterV1(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t, txnProps...)
	createTopic(t, b.Addr(), "nr", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	v1, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), v1Versions())
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	zpid, zepoch, code := initPID(t, cl, "nr", 60000)
	if code != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(code))
	}
	npid, nepoch, code := initPID(t, v1, "nr", 60000)
	if code != 0 || npid != zpid || nepoch != zepoch+1 {
		t.Fatalf("second InitProducerId: (%d, %d) %v; want (%d, %d)", npid, nepoch, kerr.ErrorForCode(code), zpid, zepoch+1)
	}
	wantCode(t, "v1 AddPartitionsToTxn", addPartition(t, v1, "nr", npid, nepoch, "nr", 0), nil)
	wantCode(t, "v1 Produce", produceRaw(t, v1, "nr", "nr", 0, txnBatch(t, npid, nepoch, 0, "n")), nil)
	wantCode(t, "v1 EndTxn abort", endTxn(t, v1, "nr", npid, nepoch, false), nil)
	r := endTxnV5(t, cl, "nr", zpid, zepoch, false)
	if r.ErrorCode != kerr.ProducerFenced.Code {
		t.Errorf("the old instance's EndTxn v5 at %d: %v with (%d, %d); want PRODUCER_FENCED", zepoch, kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	}
}

// TestTransactionsV2ProduceAddsOnce: a Produce v12 to four partitions its
// transaction has not reached yet adds them in one state write, as Kafka's
// AddPartitionsToTxnManager batches them, not one replicated write each;
// the records are all appended and read once committed.
func TestTransactionsV2ProduceAddsOnce(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t, txnProps...)
	createTopic(t, b.Addr(), "ba", 4)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	stateEnd := func() int64 {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		offs, err := adm.ListEndOffsets(ctx, "__transaction_state")
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		offs.Each(func(o kadm.ListedOffset) { sum += o.Offset })
		return sum
	}
	pid, epoch, code := initPID(t, cl, "ba-tx", 60000)
	if code != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(code))
	}
	before := stateEnd()
	id := "ba-tx"
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "ba"
	var want []string
	for p := range int32(4) {
		rp := kmsg.NewProduceRequestTopicPartition()
		v := "p" + strconv.Itoa(int(p))
		rp.Partition, rp.Records = p, txnBatch(t, pid, epoch, 0, v)
		rt.Partitions = append(rt.Partitions, rp)
		want = append(want, v)
	}
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.ProduceResponse](t, cl, req)
	if resp.Version < 12 {
		t.Fatalf("Produce v%d sent, want v12", resp.Version)
	}
	for _, sp := range resp.Topics[0].Partitions {
		wantCode(t, "Produce v12 to partition "+strconv.Itoa(int(sp.Partition)), sp.ErrorCode, nil)
	}
	if n := stateEnd() - before; n != 1 {
		t.Errorf("one Produce v12 to 4 new partitions wrote %d transaction state records, want 1", n)
	}
	wantCode(t, "EndTxn v5 commit", endTxnV5(t, cl, id, pid, epoch, true).ErrorCode, nil)
	sameSet(t, "read_committed", consumeAll(t, b.Addr(), "ba", true, len(want)), want)
}
