package txn_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/testbroker"
)

func request[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if want == nil && got != 0 {
		t.Errorf("%s: %v, want no error", what, kerr.ErrorForCode(got))
	} else if want != nil && got != want.Code {
		t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func initPID(t *testing.T, cl *kgo.Client, id string, timeoutMs int32) (int64, int16, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = &id, timeoutMs
	req.ProducerID, req.ProducerEpoch = -1, -1
	for deadline := time.Now().Add(60 * time.Second); ; {
		resp := request[*kmsg.InitProducerIDResponse](t, cl, req)
		retriable := resp.ErrorCode == kerr.CoordinatorLoadInProgress.Code || resp.ErrorCode == kerr.ConcurrentTransactions.Code ||
			resp.ErrorCode == kerr.CoordinatorNotAvailable.Code || resp.ErrorCode == kerr.NotCoordinator.Code
		if retriable && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		return resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode
	}
}

func txnBatch(t *testing.T, pid int64, epoch int16, seq int32, vals ...string) []byte {
	t.Helper()
	opts := record.DefaultBuildOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, epoch, seq, true
	opts.BaseTimestamp = time.Now().UnixMilli()
	var kvs []record.KV
	for _, v := range vals {
		kvs = append(kvs, record.KV{Value: []byte(v)})
	}
	b, err := record.Build(opts, record.NewRecords(kvs...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func produceRaw(t *testing.T, cl *kgo.Client, id, topic string, partition int32, batch []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return request[*kmsg.ProduceResponse](t, cl, req).Topics[0].Partitions[0].ErrorCode
}

// v1Versions caps a client at transactions v1's versions: Produce v11
// (v12's leader adds the partition to the transaction itself), EndTxn v4
// (v5 bumps the epoch) and TxnOffsetCommit v4 (v5 adds the group's
// partition). v2_e2e_test.go has v2's rules.
func v1Versions() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.Produce.Int16(), 11)
	v.SetMaxKeyVersion(kmsg.EndTxn.Int16(), 4)
	v.SetMaxKeyVersion(kmsg.TxnOffsetCommit.Int16(), 4)
	return kgo.MaxVersions(v)
}

func addPartition(t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16, topic string, partition int32) int16 {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	return request[*kmsg.AddPartitionsToTxnResponse](t, cl, req).Topics[0].Partitions[0].ErrorCode
}

func endTxn(t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return request[*kmsg.EndTxnResponse](t, cl, req).ErrorCode
}

func describeTxn(t *testing.T, cl *kgo.Client, id string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	return request[*kmsg.DescribeTransactionsResponse](t, cl, req).TransactionStates[0]
}

// TestTransactionsBadInput: each misuse gets Kafka's error and changes
// nothing: no record is appended, no transaction state moves.
func TestTransactionsBadInput(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t, txnProps...)
	createTopic(t, b.Addr(), "bad", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), v1Versions())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const id = "bad-tx"
	pid, epoch, code := initPID(t, cl, id, 10000)
	if code != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(code))
	}
	hw := func() int64 { return endOffsets(t, cl, "bad", 1, false) }
	start := hw()

	// A transactional produce to a partition not added to the transaction.
	wantCode(t, "produce without AddPartitionsToTxn", produceRaw(t, cl, id, "bad", 0, txnBatch(t, pid, epoch, 0, "x")), kerr.InvalidTxnState)
	// A transactional id's produce with a non-transactional batch.
	plain := record.DefaultBuildOptions()
	plainBatch, _ := record.Build(plain, record.NewRecords(record.KV{Value: []byte("p")}))
	wantCode(t, "transactional produce of a plain batch", produceRaw(t, cl, id, "bad", 0, plainBatch), kerr.InvalidRecord)
	// Only the first batch transactional.
	wantCode(t, "transactional produce of a transactional then a plain batch", produceRaw(t, cl, id, "bad", 0, append(txnBatch(t, pid, epoch, 0, "x"), plainBatch...)), kerr.InvalidRecord)
	// A transactional batch without a transactional id, even behind a
	// plain one: no coordinator would ever end its transaction.
	produceNoID := func(records []byte) int16 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "bad"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return request[*kmsg.ProduceResponse](t, cl, req).Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "produce of a transactional batch without a transactional id", produceNoID(append(append([]byte(nil), plainBatch...), txnBatch(t, 4242, 0, 0, "hang")...)), kerr.TransactionalIDAuthorizationFailed)
	if got := hw(); got != start {
		t.Fatalf("refused produces appended: high watermark %d, was %d", got, start)
	}
	// Stale epoch.
	wantCode(t, "AddPartitionsToTxn with a stale epoch", addPartition(t, cl, id, pid, epoch-1, "bad", 0), kerr.ProducerFenced)
	wantCode(t, "AddPartitionsToTxn with another producer id", addPartition(t, cl, id, pid+1, epoch, "bad", 0), kerr.InvalidProducerIDMapping)
	if st := describeTxn(t, cl, id); st.State != "Empty" || len(st.Topics) != 0 {
		t.Fatalf("refused AddPartitionsToTxn changed the state: %s %v", st.State, st.Topics)
	}
	// EndTxn of an unknown id, and of an id with nothing begun.
	wantCode(t, "EndTxn of an unknown transactional id", endTxn(t, cl, "no-such-tx", 1, 0, true), kerr.InvalidProducerIDMapping)
	wantCode(t, "EndTxn with nothing begun", endTxn(t, cl, id, pid, epoch, true), kerr.InvalidTxnState)
	// A timeout above transaction.max.timeout.ms.
	if _, _, code := initPID(t, cl, "too-long", 1<<30); code != kerr.InvalidTransactionTimeout.Code {
		t.Errorf("InitProducerId with a huge timeout: %v", kerr.ErrorForCode(code))
	}

	// A zombie: a second instance fences the first.
	wantCode(t, "AddPartitionsToTxn", addPartition(t, cl, id, pid, epoch, "bad", 0), nil0)
	wantCode(t, "produce", produceRaw(t, cl, id, "bad", 0, txnBatch(t, pid, epoch, 0, "zombie")), nil0)
	pid2, epoch2, code := initPID(t, cl, id, 10000)
	if code != 0 || pid2 != pid || epoch2 <= epoch {
		t.Fatalf("second InitProducerId: %d/%d %v, first %d/%d", pid2, epoch2, kerr.ErrorForCode(code), pid, epoch)
	}
	if st := describeTxn(t, cl, id); st.State != "Empty" {
		t.Fatalf("the zombie's transaction was not aborted: %s", st.State)
	}
	before := hw()
	wantCode(t, "the zombie's produce", produceRaw(t, cl, id, "bad", 0, txnBatch(t, pid, epoch, 1, "late")), kerr.InvalidProducerEpoch)
	wantCode(t, "the zombie's EndTxn", endTxn(t, cl, id, pid, epoch, true), kerr.ProducerFenced)
	if got := hw(); got != before {
		t.Fatalf("the zombie appended: high watermark %d, was %d", got, before)
	}
	if lso := endOffsets(t, cl, "bad", 1, true); lso != before {
		t.Fatalf("after the fencing abort, LSO %d, high watermark %d", lso, before)
	}
	if got := consumeAll(t, b.Addr(), "bad", true, 0); len(got) != 0 {
		t.Fatalf("read_committed read the zombie's aborted records: %v", got)
	}

	// TxnOffsetCommit from a fenced member: a stale generation, an
	// unknown member.
	member, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("bad-group"), kgo.ConsumeTopics("bad"))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	var memberID string
	var gen int32
	for deadline := time.Now().Add(60 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		member.PollFetches(ctx)
		cancel()
		if m, g := member.GroupMetadata(); g > 0 {
			memberID, gen = m, g
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the consumer did not join its group")
		}
	}
	commitEpoch := epoch2
	commit := func(gen int32, memberID string) int16 {
		c := kmsg.NewPtrTxnOffsetCommitRequest()
		c.TransactionalID, c.Group, c.ProducerID, c.ProducerEpoch = id, "bad-group", pid2, commitEpoch
		c.Generation, c.MemberID = gen, memberID
		ct := kmsg.NewTxnOffsetCommitRequestTopic()
		ct.Topic = "bad"
		cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset, cp.LeaderEpoch = 0, 1, -1
		ct.Partitions = append(ct.Partitions, cp)
		c.Topics = append(c.Topics, ct)
		c.SetVersion(3)
		return request[*kmsg.TxnOffsetCommitResponse](t, cl, c).Topics[0].Partitions[0].ErrorCode
	}
	stable := func() (int64, int16) {
		f := kmsg.NewPtrOffsetFetchRequest()
		f.Group, f.RequireStable = "bad-group", true
		ft := kmsg.NewOffsetFetchRequestTopic()
		ft.Topic, ft.Partitions = "bad", []int32{0}
		f.Topics = append(f.Topics, ft)
		f.SetVersion(7)
		p := request[*kmsg.OffsetFetchResponse](t, cl, f).Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	// Outside any transaction: nothing would ever end it, and the
	// offset would stay pending (UNSTABLE_OFFSET_COMMIT) for ever.
	wantCode(t, "TxnOffsetCommit without AddOffsetsToTxn", commit(gen, memberID), kerr.InvalidTxnState)
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = id, pid2, epoch2, "bad-group"
	wantCode(t, "AddOffsetsToTxn", request[*kmsg.AddOffsetsToTxnResponse](t, cl, ao).ErrorCode, nil0)
	// The fenced instance's commit would be committed by the new one's
	// transaction.
	commitEpoch = epoch
	wantCode(t, "the zombie's TxnOffsetCommit", commit(gen, memberID), kerr.InvalidProducerEpoch)
	commitEpoch = epoch2
	wantCode(t, "TxnOffsetCommit of a stale generation", commit(gen-1, memberID), kerr.IllegalGeneration)
	wantCode(t, "TxnOffsetCommit of an unknown member", commit(gen, "not-a-member"), kerr.UnknownMemberID)
	if off, code := stable(); code != 0 || off != -1 {
		t.Errorf("after refused TxnOffsetCommits, OffsetFetch: offset %d, %v", off, kerr.ErrorForCode(code))
	}
	// The member's own commit is pending until the transaction commits.
	wantCode(t, "TxnOffsetCommit of the member", commit(gen, memberID), nil0)
	if _, code := stable(); code != kerr.UnstableOffsetCommit.Code {
		t.Errorf("OffsetFetch require_stable with a pending offset: %v", kerr.ErrorForCode(code))
	}
	wantCode(t, "EndTxn commit", endTxn(t, cl, id, pid2, epoch2, true), nil0)
	if off, code := stable(); code != 0 || off != 1 {
		t.Errorf("after the commit, OffsetFetch: offset %d, %v", off, kerr.ErrorForCode(code))
	}

	// A newer epoch than the coordinator's, transactional or plain, would
	// move the partition past the epoch of the coordinator's markers: the
	// transaction could never end.
	wantCode(t, "AddPartitionsToTxn", addPartition(t, cl, id, pid2, epoch2, "bad", 0), nil0)
	wantCode(t, "produce of a future epoch", produceRaw(t, cl, id, "bad", 0, txnBatch(t, pid2, epoch2+3, 0, "future")), kerr.InvalidProducerEpoch)
	wantCode(t, "produce", produceRaw(t, cl, id, "bad", 0, txnBatch(t, pid2, epoch2, 0, "ok")), nil0)
	plain.ProducerID, plain.ProducerEpoch, plain.BaseSequence = pid2, epoch2+1, 0
	plainBatch, _ = record.Build(plain, record.NewRecords(record.KV{Value: []byte("p")}))
	wantCode(t, "plain batch of a producer with a transaction open", produceNoID(plainBatch), kerr.InvalidTxnState)
	wantCode(t, "EndTxn commit", endTxn(t, cl, id, pid2, epoch2, true), nil0)
	if st := describeTxn(t, cl, id); st.State != "CompleteCommit" {
		t.Errorf("after EndTxn, the transaction is %s", st.State)
	}
	if hw, lso := hw(), endOffsets(t, cl, "bad", 1, true); lso != hw {
		t.Errorf("after the commit, LSO %d, high watermark %d", lso, hw)
	}

	// KIP-360: an InitProducerId that presents the producer's id and epoch,
	// retried because its answer was lost, gets the same answer instead of
	// fencing the producer that asked; an older epoch is fenced.
	reinit := func(epoch int16) (int16, int16) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = kmsg.StringPtr(id), 10000, pid2, epoch
		resp := request[*kmsg.InitProducerIDResponse](t, cl, req)
		return resp.ProducerEpoch, resp.ErrorCode
	}
	epoch3, code := reinit(epoch2)
	wantCode(t, "InitProducerId with the current epoch", code, nil0)
	if again, code := reinit(epoch2); code != 0 || again != epoch3 {
		t.Errorf("retried InitProducerId: epoch %d %v, first answer %d", again, kerr.ErrorForCode(code), epoch3)
	}
	_, code = reinit(epoch2 - 1)
	wantCode(t, "InitProducerId with an older epoch", code, kerr.ProducerFenced)
}

// nil0 is "no error" for wantCode.
var nil0 = &kerr.Error{Message: "NONE", Code: 0}

// TestTransactionalIDExpiration: an id idle for longer than
// transactional.id.expiration.ms is forgotten, and starts afresh.
func TestTransactionalIDExpiration(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t, "transactional.id.expiration.ms=500", "transaction.abort.timed.out.transaction.cleanup.interval.ms=100")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), v1Versions())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, _, code := initPID(t, cl, "exp-tx", 10000); code != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(code))
	}
	for deadline := time.Now().Add(30 * time.Second); describeTxn(t, cl, "exp-tx").ErrorCode != kerr.TransactionalIDNotFound.Code; {
		if time.Now().After(deadline) {
			t.Fatal("the idle transactional id was not expired")
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Kill()
	b.Restart() // the tombstone is in the log: it stays forgotten
	// The coordinator may still be loading its log: ask until it answers.
	st := describeTxn(t, cl, "exp-tx")
	for deadline := time.Now().Add(30 * time.Second); kerr.IsRetriable(kerr.ErrorForCode(st.ErrorCode)) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		st = describeTxn(t, cl, "exp-tx")
	}
	if st.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("after a restart the expired id is back: %s (%v)", st.State, kerr.ErrorForCode(st.ErrorCode))
	}
}
