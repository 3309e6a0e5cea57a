package server

import (
	"errors"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/replica"
)

// handleFetch answers at once when min_bytes are available, an error
// occurred or max_wait_ms is zero; otherwise it waits until an append to
// one of the fetched partitions or the deadline, and reads again. It writes
// its own response, so that record bytes go to the socket by sendfile.
// With a fetch session (fetch_sessions.go) it reads every partition of the
// session and answers with those that have news.
func (s *Server) handleFetch(c *conn, req *kmsg.FetchRequest) (kmsg.Response, error) {
	if isReplicaFetch(req) && !c.peer() {
		// Only an authenticated peer fetches as a replica on a secured
		// listener (peers_security.go).
		c.refusePeer("a replica Fetch")
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.SetVersion(req.Version)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return nil, c.write(resp, nil)
	}
	eff, session, incremental, code := s.fetchSessions.resolve(req)
	if code != nil {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.SetVersion(req.Version)
		resp.ErrorCode = code.Code
		return nil, c.write(resp, nil)
	}
	c.capFetch(eff)
	answer := func(f fetchResult) error {
		defer f.files.release()
		f.stopTimers()
		if c.fetchQuota(eff, &f, session, incremental) {
			return c.write(f.resp, nil)
		}
		if session != nil {
			session.answered(f.resp, incremental)
		}
		s.metrics.fetched(f.out)
		return c.write(f.resp, f.files)
	}
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	for {
		f := s.fetchOnce(c, eff)
		if f.bytes >= int64(req.MinBytes) || f.failed || !time.Now().Before(deadline) || s.closing.Load() || len(f.wake) == 0 {
			return nil, answer(f)
		}
		// A long poll holds no segment: the next read takes new ones.
		f.files.release()
		done := s.metrics.wait(purgatoryFetch)
		waitStart := time.Now()
		woken := waitAny(append(f.wake, s.stopping), time.Until(deadline))
		c.waited += time.Since(waitStart)
		f.stopTimers()
		done()
		if !woken {
			// Timed out: answer with what the final read finds.
			return nil, answer(s.fetchOnce(c, eff))
		}
	}
}

type fetchResult struct {
	resp   *kmsg.FetchResponse
	files  *fileRanges
	bytes  int64
	failed bool
	wake   []<-chan struct{}
	stops  []func() bool // the timers behind some of wake
	out    []topicBytes  // record bytes by topic, for the metrics
}

func (s *Server) fetchOnce(c *conn, req *kmsg.FetchRequest) fetchResult {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.SetVersion(req.Version)
	res := fetchResult{resp: resp, files: newFileRanges(resp.IsFlexible(), s.sendfile)}
	replicaID := req.ReplicaID
	if req.Version >= 15 {
		replicaID = req.ReplicaState.ID
	}
	if replicaID >= 0 && (!s.fromBroker(req.UnknownTags) || !c.allowedCluster(opClusterAction)) {
		// Only brokers may read past the high watermark and move the ISR
		// (CVE-2018-1288).
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		res.failed = true
		return res
	}
	img := s.ctrl.Image()
	maxBytes := int64(req.MaxBytes)
	if req.Version < 3 || maxBytes <= 0 {
		maxBytes = 1<<31 - 1
	}
	resp.Topics = make([]kmsg.FetchResponseTopic, 0, len(req.Topics))
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, 0, len(rt.Partitions))
		name := rt.Topic
		unknownID := false
		var sent int64
		if req.Version >= 13 {
			if t, ok := img.ByID[cluster.TopicID(rt.TopicID)]; ok {
				name = t.Name
			} else {
				unknownID = true
			}
		}
		readDenied := replicaID < 0 && !unknownID && !c.allowedTopic(opRead, name)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.RecordBatches = []byte{} // empty, never null, as Kafka: kafka-go fails on a null records field
			sp.Partition, sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = rp.Partition, -1, -1, -1
			sp.PreferredReadReplica = -1
			// A follower serves consumers too (KIP-392), up to its own high
			// watermark, for the fetch versions that carry a rack (v11+).
			var part *replica.Partition
			var perr *kerr.Error
			if replicaID < 0 && req.Version >= 11 {
				part, perr = s.hostedPartition(name, rp.Partition)
			} else {
				part, perr = s.leaderPartition(name, rp.Partition)
			}
			ok := perr == nil
			switch {
			case unknownID:
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case readDenied:
				sp.ErrorCode = topicDenied
			case !ok:
				sp.ErrorCode = perr.Code
			default:
				if code := checkLeaderEpoch(part, rp.CurrentLeaderEpoch); code != nil {
					sp.ErrorCode = code.Code
					break
				}
				upTo := int64(-1)
				if replicaID >= 0 && staleReplicaEpoch(img, req, replicaID) {
					// A fetch from an earlier incarnation of the follower
					// (KIP-903) must not move its state.
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
					break
				}
				if replicaID >= 0 {
					// Checked before anything is read: a broker that is not a
					// replica of the partition in this epoch reads nothing
					// and moves nothing (Kafka's followerReplicaOrThrow).
					isr, code := part.FollowerFetched(replicaID, rp.FetchOffset)
					if code == kerr.NotLeaderForPartition && rp.CurrentLeaderEpoch >= 0 && part.LeaderEpoch() == rp.CurrentLeaderEpoch {
						// The epoch is ours but the replica is not among
						// its replicas: maybe a reassignment this leader
						// has not applied yet, so the follower retries.
						code = kerr.UnknownLeaderEpoch
					}
					if code != nil {
						sp.ErrorCode = code.Code
						break
					}
					s.parts.RequestISRChange(part, isr)
					res.wake = append(res.wake, part.Log.Appended())
				} else {
					upTo = part.HighWatermark()
					res.wake = append(res.wake, part.HWChanged())
				}
				throttled := false
				if replicaID >= 0 {
					var wait time.Duration
					if throttled, wait = s.parts.LeaderThrottled(part, replicaID); wait > 0 {
						// The leader's replication quota is spent: no
						// records for this follower until it is not, which
						// is when the fetch wakes to read again (KIP-73).
						hw := part.HighWatermark()
						sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, hw, s.logStartOffset(part)
						// Capped at the fetch's own wait, past which it
						// answers anyway: a rate of 1 B/s owes days for one
						// batch. The timer is stopped once the fetch is done.
						ch, stop := after(min(wait, time.Duration(req.MaxWaitMillis)*time.Millisecond))
						res.wake, res.stops = append(res.wake, ch), append(res.stops, stop)
						break
					}
				}
				if replicaID >= 0 && req.Version >= 14 && s.movedToTiered(part, rp.FetchOffset) {
					// KIP-405: a follower below the local log start
					// rebuilds its state from remote storage and fetches
					// from here on; it is not served the remote range.
					sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = part.HighWatermark(), part.LastStableOffset(), s.logStartOffset(part)
					sp.ErrorCode = kerr.OffsetMovedToTieredStorage.Code
					break
				}
				n, err := s.readPartition(part, rp, &sp, maxBytes-res.bytes, res.bytes == 0, res.files, upTo, req.IsolationLevel == 1)
				if wake, ok := remoteWait(err); ok {
					res.wake, err = append(res.wake, wake), nil
				}
				if err != nil {
					sp.ErrorCode = kafkaCode(err)
				}
				if throttled {
					s.parts.RecordLeaderThrottled(n)
				}
				res.bytes += n
				sent += n
			}
			if sp.ErrorCode != 0 {
				res.failed = true
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
		if sent > 0 {
			res.out = append(res.out, topicBytes{name, sent})
		}
	}
	if res.files.empty() {
		res.files = nil
	}
	return res
}

// readPartition fills sp with the partition's offsets and the range of
// records from the fetch offset, up to upTo (the high watermark for a
// consumer, -1 for the log end for a follower) and the byte limits. first
// says no records are in the response yet, so the first batch is returned
// whole even when it is larger than the limits (KIP-74).
//
// A read_committed consumer reads up to the last stable offset instead,
// and is told the aborted transactions whose records it may get, which it
// drops (KIP-98).
func (s *Server) readPartition(part *replica.Partition, rp kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition, budget int64, first bool, files *fileRanges, upTo int64, readCommitted bool) (int64, error) {
	hw := part.HighWatermark()
	lso := part.LastStableOffset()
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, lso, s.logStartOffset(part)
	if readCommitted && upTo >= 0 {
		upTo = min(upTo, lso)
		for _, a := range part.AbortedTxns(rp.FetchOffset, upTo) {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
			sp.AbortedTransactions = append(sp.AbortedTransactions, at)
		}
		if sp.AbortedTransactions == nil {
			sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
		}
	}
	limit := min(int64(rp.PartitionMaxBytes), budget)
	if limit <= 0 && !first {
		return 0, nil
	}
	slice, err := part.Log.Read(rp.FetchOffset, log.ReadOptions{MaxBytes: int(max(limit, 0)), MinOneBatch: first, UpTo: upTo})
	if err != nil {
		if errors.Is(err, log.ErrOffsetOutOfRange) && rp.FetchOffset == hw {
			sp.AbortedTransactions = nil
			return 0, nil
		}
		if n, ok, rerr := s.readRemote(part, rp.FetchOffset, limit, first, readCommitted, sp); ok {
			return n, rerr
		}
		return 0, err
	}
	if slice.Size == 0 {
		return 0, nil
	}
	sp.RecordBatches = files.add(slice)
	return slice.Size, nil
}

// staleReplicaEpoch is whether a replica fetch names a broker epoch (Fetch
// v15+ ReplicaState, KIP-903) older than the live broker's registration, as
// Kafka's Replica.updateFetchStateOrThrow refuses it. -1 skips the check;
// Tributary's followers fetch with v12, which carries none.
func staleReplicaEpoch(img *cluster.Image, req *kmsg.FetchRequest, replicaID int32) bool {
	if req.Version < 15 || req.ReplicaState.Epoch == -1 {
		return false
	}
	b, ok := img.Brokers[replicaID]
	return ok && !b.Fenced && b.Epoch > req.ReplicaState.Epoch
}

// checkLeaderEpoch fences a client whose view of the leader is older
// (FENCED_LEADER_EPOCH) or newer (UNKNOWN_LEADER_EPOCH) than ours (KIP-320).
// -1 skips the check.
func checkLeaderEpoch(p *replica.Partition, epoch int32) *kerr.Error {
	cur := p.LeaderEpoch()
	switch {
	case epoch < 0 || epoch == cur:
		return nil
	case epoch < cur:
		return kerr.FencedLeaderEpoch
	default:
		return kerr.UnknownLeaderEpoch
	}
}

// waitAny waits until one of chans is closed or d passes; it reports
// whether a channel fired.
func waitAny(chans []<-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return false
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	if len(chans) == 2 {
		select {
		case <-chans[0]:
			return true
		case <-chans[1]:
			return true
		case <-timer.C:
			return false
		}
	}
	cases := make([]reflect.SelectCase, 0, len(chans)+1)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)})
	for _, ch := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	i, _, _ := reflect.Select(cases)
	return i > 0
}

// after is a channel closed once d has passed, and the timer's Stop.
func after(d time.Duration) (<-chan struct{}, func() bool) {
	ch := make(chan struct{})
	return ch, time.AfterFunc(d, func() { close(ch) }).Stop
}

// stopTimers stops the timers of a read that is answered or read again.
func (f *fetchResult) stopTimers() {
	for _, stop := range f.stops {
		stop()
	}
	f.stops = nil
}
