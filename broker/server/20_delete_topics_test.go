package server

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func deleteByName(names ...string) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 10000
	req.TopicNames = names
	for _, n := range names {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = strPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func TestDeleteTopicsEveryVersion(t *testing.T) {
	dir := t.TempDir()
	s := startAdminBroker(t, map[string]string{"log.dirs": dir})
	cl := admClient(t, s)
	for v := int16(1); v <= 6; v++ {
		name := fmt.Sprintf("doomed-v%d", v)
		id := admCreateTopic(t, s, name, 2, nil)
		admProduce(t, cl, name, 1, 10)
		if _, err := os.Stat(filepath.Join(dir, name+"-1")); err != nil {
			t.Fatalf("partition dir before deletion: %v", err)
		}
		resp := admSend[*kmsg.DeleteTopicsResponse](t, s, deleteByName(name), v)
		if len(resp.Topics) != 1 {
			t.Fatalf("v%d: %d results", v, len(resp.Topics))
		}
		st := resp.Topics[0]
		admWantCode(t, fmt.Sprintf("v%d", v), st.ErrorCode, st.ErrorMessage, nil)
		if st.Topic == nil || *st.Topic != name {
			t.Errorf("v%d: answered for %s", v, admShow(st.Topic))
		}
		if v >= 6 && st.TopicID != id {
			t.Errorf("v6: topic id %x, want %x", st.TopicID, id)
		}
		if _, ok := s.ctrl.Image().Topics[name]; ok {
			t.Errorf("v%d: %s is still in the metadata", v, name)
		}
		if mt := admMetadata(t, s, name); mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("v%d: Metadata after deletion: %v", v, kerr.ErrorForCode(mt.ErrorCode))
		}
		for p := range 2 {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%s-%d", name, p))); !os.IsNotExist(err) {
				t.Errorf("v%d: partition %d's log dir is still there (%v)", v, p, err)
			}
			if _, ok := s.parts.Get(name, int32(p)); ok {
				t.Errorf("v%d: partition %d is still hosted", v, p)
			}
		}
	}
}

func TestDeleteTopicsErrors(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "kept", 1, nil)
	twice := admCreateTopic(t, s, "twice", 1, nil)
	admCreateTopic(t, s, "gone", 1, nil)

	// v5: by name only.
	resp := admSend[*kmsg.DeleteTopicsResponse](t, s, deleteByName("missing", "kept", "kept", "gone"), 5)
	want := []struct {
		topic string
		err   *kerr.Error
	}{{"missing", kerr.UnknownTopicOrPartition}, {"kept", kerr.InvalidRequest}, {"kept", kerr.InvalidRequest}, {"gone", nil}}
	if len(resp.Topics) != len(want) {
		t.Fatalf("%d results, want %d", len(resp.Topics), len(want))
	}
	for i, w := range want {
		st := resp.Topics[i]
		if *st.Topic != w.topic {
			t.Errorf("result %d is for %s, want %s", i, *st.Topic, w.topic)
		}
		admWantCode(t, "v5 "+w.topic, st.ErrorCode, st.ErrorMessage, w.err)
	}
	admWantMessage(t, "duplicate", resp.Topics[1].ErrorMessage, "kept", "more than once")
	if _, ok := s.ctrl.Image().Topics["kept"]; !ok {
		t.Error("a topic listed twice was deleted")
	}

	// v6: by id, and the malformed entries.
	req := kmsg.NewPtrDeleteTopicsRequest()
	ref := func(name *string, id [16]byte) {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic, rt.TopicID = name, id
		req.Topics = append(req.Topics, rt)
	}
	unknownID := [16]byte{1, 2, 3}
	ref(nil, unknownID)
	ref(strPtr("kept"), twice) // both
	ref(nil, [16]byte{})       // neither
	ref(nil, twice)
	ref(strPtr("twice"), [16]byte{}) // the same topic by name
	r6 := admSend[*kmsg.DeleteTopicsResponse](t, s, req, 6)
	wantCodes := []*kerr.Error{kerr.UnknownTopicID, kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidRequest}
	for i, w := range wantCodes {
		admWantCode(t, fmt.Sprintf("v6 entry %d", i), r6.Topics[i].ErrorCode, r6.Topics[i].ErrorMessage, w)
	}
	admWantMessage(t, "both", r6.Topics[1].ErrorMessage, "both topic name and topic id")
	admWantMessage(t, "neither", r6.Topics[2].ErrorMessage, "neither topic name nor id")
	if r6.Topics[0].Topic != nil {
		t.Errorf("unknown id answered with name %s", admShow(r6.Topics[0].Topic))
	}
	if _, ok := s.ctrl.Image().Topics["twice"]; !ok {
		t.Error("a topic named both by id and by name was deleted")
	}

	// By id alone it goes, and the answer names it.
	req.Topics = nil
	ref(nil, twice)
	r6 = admSend[*kmsg.DeleteTopicsResponse](t, s, req, 6)
	if st := r6.Topics[0]; st.ErrorCode != 0 || st.Topic == nil || *st.Topic != "twice" || st.TopicID != twice {
		t.Errorf("delete by id: %v %s %x", kerr.ErrorForCode(st.ErrorCode), admShow(st.Topic), st.TopicID)
	}

	// A deleted name can be created again, as a new topic with an empty log.
	cl := admClient(t, s)
	admProduce(t, cl, "kept", 0, 5)
	admSend[*kmsg.DeleteTopicsResponse](t, s, deleteByName("kept"), 6)
	id := admCreateTopic(t, s, "kept", 1, nil)
	p, ok := s.parts.Get("kept", 0)
	if !ok {
		t.Fatal("recreated topic is not hosted")
	}
	if p.TopicID != id || p.Log.LogEndOffset() != 0 {
		t.Errorf("recreated topic: id %x (want %x), log end %d", p.TopicID, id, p.Log.LogEndOffset())
	}
}

func TestDeleteTopicsDisabled(t *testing.T) {
	s := startAdminBroker(t, map[string]string{"delete.topic.enable": "false"})
	admCreateTopic(t, s, "precious", 1, nil)
	for v, want := range map[int16]*kerr.Error{1: kerr.InvalidRequest, 2: kerr.InvalidRequest, 3: kerr.TopicDeletionDisabled, 6: kerr.TopicDeletionDisabled} {
		resp := admSend[*kmsg.DeleteTopicsResponse](t, s, deleteByName("precious", "missing"), v)
		for _, st := range resp.Topics {
			admWantCode(t, fmt.Sprintf("v%d %s", v, *st.Topic), st.ErrorCode, st.ErrorMessage, want)
		}
	}
	if _, ok := s.ctrl.Image().Topics["precious"]; !ok {
		t.Error("deleted with delete.topic.enable=false")
	}
}
