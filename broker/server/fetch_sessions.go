package server

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch sessions (KIP-227) let a consumer name, in each fetch after the
// first, only the partitions whose fetch position changed, and let the
// broker leave out of its answer the partitions with nothing new. A
// consumer of many partitions then sends and receives a few bytes per
// idle partition instead of tens.
//
// The broker keeps, per session, every partition's fetch position and byte
// limit as last sent, and the high watermark and log start offset as last
// answered. The epochs: -1 is a full fetch outside any session (and closes
// the one named), 0 a full fetch that opens a new session, and n > 0 the
// n-th incremental fetch of an open one.
type fetchSessions struct {
	mu       sync.Mutex
	sessions map[int32]*fetchSession
	slots    int
}

// Sessions used within this long are never evicted for a new one: a busy
// broker answers full fetches to newcomers instead, as Kafka does (its
// eviction time is fixed too).
const keepFetchSession = 2 * time.Minute

// fetchSessionKey is a session partition as the client names it: by topic
// name below Fetch v13, by topic ID from v13.
type fetchSessionKey struct {
	topic     string
	id        [16]byte
	partition int32
}

type fetchSessionPartition struct {
	fetchOffset, logStartOffset  int64
	maxBytes, currentLeaderEpoch int32
	lastFetchedEpoch             int32
	// As last answered; -1 forces the partition into the next answer.
	highWatermark, answeredStart int64
}

type fetchSession struct {
	id        int32
	mu        sync.Mutex
	nextEpoch int32
	lastUsed  time.Time
	parts     map[fetchSessionKey]*fetchSessionPartition
	// order is the order partitions are read in; a partition that
	// returned records moves to the end, so that a byte limit does not
	// starve the same partitions every time.
	order []fetchSessionKey
}

func newFetchSessions(slots int) *fetchSessions {
	return &fetchSessions{sessions: map[int32]*fetchSession{}, slots: slots}
}

// resolve applies req to the session it names and returns the partitions
// to read: req itself for a fetch outside a session or opening one, every
// partition of the session for an incremental fetch. session is nil for a
// fetch outside a session; code is the error of a session that cannot be
// used.
func (fs *fetchSessions) resolve(req *kmsg.FetchRequest) (eff *kmsg.FetchRequest, session *fetchSession, incremental bool, code *kerr.Error) {
	if req.Version < 7 || req.ReplicaID >= 0 || req.Version >= 15 && req.ReplicaState.ID >= 0 {
		return req, nil, false, nil // replica fetches: our followers ask for no session
	}
	switch {
	case req.SessionEpoch == -1:
		if req.SessionID > 0 {
			fs.remove(req.SessionID)
		}
		return req, nil, false, nil
	case req.SessionEpoch == 0:
		if req.SessionID > 0 {
			fs.remove(req.SessionID)
		}
		s := fs.create()
		if s == nil {
			return req, nil, false, nil // no slot free: a full fetch, session id 0
		}
		s.mu.Lock()
		s.apply(req)
		s.mu.Unlock()
		return req, s, false, nil
	}
	fs.mu.Lock()
	s := fs.sessions[req.SessionID]
	if s != nil {
		s.lastUsed = time.Now()
	}
	fs.mu.Unlock()
	if s == nil {
		return nil, nil, false, kerr.FetchSessionIDNotFound
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.SessionEpoch != s.nextEpoch {
		return nil, nil, false, kerr.InvalidFetchSessionEpoch
	}
	// The epoch moves at once, as in Kafka, so that a second fetch with
	// the same epoch is refused even while the first waits.
	if s.nextEpoch++; s.nextEpoch <= 0 {
		s.nextEpoch = 1
	}
	s.apply(req)
	return s.request(req), s, true, nil
}

func (fs *fetchSessions) remove(id int32) {
	fs.mu.Lock()
	delete(fs.sessions, id)
	fs.mu.Unlock()
}

// open is the number of open sessions.
func (fs *fetchSessions) open() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.sessions)
}

// create makes a new session, evicting the one used longest ago if every
// slot is taken and it has been idle for keepFetchSession; nil if none can be had.
func (fs *fetchSessions) create() *fetchSession {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	now := time.Now()
	if len(fs.sessions) >= fs.slots {
		var oldest *fetchSession
		for _, s := range fs.sessions {
			if oldest == nil || s.lastUsed.Before(oldest.lastUsed) {
				oldest = s
			}
		}
		if oldest == nil || now.Sub(oldest.lastUsed) < keepFetchSession {
			return nil
		}
		delete(fs.sessions, oldest.id)
	}
	s := &fetchSession{nextEpoch: 1, lastUsed: now, parts: map[fetchSessionKey]*fetchSessionPartition{}}
	for s.id == 0 || fs.sessions[s.id] != nil {
		s.id = rand.Int32N(1<<31 - 1)
	}
	fs.sessions[s.id] = s
	return s
}

// apply adds or updates the partitions req names and drops the forgotten
// ones. s.mu is held.
func (s *fetchSession) apply(req *kmsg.FetchRequest) {
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			k := fetchSessionKey{ft.Topic, ft.TopicID, p}
			if _, ok := s.parts[k]; ok {
				delete(s.parts, k)
				s.order = slices.DeleteFunc(s.order, func(o fetchSessionKey) bool { return o == k })
			}
		}
	}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			k := fetchSessionKey{rt.Topic, rt.TopicID, rp.Partition}
			sp, ok := s.parts[k]
			if !ok {
				sp = &fetchSessionPartition{highWatermark: -1, answeredStart: -1}
				s.parts[k] = sp
				s.order = append(s.order, k)
			}
			sp.fetchOffset, sp.logStartOffset, sp.maxBytes = rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes
			sp.currentLeaderEpoch, sp.lastFetchedEpoch = rp.CurrentLeaderEpoch, rp.LastFetchedEpoch
		}
	}
}

// moveToEnd moves the partitions of returned, which are in s.order, to its
// end, in place: this runs for every fetch that returned records.
func (s *fetchSession) moveToEnd(returned []fetchSessionKey) {
	moved := func(k fetchSessionKey) bool { return slices.Contains(returned, k) }
	if len(returned) > 8 {
		// One pass, not one per partition: a session may hold thousands.
		set := make(map[fetchSessionKey]bool, len(returned))
		for _, k := range returned {
			set[k] = true
		}
		moved = func(k fetchSessionKey) bool { return set[k] }
	}
	kept := s.order[:0]
	for _, k := range s.order {
		if !moved(k) {
			kept = append(kept, k)
		}
	}
	s.order = append(kept, returned...)
}

// request is req with every partition of the session, in s.order. s.mu is
// held.
func (s *fetchSession) request(req *kmsg.FetchRequest) *kmsg.FetchRequest {
	eff := *req
	eff.Topics = nil
	eff.ForgottenTopics = nil
	// One array holds every topic's partitions: this runs for every fetch.
	all := make([]kmsg.FetchRequestTopicPartition, 0, len(s.order))
	from := 0
	endTopic := func() {
		if n := len(eff.Topics); n > 0 {
			eff.Topics[n-1].Partitions = all[from:len(all):len(all)]
			from = len(all)
		}
	}
	for _, k := range s.order {
		sp := s.parts[k]
		if n := len(eff.Topics); n == 0 || eff.Topics[n-1].Topic != k.topic || eff.Topics[n-1].TopicID != k.id {
			endTopic()
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = k.topic, k.id
			eff.Topics = append(eff.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes = k.partition, sp.fetchOffset, sp.logStartOffset, sp.maxBytes
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = sp.currentLeaderEpoch, sp.lastFetchedEpoch
		all = append(all, rp)
	}
	endTopic()
	return &eff
}

// answered records what resp tells the client of each partition and, for
// an incremental fetch, leaves out of resp the partitions it tells nothing
// new: no records, no error, the same high watermark and log start offset.
// It moves partitions that returned records to the end of the read order
// and names the session in resp.
func (s *fetchSession) answered(resp *kmsg.FetchResponse, incremental bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp.SessionID = s.id
	var returned []fetchSessionKey
	topics := resp.Topics[:0]
	for _, rt := range resp.Topics {
		parts := rt.Partitions[:0]
		for _, rp := range rt.Partitions {
			k := fetchSessionKey{rt.Topic, rt.TopicID, rp.Partition}
			sp := s.parts[k]
			news := sp == nil || len(rp.RecordBatches) > 0 || rp.ErrorCode != 0 ||
				rp.HighWatermark != sp.highWatermark || rp.LogStartOffset != sp.answeredStart
			if sp != nil {
				sp.highWatermark, sp.answeredStart = rp.HighWatermark, rp.LogStartOffset
				if rp.ErrorCode != 0 {
					sp.highWatermark, sp.answeredStart = -1, -1
				}
				if len(rp.RecordBatches) > 0 {
					returned = append(returned, k)
				}
			}
			if news || !incremental {
				parts = append(parts, rp)
			}
		}
		if rt.Partitions = parts; len(parts) > 0 || !incremental {
			topics = append(topics, rt)
		}
	}
	resp.Topics = topics
	if len(returned) > 0 {
		s.moveToEnd(returned)
	}
}
