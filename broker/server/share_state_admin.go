package server

import (
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/share"
)

// The administrators' view of share-partition state (Describe, Alter and
// DeleteShareGroupOffsets, DeleteGroups): read and written at the share
// coordinators, the leaders of the __share_group_state partitions the keys
// hash to, as Kafka's group coordinator does through its persister
// (ReadShareGroupStateSummary, InitializeShareGroupState,
// DeleteShareGroupState), never from the memory of the brokers that lead
// the topic partitions. One request per share coordinator, sent in
// parallel.

// shareSummary is a share partition's state as administrators see it
// (Kafka's ReadShareGroupStateSummary answer).
type shareSummary struct {
	StateEpoch  int32
	LeaderEpoch int32
	StartOffset int64
	// Complete counts the acknowledged and archived records above the
	// start offset (Kafka's DeliveryCompleteCount), which a share group
	// has no more to do with.
	Complete int32
}

func summaryOf(s share.Snapshot) shareSummary {
	out := shareSummary{StateEpoch: s.StateEpoch, LeaderEpoch: s.LeaderEpoch, StartOffset: s.StartOffset}
	for _, b := range s.Batches {
		if b.State == share.Acknowledged || b.State == share.Archived {
			out.Complete += int32(b.Last - b.First + 1)
		}
	}
	return out
}

// byCoordinator groups keys by the broker leading their state partition;
// a key whose state partition has no leader gets COORDINATOR_NOT_AVAILABLE
// in errs. With create false and no state topic yet, nothing has state:
// both results are empty.
func (st *shareState) byCoordinator(keys []share.Key, create bool, errs map[share.Key]*kerr.Error) map[int32][]share.Key {
	out := map[int32][]share.Key{}
	if len(keys) == 0 {
		return out
	}
	if _, ok := st.s.ctrl.Image().Topics[shareStateTopic]; !ok && !create {
		return out
	}
	n, err := st.ensureTopic()
	if err != nil {
		for _, k := range keys {
			errs[k] = kerr.CoordinatorNotAvailable
		}
		return out
	}
	t := st.s.ctrl.Image().Topics[shareStateTopic]
	for _, k := range keys {
		p := partitionFor(k, n)
		if int(p) >= len(t.Partitions) || t.Partitions[p].Leader < 0 {
			errs[k] = kerr.CoordinatorNotAvailable
			continue
		}
		out[t.Partitions[p].Leader] = append(out[t.Partitions[p].Leader], k)
	}
	return out
}

// fanOut runs one persister call over one group's keys: each share
// coordinator's keys in parallel, served by local on this broker and, on
// another, by the request of request, whose answer answers walks key by
// key. What each key yields (v) is kept in the first map, its error in
// the second; a key a coordinator's answer leaves out is
// COORDINATOR_NOT_AVAILABLE, and a call that failed fails all its keys.
// create says to create the state topic if it does not exist yet.
func fanOut[V any](st *shareState, group string, keys []share.Key, create bool,
	local func(k share.Key) (V, bool, *kerr.Error),
	request func(keys []share.Key) kmsg.Request,
	answers func(r kmsg.Response, add func(k share.Key, code int16, v V, ok bool))) (map[share.Key]V, map[share.Key]*kerr.Error) {
	out, errs := map[share.Key]V{}, map[share.Key]*kerr.Error{}
	var mu sync.Mutex
	eachCoordinator(st.byCoordinator(keys, create, errs), func(leader int32, keys []share.Key) {
		if leader == st.s.nodeID {
			for _, k := range keys {
				v, ok, e := local(k)
				mu.Lock()
				if e != nil {
					errs[k] = e
				} else if ok {
					out[k] = v
				}
				mu.Unlock()
			}
			return
		}
		r, err := st.remote(leader, request(keys))
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			for _, k := range keys {
				errs[k] = asKerr(err)
			}
			return
		}
		answered := map[share.Key]bool{}
		answers(r, func(k share.Key, code int16, v V, ok bool) {
			k.Group = group
			answered[k] = true
			if code != 0 {
				errs[k] = asKerr(kerr.ErrorForCode(code))
			} else if ok {
				out[k] = v
			}
		})
		for _, k := range keys {
			if !answered[k] {
				errs[k] = kerr.CoordinatorNotAvailable
			}
		}
	})
	return out, errs
}

// eachCoordinator runs fn for each broker's keys, in parallel; fn's
// results go to shared maps under the caller's lock.
func eachCoordinator(groups map[int32][]share.Key, fn func(leader int32, keys []share.Key)) {
	var wg sync.WaitGroup
	for leader, keys := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(leader, keys)
		}()
	}
	wg.Wait()
}

// asKerr is err as a Kafka error (COORDINATOR_NOT_AVAILABLE when it is
// none).
func asKerr(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.CoordinatorNotAvailable
}

// byTopic groups one group's keys by topic id, as the persister requests
// name them.
func byTopic(keys []share.Key) map[[16]byte][]int32 {
	out := map[[16]byte][]int32{}
	for _, k := range keys {
		out[k.Topic] = append(out[k.Topic], k.Partition)
	}
	return out
}

// retriable says whether a share coordinator's error may pass by itself:
// the state topic was just created, its partition is loading or moving.
func retriable(e *kerr.Error) bool {
	return e == kerr.NotCoordinator || e == kerr.CoordinatorLoadInProgress || e == kerr.CoordinatorNotAvailable
}

// retrying runs op on keys, then again on the keys that failed with a
// retriable error, until none do or shareStateTimeout has passed (as
// Kafka's persister retries its share coordinator lookups).
func (st *shareState) retrying(keys []share.Key, op func(keys []share.Key) map[share.Key]*kerr.Error) map[share.Key]*kerr.Error {
	errs := map[share.Key]*kerr.Error{}
	deadline := time.Now().Add(shareStateTimeout)
	for backoff := 50 * time.Millisecond; len(keys) > 0; backoff = min(2*backoff, time.Second) {
		failed := op(keys)
		keys = keys[:0:0]
		for k, e := range failed {
			errs[k] = e
			if retriable(e) {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 || time.Now().Add(backoff).After(deadline) {
			break
		}
		select {
		case <-time.After(backoff):
		case <-st.stop:
			return errs
		}
		for _, k := range keys {
			delete(errs, k)
		}
	}
	return errs
}

// Summaries reads the state of keys (all of one group): found ones are in
// the first map, failures in the last; a key in neither has no state.
// next holds, for keys without state whose state was deleted, the state
// epoch a new state must start at: a reset after a delete never reuses
// one of the deleted state's epochs (review M2).
func (st *shareState) Summaries(group string, keys []share.Key) (found map[share.Key]shareSummary, next map[share.Key]int32, errs map[share.Key]*kerr.Error) {
	found, next = map[share.Key]shareSummary{}, map[share.Key]int32{}
	errs = st.retrying(keys, func(keys []share.Key) map[share.Key]*kerr.Error {
		f, n, errs := st.summariesOnce(group, keys)
		for k, s := range f {
			found[k] = s
		}
		for k, e := range n {
			next[k] = e
		}
		return errs
	})
	return found, next, errs
}

// summaryOrNext is what a summary read says of a key: its state, or
// (deleted) the state epoch a new state starts at.
type summaryOrNext struct {
	summary shareSummary
	found   bool
	next    int32
}

func (st *shareState) summariesOnce(group string, keys []share.Key) (map[share.Key]shareSummary, map[share.Key]int32, map[share.Key]*kerr.Error) {
	read, errs := fanOut(st, group, keys, false,
		func(k share.Key) (summaryOrNext, bool, *kerr.Error) {
			p, e := st.localPartition(k)
			if e != nil {
				return summaryOrNext{}, false, e
			}
			s, found, err := st.readLocal(p, k)
			if err != nil {
				return summaryOrNext{}, false, asKerr(err)
			}
			return summaryOrNext{summaryOf(s), found, s.StateEpoch}, found || s.StateEpoch > 0, nil
		},
		func(keys []share.Key) kmsg.Request {
			req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
			req.SetVersion(1)
			st.secret(&req.UnknownTags)
			req.GroupID = group
			for id, parts := range byTopic(keys) {
				rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
				rt.TopicID = id
				for _, p := range parts {
					rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
					rp.Partition, rp.LeaderEpoch = p, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
			}
			return req
		},
		func(r kmsg.Response, add func(share.Key, int16, summaryOrNext, bool)) {
			for _, rt := range r.(*kmsg.ReadShareGroupStateSummaryResponse).Topics {
				for _, rp := range rt.Partitions {
					k := share.Key{Topic: rt.TopicID, Partition: rp.Partition}
					switch {
					case rp.ErrorCode != 0:
						add(k, rp.ErrorCode, summaryOrNext{}, false)
					case rp.StartOffset != -1: // -1: no state, as between our brokers for ReadShareGroupState; share.StartUnset: initialized
						add(k, 0, summaryOrNext{summary: shareSummary{StateEpoch: rp.StateEpoch, LeaderEpoch: rp.LeaderEpoch, StartOffset: rp.StartOffset, Complete: rp.DeliveryCompleteCount}, found: true}, true)
					case rp.StateEpoch > 0: // deleted: the epoch a new state starts at
						add(k, 0, summaryOrNext{next: rp.StateEpoch}, true)
					default:
						add(k, 0, summaryOrNext{}, false)
					}
				}
			}
		})
	found, next := map[share.Key]shareSummary{}, map[share.Key]int32{}
	for k, v := range read {
		if v.found {
			found[k] = v.summary
		} else {
			next[k] = v.next
		}
	}
	return found, next, errs
}

// shareInit is an administrator's new start for a share partition: its
// state is replaced by one at start with nothing in flight, at state
// epoch epoch (one past the stored one), which fences the copy a
// partition leader still holds.
type shareInit struct {
	Epoch int32
	Start int64
	// CreateOnly is the group coordinator's initialization of a share
	// partition its assignment first includes: the state is created, at
	// a start offset the partition leader picks (share.StartUnset), only
	// if it has none; Epoch and Start are not used.
	CreateOnly bool
}

// Initialize writes inits (all of one group) and returns the keys that
// failed.
func (st *shareState) Initialize(group string, inits map[share.Key]shareInit) map[share.Key]*kerr.Error {
	keys := make([]share.Key, 0, len(inits))
	for k := range inits {
		keys = append(keys, k)
	}
	return st.retrying(keys, func(keys []share.Key) map[share.Key]*kerr.Error { return st.initializeOnce(group, keys, inits) })
}

func (st *shareState) initializeOnce(group string, keys []share.Key, inits map[share.Key]shareInit) map[share.Key]*kerr.Error {
	_, errs := fanOut(st, group, keys, true,
		func(k share.Key) (struct{}, bool, *kerr.Error) { return struct{}{}, false, st.initLocal(k, inits[k]) },
		func(keys []share.Key) kmsg.Request {
			req := kmsg.NewPtrInitializeShareGroupStateRequest()
			req.SetVersion(0)
			st.secret(&req.UnknownTags)
			req.GroupID = group
			for id, parts := range byTopic(keys) {
				rt := kmsg.NewInitializeShareGroupStateRequestTopic()
				rt.TopicID = id
				for _, p := range parts {
					in := inits[share.Key{Group: group, Topic: id, Partition: p}]
					rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
					rp.Partition, rp.StateEpoch, rp.StartOffset = p, in.Epoch, in.Start
					if in.CreateOnly {
						rp.StateEpoch, rp.StartOffset = 0, -1 // as Kafka's coordinator sends it
						rp.UnknownTags.Set(shareCreateTag, []byte{1})
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
			}
			return req
		},
		func(r kmsg.Response, add func(share.Key, int16, struct{}, bool)) {
			for _, rt := range r.(*kmsg.InitializeShareGroupStateResponse).Topics {
				for _, rp := range rt.Partitions {
					add(share.Key{Topic: rt.TopicID, Partition: rp.Partition}, rp.ErrorCode, struct{}{}, false)
				}
			}
		})
	return errs
}

// initLocal serves an initialization at this share coordinator: an epoch
// older than the stored one is FENCED_STATE_EPOCH (another reset came
// first), as Kafka's share coordinator refuses it; an equal one is a retry
// of this reset, whose first attempt may have landed (review M3).
func (st *shareState) initLocal(k share.Key, in shareInit) *kerr.Error {
	if st.previousVersion && in.CreateOnly {
		// It did not know the tag, and got StartOffset -1.
		in.CreateOnly, in.Start = false, -1
	}
	if in.Start < 0 && !in.CreateOnly {
		return kerr.InvalidRequest
	}
	p, e := st.localPartition(k)
	if e != nil {
		return e
	}
	if in.CreateOnly {
		return st.writeLocal(p, k, &share.Snapshot{LeaderEpoch: -1, StartOffset: share.StartUnset}, writeCreateOnly)
	}
	return st.writeLocal(p, k, &share.Snapshot{StateEpoch: in.Epoch, LeaderEpoch: -1, StartOffset: in.Start}, writeReset)
}

// Delete deletes the state of keys (all of one group) and returns the
// keys that failed.
func (st *shareState) Delete(group string, keys []share.Key) map[share.Key]*kerr.Error {
	return st.retrying(keys, func(keys []share.Key) map[share.Key]*kerr.Error { return st.deleteOnce(group, keys) })
}

func (st *shareState) deleteOnce(group string, keys []share.Key) map[share.Key]*kerr.Error {
	_, errs := fanOut(st, group, keys, false,
		func(k share.Key) (struct{}, bool, *kerr.Error) {
			p, e := st.localPartition(k)
			if e == nil {
				e = st.writeLocal(p, k, nil, writeLeader)
			}
			return struct{}{}, false, e
		},
		func(keys []share.Key) kmsg.Request {
			req := kmsg.NewPtrDeleteShareGroupStateRequest()
			req.SetVersion(0)
			st.secret(&req.UnknownTags)
			req.GroupID = group
			for id, parts := range byTopic(keys) {
				rt := kmsg.NewDeleteShareGroupStateRequestTopic()
				rt.TopicID = id
				for _, p := range parts {
					rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
					rp.Partition = p
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
			}
			return req
		},
		func(r kmsg.Response, add func(share.Key, int16, struct{}, bool)) {
			for _, rt := range r.(*kmsg.DeleteShareGroupStateResponse).Topics {
				for _, rp := range rt.Partitions {
					add(share.Key{Topic: rt.TopicID, Partition: rp.Partition}, rp.ErrorCode, struct{}{}, false)
				}
			}
		})
	return errs
}

// handleReadShareGroupStateSummary serves another broker's summary read
// (Kafka's persister RPC 87): a key without state is answered with start
// offset -1, as ReadShareGroupState is between Tributary's brokers.
func (s *Server) handleReadShareGroupStateSummary(c *conn, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	allowed := s.fromBroker(req.UnknownTags) || c.allowedCluster(opClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition, rp.StartOffset, rp.StateEpoch, rp.LeaderEpoch = p.Partition, -1, -1, -1
			k := share.Key{Group: req.GroupID, Topic: t.TopicID, Partition: p.Partition}
			if sp, code := s.shareState.gate(allowed, k); code != 0 {
				rp.ErrorCode = code
			} else if snap, found, err := s.shareState.readLocal(sp, k); err != nil {
				rp.ErrorCode = asKerr(err).Code
			} else if !found && snap.StateEpoch > 0 {
				rp.StateEpoch = snap.StateEpoch // deleted: the epoch a new state starts at
			} else if found {
				sum := summaryOf(snap)
				rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset, rp.DeliveryCompleteCount = sum.StateEpoch, sum.LeaderEpoch, sum.StartOffset, sum.Complete
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// handleInitializeShareGroupState serves another broker's reset of share
// partitions (Kafka's persister RPC 83).
func (s *Server) handleInitializeShareGroupState(c *conn, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	allowed := s.fromBroker(req.UnknownTags) || c.allowedCluster(opClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k := share.Key{Group: req.GroupID, Topic: t.TopicID, Partition: p.Partition}
			if _, code := s.shareState.gate(allowed, k); code != 0 {
				rp.ErrorCode = code
			} else if e := s.shareState.initLocal(k, shareInit{Epoch: p.StateEpoch, Start: p.StartOffset, CreateOnly: createTagged(p.UnknownTags)}); e != nil {
				rp.ErrorCode = e.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// createTagged says a persister request's partition carries
// shareCreateTag.
func createTagged(tags kmsg.Tags) bool {
	found := false
	tags.Each(func(key uint32, _ []byte) { found = found || key == shareCreateTag })
	return found
}

// InitializeNew is the group coordinator's create-only initialization
// of keys (all of group): share.Initializer.
func (st *shareState) InitializeNew(group string, keys []share.Key) map[share.Key]error {
	inits := make(map[share.Key]shareInit, len(keys))
	for _, k := range keys {
		inits[k] = shareInit{CreateOnly: true}
	}
	errs := st.initializeOnce(group, keys, inits)
	var old []share.Key
	for k, e := range errs {
		if e == kerr.InvalidRequest {
			old = append(old, k)
		}
	}
	if len(old) > 0 {
		// A share coordinator of the previous version (a rolling
		// upgrade) refuses StartOffset -1: what it has state for (its
		// leaders created it at first use) is initialized; the rest
		// waits, retried, for its upgrade.
		found, _, _ := st.summariesOnce(group, old)
		for k := range found {
			delete(errs, k)
		}
	}
	out := map[share.Key]error{}
	for k, e := range errs {
		out[k] = e
	}
	return out
}
