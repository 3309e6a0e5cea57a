package server

import (
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionFetch is a consumer's Fetch v11 of topic's partitions from the
// given offsets (none for an incremental fetch that changes nothing), in
// session id at epoch, forgetting the partitions in forget.
func sessionFetch(t *testing.T, s *Server, topic string, id, epoch int32, offsets map[int32]int64, forget ...int32) *kmsg.FetchResponse {
	t.Helper()
	return sessionFetchMax(t, s, topic, id, epoch, 1<<20, offsets, forget...)
}

// sessionFetchMax is sessionFetch with the response's byte limit.
func sessionFetchMax(t *testing.T, s *Server, topic string, id, epoch, maxBytes int32, offsets map[int32]int64, forget ...int32) *kmsg.FetchResponse {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 0, maxBytes
	req.SessionID, req.SessionEpoch = id, epoch
	if len(offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		// In partition order: the order of a request is the session's
		// read order, which TestFetchSessionRotatesPartitions checks.
		for _, p := range slices.Sorted(maps.Keys(offsets)) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, offsets[p], 1<<20, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.Partitions = topic, forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return admSend[*kmsg.FetchResponse](t, s, req, 11)
}

// answeredPartitions is each partition in resp with its record bytes.
func answeredPartitions(resp *kmsg.FetchResponse) map[int32]int {
	got := map[int32]int{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			got[rp.Partition] = len(rp.RecordBatches)
		}
	}
	return got
}

// A full fetch names a session id with epoch -1 (close it, no new one) or 0
// (open one); either way the answer has the data, and epoch 0 opens a
// session. kafka-go's Client.Fetch sends id -1, epoch -1. An incremental
// fetch (epoch > 0) must name a session that exists.
func TestFetchSessionEpochs(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "sessions", 1, nil)
	admProduce(t, admClient(t, s), "sessions", 0, 3)
	for _, tc := range []struct {
		id, epoch   int32
		want        *kerr.Error
		wantSession bool
	}{
		{-1, -1, nil, false},
		{0, -1, nil, false},
		{0, 0, nil, true},
		{12345, -1, nil, false},
		{12345, 1, kerr.FetchSessionIDNotFound, false},
	} {
		resp := sessionFetch(t, s, "sessions", tc.id, tc.epoch, map[int32]int64{0: 0})
		if tc.want != nil {
			if resp.ErrorCode != tc.want.Code || len(resp.Topics) != 0 {
				t.Errorf("session %d epoch %d: error %v with %d topics, want %v and none", tc.id, tc.epoch, kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics), tc.want)
			}
			continue
		}
		if resp.ErrorCode != 0 || answeredPartitions(resp)[0] == 0 {
			t.Errorf("session %d epoch %d: want the records, got error %v, %d topics", tc.id, tc.epoch, kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
		}
		if opened := resp.SessionID != 0; opened != tc.wantSession {
			t.Errorf("session %d epoch %d: the answer names session %d", tc.id, tc.epoch, resp.SessionID)
		}
	}
}

// In a session, a consumer names only the partitions whose position
// changed, and the answer carries only the partitions with news (records,
// a new high watermark); a stale epoch is refused, a forgotten partition
// leaves the session, and epoch -1 closes it.
func TestFetchSessionIncremental(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "inc", 2, nil)
	cl := admClient(t, s)
	admProduce(t, cl, "inc", 0, 3)

	full := sessionFetch(t, s, "inc", 0, 0, map[int32]int64{0: 0, 1: 0})
	id := full.SessionID
	if id == 0 || len(answeredPartitions(full)) != 2 || answeredPartitions(full)[0] == 0 {
		t.Fatalf("opening fetch: session %d, partitions %v; want a session and both partitions, 0 with records", id, answeredPartitions(full))
	}
	if got := answeredPartitions(sessionFetch(t, s, "inc", id, 1, map[int32]int64{0: 3})); len(got) != 0 {
		t.Fatalf("nothing new, yet the incremental answer has partitions %v", got)
	}
	admProduce(t, cl, "inc", 1, 2)
	got := answeredPartitions(sessionFetch(t, s, "inc", id, 2, nil))
	if len(got) != 1 || got[1] == 0 {
		t.Fatalf("after records reached partition 1, which the fetch did not name: answered %v, want partition 1 with records", got)
	}
	if resp := sessionFetch(t, s, "inc", id, 2, nil); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("epoch 2 again: error %v, want INVALID_FETCH_SESSION_EPOCH", kerr.ErrorForCode(resp.ErrorCode))
	}
	if got := answeredPartitions(sessionFetch(t, s, "inc", id, 3, map[int32]int64{1: 2}, 0)); len(got) != 0 {
		t.Fatalf("after forgetting partition 0: answered %v", got)
	}
	admProduce(t, cl, "inc", 0, 1)
	if got := answeredPartitions(sessionFetch(t, s, "inc", id, 4, nil)); len(got) != 0 {
		t.Fatalf("records reached the forgotten partition 0, and the session answered %v", got)
	}
	sessionFetch(t, s, "inc", id, -1, map[int32]int64{0: 0})
	if resp := sessionFetch(t, s, "inc", id, 5, nil); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("after closing the session: error %v, want FETCH_SESSION_ID_NOT_FOUND", kerr.ErrorForCode(resp.ErrorCode))
	}
}

// When the response's byte limit leaves partitions out, the next fetch of
// the session reads the left-out ones first: a partition that returned
// records goes to the end of the read order, so a busy partition does not
// starve the others.
func TestFetchSessionRotatesPartitions(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "fair", 2, nil)
	cl := admClient(t, s)
	for range 3 { // three batches in each partition
		admProduce(t, cl, "fair", 0, 2)
		admProduce(t, cl, "fair", 1, 2)
	}
	// A limit of one byte returns one batch (KIP-74), of the first
	// partition read.
	full := sessionFetchMax(t, s, "fair", 0, 0, 1, map[int32]int64{0: 0, 1: 0})
	if got := answeredPartitions(full); got[0] == 0 || got[1] != 0 {
		t.Fatalf("first fetch: record bytes by partition %v, want partition 0 only", got)
	}
	next := sessionFetchMax(t, s, "fair", full.SessionID, 1, 1, map[int32]int64{0: 2})
	if got := answeredPartitions(next); got[1] == 0 || got[0] != 0 {
		t.Fatalf("second fetch: record bytes by partition %v, want partition 1, which the first left out", got)
	}
}

// With max.incremental.fetch.session.cache.slots=0 the broker hands out no
// sessions, and with every slot taken by a recent session a newcomer gets a
// full fetch without one.
func TestFetchSessionSlots(t *testing.T) {
	s := startAdminBroker(t, map[string]string{"max.incremental.fetch.session.cache.slots": "0"})
	admCreateTopic(t, s, "slots", 1, nil)
	if resp := sessionFetch(t, s, "slots", 0, 0, map[int32]int64{0: 0}); resp.SessionID != 0 || resp.ErrorCode != 0 {
		t.Fatalf("no slots, yet session %d (error %v)", resp.SessionID, kerr.ErrorForCode(resp.ErrorCode))
	}
	s = startAdminBroker(t, map[string]string{"max.incremental.fetch.session.cache.slots": "1"})
	admCreateTopic(t, s, "slots", 1, nil)
	if resp := sessionFetch(t, s, "slots", 0, 0, map[int32]int64{0: 0}); resp.SessionID == 0 {
		t.Fatal("the one slot was not used")
	}
	if resp := sessionFetch(t, s, "slots", 0, 0, map[int32]int64{0: 0}); resp.SessionID != 0 || resp.ErrorCode != 0 {
		t.Fatalf("the only slot is in use, yet a second session %d (error %v)", resp.SessionID, kerr.ErrorForCode(resp.ErrorCode))
	}
}
