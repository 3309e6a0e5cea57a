package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetCommitFetchV10: OffsetCommit and OffsetFetch v10 name topics
// by id (KIP-848): a commit by id is fetched back by id and by name (v9),
// a fetch of every committed topic answers ids, and an unknown id is
// UNKNOWN_TOPIC_ID for each of its partitions while the others commit.
// (Authorization by the names the ids resolve to: acl_matrix_test.go.)
func TestOffsetCommitFetchV10(t *testing.T) {
	s := startAdminBroker(t, nil)
	id := admCreateTopic(t, s, "v10", 2, nil)
	unknown := [16]byte{7, 7, 7}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"g10"}
	admSend[*kmsg.FindCoordinatorResponse](t, s, fc, 4)

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g10", -1
	for _, tid := range [][16]byte{id, unknown} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = tid
		for p := int32(0); p < 2; p++ {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, int64(10+p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		commit.Topics = append(commit.Topics, rt)
	}
	var cr *kmsg.OffsetCommitResponse
	for i := 0; i < 100; i++ { // __consumer_offsets may still be loading
		cr = admSend[*kmsg.OffsetCommitResponse](t, s, commit, 10)
		if c := cr.Topics[0].Partitions[0].ErrorCode; c != kerr.CoordinatorLoadInProgress.Code && c != kerr.CoordinatorNotAvailable.Code && c != kerr.NotCoordinator.Code {
			break
		}
	}
	got := map[[16]byte][]int16{}
	for _, rt := range cr.Topics {
		for _, rp := range rt.Partitions {
			got[rt.TopicID] = append(got[rt.TopicID], rp.ErrorCode)
		}
	}
	if len(cr.Topics) != 2 || len(got[id]) != 2 || got[id][0] != 0 || got[id][1] != 0 ||
		len(got[unknown]) != 2 || got[unknown][0] != kerr.UnknownTopicID.Code || got[unknown][1] != kerr.UnknownTopicID.Code {
		t.Fatalf("OffsetCommit v10: %+v", cr.Topics)
	}

	fetch := func(version int16, topics []kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroup {
		r := kmsg.NewPtrOffsetFetchRequest()
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.Topics = "g10", topics
		r.Groups = append(r.Groups, g)
		resp := admSend[*kmsg.OffsetFetchResponse](t, s, r, version)
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("OffsetFetch v%d: %+v", version, resp.Groups)
		}
		return resp.Groups[0]
	}
	offsets := func(g kmsg.OffsetFetchResponseGroup, want [16]byte, name string) []int64 {
		var out []int64
		for _, rt := range g.Topics {
			if rt.TopicID == want && rt.Topic == name {
				for _, rp := range rt.Partitions {
					out = append(out, rp.Offset)
				}
			}
		}
		return out
	}
	byID := fetch(10, []kmsg.OffsetFetchRequestGroupTopic{{TopicID: id, Partitions: []int32{0, 1}}, {TopicID: unknown, Partitions: []int32{0}}})
	if o := offsets(byID, id, ""); len(o) != 2 || o[0] != 10 || o[1] != 11 {
		t.Errorf("OffsetFetch v10 by id: %+v", byID.Topics)
	}
	for _, rt := range byID.Topics {
		if rt.TopicID == unknown && (len(rt.Partitions) != 1 || rt.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code) {
			t.Errorf("OffsetFetch v10 of an unknown id: %+v", rt)
		}
	}
	if all := fetch(10, nil); len(all.Topics) != 1 || len(offsets(all, id, "")) != 2 {
		t.Errorf("OffsetFetch v10 of every committed topic: %+v", all.Topics)
	}
	if byName := fetch(9, []kmsg.OffsetFetchRequestGroupTopic{{Topic: "v10", Partitions: []int32{1}}}); len(offsets(byName, [16]byte{}, "v10")) != 1 || offsets(byName, [16]byte{}, "v10")[0] != 11 {
		t.Errorf("OffsetFetch v9 by name of a commit made by id: %+v", byName.Topics)
	}
}
