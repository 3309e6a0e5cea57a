package server

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/replica"
	"github.com/tributary-io/tributary/broker/share"
	"github.com/tributary-io/tributary/broker/tier"
)

// defaultShareMaxRecords is what a ShareFetch without max_records (or
// with 0) acquires at most, the client's max.poll.records default.
const defaultShareMaxRecords = 500

// handleShareFetch serves KIP-932's ShareFetch on the leader of the
// partitions: it applies the piggy-backed acknowledgements, then acquires
// records for the member and returns their batches with the acquired
// offset ranges; with nothing to acquire it waits up to max_wait_ms for
// new records or released ones. The share session (epoch) follows
// Kafka's ShareSessionCache. READ on the group (else the whole request is
// GROUP_AUTHORIZATION_FAILED) and on each topic (TOPIC_AUTHORIZATION_FAILED
// per partition).
func (s *Server) handleShareFetch(c *conn, req *kmsg.ShareFetchRequest) (*kmsg.ShareFetchResponse, error) {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	resp.AcquisitionLockTimeoutMillis = s.lockMillis(req.GroupID)
	fail := func(e *kerr.Error) (*kmsg.ShareFetchResponse, error) {
		resp.ErrorCode = e.Code
		return resp, nil
	}
	groupID, memberID, e := shareCaller(c, req.GroupID, req.MemberID)
	if e != nil {
		return fail(e)
	}
	renew := req.Version >= 2 && req.IsRenewAck
	if renew && (req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0) {
		return fail(kerr.InvalidRequest)
	}
	img := s.ctrl.Image()
	var add, forget []share.TP
	type refused struct {
		tp share.TP
		e  *kerr.Error
	}
	var bad []refused
	acks := false
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			acks = acks || len(p.AcknowledgementBatches) > 0
			// Only partitions that exist and that the caller may read
			// join the session, as Kafka caches only those (review M2);
			// the others are answered with their error once.
			if _, e := s.sharePartitionOf(c, img, t.TopicID, p.Partition); e != nil {
				bad = append(bad, refused{share.TP{Topic: t.TopicID, Partition: p.Partition}, e})
				continue
			}
			add = append(add, share.TP{Topic: t.TopicID, Partition: p.Partition})
		}
	}
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forget = append(forget, share.TP{Topic: t.TopicID, Partition: p})
		}
	}
	if req.ShareSessionEpoch == -1 {
		add = nil
	}
	if req.ShareSessionEpoch == 0 && !c.mayOpenShareSession(groupID, memberID) {
		return fail(kerr.ShareSessionLimitReached)
	}
	tps, code := s.shares.Session(c, groupID, memberID, req.ShareSessionEpoch, add, forget, acks)
	if code != nil {
		return fail(code)
	}
	if req.ShareSessionEpoch == 0 {
		c.openedShareSession(groupID, memberID)
	}
	rb := newShareResponse(resp)
	for _, b := range bad {
		rb.partition(b.tp.Topic, b.tp.Partition).ErrorCode = b.e.Code
	}
	// Acknowledgements first: what they release may be acquired below.
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			batches := make([]share.AckBatch, len(p.AcknowledgementBatches))
			for i, b := range p.AcknowledgementBatches {
				batches[i] = share.AckBatch{First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes}
			}
			sp := rb.partition(t.TopicID, p.Partition)
			if e := validateShareAcks(batches, req.Version, renew); e != nil {
				sp.AcknowledgeErrorCode = e.Code
				continue
			}
			if e := s.shareAck(c, img, groupID, memberID, t.TopicID, p.Partition, batches); e != nil {
				sp.AcknowledgeErrorCode = e.Code
			}
		}
	}
	if req.ShareSessionEpoch == -1 {
		s.shares.CloseSession(groupID, memberID)
		c.closedShareSession(groupID, memberID)
		return resp, nil
	}
	if renew {
		return resp, nil
	}
	maxRecords := int(req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = defaultShareMaxRecords
	}
	// Every byte of the answer is held in memory until it is written, so
	// the broker's fetch.max.bytes bounds it whatever the client asks,
	// as Kafka's handleShareFetchRequest does (review H1).
	maxBytes := int64(s.cfg.Int("fetch.max.bytes"))
	if req.MaxBytes > 0 {
		maxBytes = min(maxBytes, int64(req.MaxBytes))
	}
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	for {
		released := s.shares.Released()
		var wake []<-chan struct{}
		got := 0
		var budget = maxBytes
		for i, tp := range tps {
			if budget <= 0 {
				break
			}
			// Start from a different partition each time, so that one
			// busy partition does not starve the others.
			tp = tps[(i+int(req.ShareSessionEpoch))%len(tps)]
			n, w, perr := s.shareFetchPartition(c, img, groupID, memberID, tp, maxRecords-got, &budget, maxBytes, rb)
			if perr != nil {
				rb.partition(tp.Topic, tp.Partition).ErrorCode = perr.Code
				continue
			}
			got += n
			if w != nil {
				wake = append(wake, w)
			}
		}
		if got > 0 || len(wake) == 0 || !time.Now().Before(deadline) || s.closing.Load() {
			break
		}
		done := s.metrics.wait(purgatoryFetch)
		waitAny(append(wake, released, s.stopping), time.Until(deadline))
		done()
		img = s.ctrl.Image()
	}
	if req.ShareSessionEpoch == 0 {
		// A new session's first answer names every partition of it.
		for _, tp := range tps {
			rb.partition(tp.Topic, tp.Partition)
		}
	}
	return resp, nil
}

// shareResponse builds a ShareFetch response, one entry per partition.
type shareResponse struct {
	resp  *kmsg.ShareFetchResponse
	index map[share.TP][2]int
}

func newShareResponse(r *kmsg.ShareFetchResponse) *shareResponse {
	return &shareResponse{resp: r, index: map[share.TP][2]int{}}
}

func (b *shareResponse) partition(topic [16]byte, p int32) *kmsg.ShareFetchResponseTopicPartition {
	k := share.TP{Topic: topic, Partition: p}
	if at, ok := b.index[k]; ok {
		return &b.resp.Topics[at[0]].Partitions[at[1]]
	}
	ti := -1
	for i := range b.resp.Topics {
		if b.resp.Topics[i].TopicID == topic {
			ti = i
			break
		}
	}
	if ti < 0 {
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = topic
		b.resp.Topics = append(b.resp.Topics, t)
		ti = len(b.resp.Topics) - 1
	}
	sp := kmsg.NewShareFetchResponseTopicPartition()
	sp.Partition = p
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
	b.resp.Topics[ti].Partitions = append(b.resp.Topics[ti].Partitions, sp)
	b.index[k] = [2]int{ti, len(b.resp.Topics[ti].Partitions) - 1}
	return &b.resp.Topics[ti].Partitions[len(b.resp.Topics[ti].Partitions)-1]
}

// shareStateRetry is how soon a fetch waiting for a share partition's
// state tries again.
const shareStateRetry = 100 * time.Millisecond

// sharePartitionOf resolves a share request's partition to the leader's
// partition after the ACL check.
func (s *Server) sharePartitionOf(c *conn, img *cluster.Image, topicID [16]byte, p int32) (string, *kerr.Error) {
	t, ok := img.ByID[cluster.TopicID(topicID)]
	if !ok {
		return "", kerr.UnknownTopicID
	}
	if !c.allowedTopic(opRead, t.Name) {
		return "", kerr.TopicAuthorizationFailed
	}
	if p < 0 || int(p) >= len(t.Partitions) {
		return "", kerr.UnknownTopicOrPartition
	}
	return t.Name, nil
}

// shareAck applies acknowledgement batches to one partition.
func (s *Server) shareAck(c *conn, img *cluster.Image, groupID, memberID string, topicID [16]byte, p int32, batches []share.AckBatch) *kerr.Error {
	name, e := s.sharePartitionOf(c, img, topicID, p)
	if e != nil {
		return e
	}
	part, e := s.leaderPartition(name, p)
	if e != nil {
		return e
	}
	return s.shares.Acknowledge(share.Key{Group: groupID, Topic: topicID, Partition: p}, part.LeaderEpoch(), memberID, batches)
}

// shareFetchPartition acquires up to max records of one partition for the
// member and adds them, with their batches, to the response. It returns
// how many it acquired and, when none, what to wait on for more.
func (s *Server) shareFetchPartition(c *conn, img *cluster.Image, groupID, memberID string, tp share.TP, maxRec int, budget *int64, maxBytes int64, rb *shareResponse) (int, <-chan struct{}, *kerr.Error) {
	name, e := s.sharePartitionOf(c, img, tp.Topic, tp.Partition)
	if e != nil {
		return 0, nil, e
	}
	part, e := s.leaderPartition(name, tp.Partition)
	if e != nil {
		return 0, nil, e
	}
	if maxRec <= 0 || *budget <= 0 {
		return 0, nil, nil
	}
	// Only the answer's first batch may exceed the budget (KIP-74), as in
	// Fetch; after it, a batch that does not fit stays for the next fetch.
	minOne := *budget == maxBytes
	hw := part.HighWatermark()
	key := share.Key{Group: groupID, Topic: tp.Topic, Partition: tp.Partition}
	ranges, e := s.shares.Acquire(key, part.LeaderEpoch(), memberID, maxRec, hw, s.logStartOffset(part))
	if e != nil && e != kerr.NotLeaderForPartition {
		// The state is not readable yet (__share_group_state is being
		// created, its partition loads or its leader moves): nothing to
		// hand out for now, as Kafka answers while a share partition
		// initializes; the next fetch tries again. An error here would
		// make the Java consumer drop the partition from its session.
		s.logger.Debug("share-group state not readable", "group", groupID, "partition", tp.Partition, "err", e)
		retry := make(chan struct{})
		time.AfterFunc(shareStateRetry, func() { close(retry) })
		return 0, retry, nil
	}
	if e != nil {
		return 0, nil, e
	}
	if len(ranges) == 0 {
		return 0, part.HWChanged(), nil
	}
	first, last := ranges[0].First, ranges[0].Last
	for _, r := range ranges {
		first, last = min(first, r.First), max(last, r.Last)
	}
	// Read whole batches from the first acquired offset until the last is
	// covered or the byte budget is spent; the first batch always comes.
	var records []byte
	var wake <-chan struct{}
	next := first
	for next <= last {
		b, w, err := s.shareRead(part, next, min(*budget, 1<<20), minOne && len(records) == 0, hw)
		if w != nil {
			// Remote bytes on their way: what is read so far goes now,
			// the rest when they are here.
			wake = w
			break
		}
		if err != nil || len(b) == 0 {
			break
		}
		end := batchesEnd(b)
		if end <= next {
			break
		}
		records = append(records, b...)
		*budget -= int64(len(b))
		next = end
		if *budget <= 0 {
			break
		}
	}
	if next <= last {
		// Offsets whose bytes did not fit (or are gone) go back.
		s.shares.Unacquire(key, memberID, ranges, next)
		ranges = trimRanges(ranges, next)
	}
	if len(ranges) == 0 {
		return 0, wake, nil
	}
	sp := rb.partition(tp.Topic, tp.Partition)
	sp.Records = records
	n := 0
	for _, r := range ranges {
		ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
		ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = r.First, r.Last, r.Count
		sp.AcquiredRecords = append(sp.AcquiredRecords, ar)
		n += int(r.Last - r.First + 1)
	}
	return n, nil, nil
}

// shareRead reads whole batches from offset: from remote storage below
// the local log start of a tiered topic (wait is set while those bytes
// are fetched), else from the local log.
func (s *Server) shareRead(part *replica.Partition, offset, limit int64, minOne bool, hw int64) (b []byte, wait <-chan struct{}, err error) {
	if s.tier != nil && offset < part.Log.LogStartOffset() {
		b, wait, err = s.tier.Read(part.TP, offset, limit, minOne)
		if !errors.Is(err, tier.ErrNotRemote) {
			return b, wait, err
		}
	}
	sl, err := part.Log.Read(offset, log.ReadOptions{MaxBytes: int(limit), MinOneBatch: minOne, UpTo: hw})
	defer sl.Release()
	if err != nil || sl.Size == 0 {
		return nil, nil, err
	}
	b, err = sl.ReadAll()
	return b, nil, err
}

// batchesEnd is one past the last offset of the record batches in b:
// baseOffset (8 bytes) + batchLength (4) + ... lastOffsetDelta at 23.
func batchesEnd(b []byte) int64 {
	end := int64(-1)
	for len(b) >= 27 {
		n := int(binary.BigEndian.Uint32(b[8:])) + 12
		if n > len(b) || n < 27 {
			break // a partial batch at the end, which clients drop
		}
		end = int64(binary.BigEndian.Uint64(b)) + int64(int32(binary.BigEndian.Uint32(b[23:]))) + 1
		b = b[n:]
	}
	return end
}

// trimRanges keeps the offsets below end.
func trimRanges(rs []share.Range, end int64) []share.Range {
	out := rs[:0]
	for _, r := range rs {
		if r.First >= end {
			continue
		}
		r.Last = min(r.Last, end-1)
		out = append(out, r)
	}
	return out
}
