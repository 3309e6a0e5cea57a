package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Offsets committed inside a transaction (TxnOffsetCommit, KIP-98 and
// KIP-447) are written to __consumer_offsets at once, as a transactional
// batch of the producer, but count only when the transaction commits:
// until the partition's leader writes the commit marker (CompleteTxn)
// they are pending, invisible to OffsetFetch, and an OffsetFetch that
// requires stable offsets is told UNSTABLE_OFFSET_COMMIT for them. An
// abort drops them. After a restart, the load replays the log the same
// way: the records of a transaction count at its commit marker, and those
// of a transaction still open stay pending.

// pendingOffset is one offset of an open transaction, with its record.
type pendingOffset struct {
	group string
	tp    TopicPartition
	rec   Record
}

// TxnCommit queues a transactional offset commit that CheckCommit allowed;
// done runs once the write is appended and replicated.
func (gs *Groups) TxnCommit(c Commit, producer TxnProducer, offsets []OffsetAt, now time.Time, done func(error)) {
	if len(offsets) == 0 {
		done(nil)
		return
	}
	w := Write{Partition: gs.Partition(c.Group), Txn: &producer}
	var ps []pendingOffset
	for _, o := range offsets {
		r := Record{Key: offsetKey(c.Group, o.TopicPartition), Value: offsetValue(o.Offset)}
		w.Records = append(w.Records, r)
		ps = append(ps, pendingOffset{c.Group, o.TopicPartition, r})
	}
	w.Done = func(err error) {
		if err == nil {
			gs.addPending(producer.ID, ps)
		}
		done(err)
	}
	gs.writes = append(gs.writes, w)
}

// CompleteTxn applies (commit) or drops (abort) the producer's pending
// offsets in one __consumer_offsets partition, when the marker is written.
func (gs *Groups) CompleteTxn(partition int32, producerID int64, commit bool, now time.Time) {
	var keep []pendingOffset
	for _, p := range gs.pending[producerID] {
		if gs.Partition(p.group) != partition {
			keep = append(keep, p)
			continue
		}
		if commit {
			gs.Replay(p.rec.Key, p.rec.Value, now)
		}
	}
	if len(keep) == 0 {
		delete(gs.pending, producerID)
	} else {
		gs.pending[producerID] = keep
	}
}

// loadPending takes the records of a transaction still open at the end of
// a load as pending.
func (gs *Groups) loadPending(producerID int64, rs []Record) {
	for _, r := range rs {
		var k kmsg.OffsetCommitKey
		if len(r.Key) < 2 || r.Key[1] > 1 || k.ReadFrom(r.Key) != nil {
			continue
		}
		gs.addPending(producerID, []pendingOffset{{k.Group, TopicPartition{k.Topic, k.Partition}, r}})
	}
}

// addPending records offsets of a producer's open transaction. A later
// commit of the same group's partition in the transaction replaces the
// earlier one (the marker applies only the last), so a transaction holds
// at most one pending offset per partition it commits, however often it
// commits.
func (gs *Groups) addPending(producerID int64, ps []pendingOffset) {
	cur := gs.pending[producerID]
	for _, p := range ps {
		i := slices.IndexFunc(cur, func(q pendingOffset) bool { return q.group == p.group && q.tp == p.tp })
		if i >= 0 {
			cur[i] = p
		} else {
			cur = append(cur, p)
		}
	}
	gs.pending[producerID] = cur
}

// Unstable says whether a partition of the group has an offset pending in
// an open transaction.
func (gs *Groups) Unstable(group string, tp TopicPartition) bool {
	for _, ps := range gs.pending {
		for _, p := range ps {
			if p.group == group && p.tp == tp {
				return true
			}
		}
	}
	return false
}

// TxnCommitOffsets serves a TxnOffsetCommit: the member checks of an
// OffsetCommit (KIP-447: a fenced member or a stale generation is refused
// and nothing is written), then a transactional write of the offsets.
func (c *Coordinator) TxnCommitOffsets(req *kmsg.TxnOffsetCommitRequest, known func(topic string, partition int32) bool) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	codes := make([][]int16, len(req.Topics))
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
	}
	c.mu.Lock()
	now := c.now()
	top := c.status(req.Group)
	if top == nil && (req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil) {
		// v3+ carries the member (KIP-447); older clients commit as a
		// "simple" group member.
		top = c.gs.CheckCommit(Commit{Version: 9, Group: req.Group, Generation: req.Generation, MemberID: req.MemberID, InstanceID: req.InstanceID})
	}
	var offsets []OffsetAt
	var idx [][2]int
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			meta := ""
			if p.Metadata != nil {
				meta = *p.Metadata
			}
			switch {
			case !known(t.Topic, p.Partition):
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			case top != nil:
				codes[i][j] = top.Code
			case len(meta) > c.gs.cfg.MaxMetadataBytes:
				codes[i][j] = kerr.OffsetMetadataTooLarge.Code
			default:
				o := Offset{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: meta, CommitTimestamp: now.UnixMilli(), ExpireTimestamp: -1}
				if req.Version < 2 {
					o.LeaderEpoch = -1
				}
				offsets = append(offsets, OffsetAt{TopicPartition{t.Topic, p.Partition}, o})
				idx = append(idx, [2]int{i, j})
			}
		}
	}
	var written chan struct{}
	if len(offsets) > 0 {
		written = make(chan struct{})
		c.gs.TxnCommit(Commit{Group: req.Group}, TxnProducer{req.ProducerID, req.ProducerEpoch}, offsets, now, func(err error) {
			defer close(written)
			if err == nil {
				return
			}
			code := commitErrorCode(err)
			for _, ij := range idx {
				codes[ij[0]][ij[1]] = code
			}
		})
		c.flushLocked()
	}
	c.mu.Unlock()
	if written != nil {
		<-written
	}
	for i, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// CompleteTxn is told that the marker of a producer's transaction was
// written to a __consumer_offsets partition led here.
func (c *Coordinator) CompleteTxn(partition int32, producerID int64, commit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gs.CompleteTxn(partition, producerID, commit, c.now())
}

// Unstable says which of the group's partitions have offsets pending in an
// open transaction (OffsetFetch's require_stable, KIP-447).
func (c *Coordinator) Unstable(group string, tp TopicPartition) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gs.Unstable(group, tp)
}
