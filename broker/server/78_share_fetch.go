package server

import (
	"encoding/binary"
	"errors"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
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
//
// Record bytes of the local log go to the socket by sendfile, as Fetch's
// do (files.go): the handler then writes its own answer.
func (s *Server) handleShareFetch(c *conn, req *kmsg.ShareFetchRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	files := newFileRanges(true, s.sendfile) // ShareFetch is flexible from v0
	defer files.release()
	s.shareFetch(c, req, resp, files)
	c.shareFetchQuota(resp, files)
	if files.empty() {
		return resp, nil
	}
	resp.SetVersion(req.Version)
	c.applyThrottle(resp)
	return nil, c.write(resp, files)
}

// shareFetch fills resp; record bytes sent by sendfile are in files. (It
// returns resp for its early answers' sake; the caller has it already.)
func (s *Server) shareFetch(c *conn, req *kmsg.ShareFetchRequest, resp *kmsg.ShareFetchResponse, files *fileRanges) (*kmsg.ShareFetchResponse, error) {
	resp.AcquisitionLockTimeoutMillis = s.lockMillis(req.GroupID)
	fail := func(e *kerr.Error) (*kmsg.ShareFetchResponse, error) {
		resp.ErrorCode = e.Code
		return resp, nil
	}
	groupID, memberID, e := shareCaller(c, req.GroupID, req.MemberID)
	if e != nil {
		return fail(e)
	}
	if req.ShareSessionEpoch != -1 {
		// Closing a session only releases; anything else may create
		// share-partition state, for members of the group only.
		if e := s.shareMember(groupID, memberID); e != nil {
			return fail(e)
		}
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
				sp.AcknowledgeErrorCode, sp.AcknowledgeErrorMessage = e.Code, shareAckMessage(e)
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
		var wake []<-chan struct{}
		var watched []shareWatch
		got := 0
		var budget = maxBytes
		for i, tp := range tps {
			if budget <= 0 {
				break
			}
			// Start from a different partition each time, so that one
			// busy partition does not starve the others.
			tp = tps[(i+int(req.ShareSessionEpoch))%len(tps)]
			n, w, perr := s.shareFetchPartition(c, img, groupID, memberID, tp, maxRecords-got, &budget, maxBytes, rb, files, &watched)
			if perr != nil {
				rb.partition(tp.Topic, tp.Partition).ErrorCode = perr.Code
				continue
			}
			got += n
			wake = append(wake, w...)
		}
		if got > 0 || len(wake) == 0 || !time.Now().Before(deadline) || s.closing.Load() {
			s.unwatch(watched)
			break
		}
		done := s.metrics.wait(purgatoryFetch)
		waitStart := time.Now()
		waitAny(append(wake, s.stopping), time.Until(deadline))
		c.waited += time.Since(waitStart) // not work: request_percentage leaves it out
		done()
		s.unwatch(watched)
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
	// Records is non-nullable from ShareFetch v1 on; kmsg writes a nil
	// slice as null, which the Java client refuses for the whole
	// response ("non-nullable field records was serialized as null"), so
	// a partition answered with only an error or acknowledgement codes
	// carries empty records.
	sp.Records = []byte{}
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
// how many it acquired and, when none, what to wait on for more: this
// partition's high watermark and its share partition's released records,
// so that a produce or a release elsewhere does not wake this fetch.
func (s *Server) shareFetchPartition(c *conn, img *cluster.Image, groupID, memberID string, tp share.TP, maxRec int, budget *int64, maxBytes int64, rb *shareResponse, files *fileRanges, watched *[]shareWatch) (int, []<-chan struct{}, *kerr.Error) {
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
	key := share.Key{Group: groupID, Topic: tp.Topic, Partition: tp.Partition}
	// The channels first: a produce or a release between looking and
	// waiting must still wake this fetch.
	released := s.shares.Released(key)
	*watched = append(*watched, shareWatch{key, released})
	idle := []<-chan struct{}{part.HWChanged(), released}
	hw := part.HighWatermark()
	readCommitted := s.shares.ReadCommitted(groupID)
	upTo := hw
	if readCommitted {
		upTo = min(hw, part.LastStableOffset())
	}
	ranges, e := s.shares.Acquire(key, part.LeaderEpoch(), memberID, maxRec, upTo, s.logStartOffset(part))
	if e == share.ErrUninitialized {
		// Never initialized by the group's coordinator: refused, as
		// Kafka 4.4 refuses it, and nothing waits on it.
		return 0, nil, e
	}
	if e != nil && e != kerr.NotLeaderForPartition {
		// The state is not readable yet (__share_group_state is being
		// created, its partition loads or its leader moves): nothing to
		// hand out for now, as Kafka answers while a share partition
		// initializes; the next fetch tries again. An error here would
		// make the Java consumer drop the partition from its session.
		s.logger.Debug("share-group state not readable", "group", groupID, "partition", tp.Partition, "err", e)
		return 0, []<-chan struct{}{afterRetry()}, nil
	}
	if e != nil {
		return 0, nil, e
	}
	if len(ranges) == 0 {
		return 0, idle, nil
	}
	first, last := ranges[0].First, ranges[0].Last
	for _, r := range ranges {
		first, last = min(first, r.First), max(last, r.Last)
	}
	// Read whole batches from the first acquired offset until the last is
	// covered or the byte budget is spent; the first batch always comes.
	var records []byte
	var placeholder []byte
	var wake <-chan struct{}
	next := first
	if !readCommitted && (s.tier == nil || first >= part.Log.LogStartOffset()) {
		// From the local log the bytes can go by sendfile: read_committed
		// needs them (the aborted batches), remote ones are in memory.
		if sl, end, ok := shareSlice(part, first, last, *budget, minOne, hw); ok {
			placeholder = files.add(sl)
			*budget -= sl.Size
			next = end
		}
	}
	for next <= last && placeholder == nil {
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
		// A read ends where its limit does, possibly inside a batch: only
		// the whole batches go in, and the next read starts at the cut
		// one. Appending the cut bytes too put a partial batch in front
		// of its whole copy, which clients read as corrupt.
		end, whole := batchesEnd(b)
		if end <= next {
			break
		}
		records = append(records, b[:whole]...)
		*budget -= int64(whole)
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
	if readCommitted && len(records) > 0 && len(ranges) > 0 {
		aborted, w, err := s.shareAbortedTxns(part, first, next)
		if w != nil || err != nil {
			// The remote transaction indexes are on their way (or not
			// readable): nothing is handed out before they are known.
			s.shares.Unacquire(key, memberID, ranges, first)
			if w == nil {
				w = afterRetry()
			}
			return 0, []<-chan struct{}{w}, nil
		}
		if ab := abortedBatches(records, aborted); len(ab) > 0 {
			var dropped []share.Range
			ranges, dropped = splitAborted(ranges, ab)
			s.shares.Archive(key, memberID, dropped)
			records = withoutBatches(records, ab)
			if len(ranges) == 0 && wake == nil {
				// All of it was aborted: look again at once for more.
				wake = closedChan
			}
		}
	}
	if len(ranges) == 0 {
		if wake == nil {
			return 0, nil, nil
		}
		return 0, []<-chan struct{}{wake}, nil
	}
	sp := rb.partition(tp.Topic, tp.Partition)
	sp.Records = records
	if placeholder != nil {
		sp.Records = placeholder
	}
	n := 0
	for _, r := range ranges {
		ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
		ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = r.First, r.Last, r.Count
		sp.AcquiredRecords = append(sp.AcquiredRecords, ar)
		n += int(r.Last - r.First + 1)
	}
	return n, nil, nil
}

// shareWatch is a share partition's wake channel a fetch took, handed
// back (Manager.Unwatch) once the fetch stops waiting on it.
type shareWatch struct {
	key share.Key
	ch  <-chan struct{}
}

func (s *Server) unwatch(ws []shareWatch) {
	for _, w := range ws {
		s.shares.Unwatch(w.key, w.ch)
	}
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

// batchesEnd is one past the last offset of the whole record batches in
// b, and their length in bytes: baseOffset (8 bytes) + batchLength (4)
// + ... lastOffsetDelta at 23.
func batchesEnd(b []byte) (end int64, whole int) {
	end = -1
	for len(b)-whole >= 27 {
		h := b[whole:]
		n := int(binary.BigEndian.Uint32(h[8:])) + 12
		if n > len(h) || n < 27 {
			break // a partial batch at the end, cut by the read's limit
		}
		end = int64(binary.BigEndian.Uint64(h)) + int64(int32(binary.BigEndian.Uint32(h[23:]))) + 1
		whole += n
	}
	return end, whole
}

// maxSliceHeaders bounds the batch headers shareSlice reads to find where
// its whole batches end: past it (many tiny batches) copying the bytes is
// cheaper than a read per header.
const maxSliceHeaders = 64

// shareSlice is the local log's file range of whole batches from the one
// holding first up to the one holding last (fewer when the budget ends
// first; the first batch always, with minOne), and one past its last
// offset. ok is false when there is nothing to send that way (the caller
// then copies): a Slice may end inside a batch, and the acquired offsets
// past the last whole batch must go back, so the headers are read to find
// it.
func shareSlice(part *replica.Partition, first, last, budget int64, minOne bool, hw int64) (sl log.Slice, end int64, ok bool) {
	sl, err := part.Log.Read(first, log.ReadOptions{MaxBytes: int(min(budget, math.MaxInt32)), MinOneBatch: minOne, UpTo: hw})
	if err != nil || sl.Size == 0 {
		sl.Release()
		return log.Slice{}, 0, false
	}
	var h [27]byte // baseOffset, batchLength, ... lastOffsetDelta at 23
	pos, end := int64(0), int64(-1)
	for n := 0; pos+int64(len(h)) <= sl.Size && end <= last; n++ {
		if n == maxSliceHeaders {
			sl.Release()
			return log.Slice{}, 0, false
		}
		if _, err := sl.File.ReadAt(h[:], sl.Pos+pos); err != nil {
			sl.Release()
			return log.Slice{}, 0, false
		}
		size := int64(record.LogOverhead) + int64(int32(binary.BigEndian.Uint32(h[8:12])))
		if size < record.HeaderSize || pos+size > sl.Size {
			break // a batch the budget cut: it stays for the next fetch
		}
		end = int64(binary.BigEndian.Uint64(h[:8])) + int64(int32(binary.BigEndian.Uint32(h[23:27]))) + 1
		pos += size
	}
	if pos == 0 || end <= first {
		sl.Release()
		return log.Slice{}, 0, false
	}
	sl.Size = pos
	return sl, end, true
}

// afterRetry is closed after shareStateRetry.
func afterRetry() <-chan struct{} {
	retry := make(chan struct{})
	time.AfterFunc(shareStateRetry, func() { close(retry) })
	return retry
}

// closedChan is a wake-up that has already happened.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

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
