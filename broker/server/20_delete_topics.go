package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
)

// DeleteTopics (KAFKA-330) removes topics by name, or from v6 by topic id.
// The controller commits the removal; the partition manager, applying the
// new image, closes and deletes the partitions' logs, so the answer comes
// after the logs are gone.
//
// As in Kafka's ControllerApis: a name or id listed twice, or an entry
// with both or neither, is refused on its own (INVALID_REQUEST); with
// delete.topic.enable=false every entry gets TOPIC_DELETION_DISABLED
// (INVALID_REQUEST before v3, which has no such code).
func (s *Server) handleDeleteTopics(c *conn, req *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	refs := req.Topics
	if req.Version < 6 {
		refs = make([]kmsg.DeleteTopicsRequestTopic, 0, len(req.TopicNames))
		for _, n := range req.TopicNames {
			refs = append(refs, kmsg.DeleteTopicsRequestTopic{Topic: strPtr(n)})
		}
	}
	if !s.cfg.Bool("delete.topic.enable") {
		code := kerr.TopicDeletionDisabled
		if req.Version < 3 {
			code = kerr.InvalidRequest
		}
		for _, ref := range refs {
			st := deleteTopicResult(ref)
			st.ErrorCode, st.ErrorMessage = code.Code, strPtr("topic deletion is disabled (delete.topic.enable=false)")
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	names, ids := map[string]int{}, map[[16]byte]int{}
	img := s.ctrl.Image()
	for _, ref := range refs {
		switch {
		case ref.Topic != nil && ref.TopicID == [16]byte{}:
			names[*ref.Topic]++
			if t, ok := img.Topics[*ref.Topic]; ok {
				// A name that resolves to an id also given by id is the
				// same topic twice.
				ids[t.ID]++
			}
		case ref.Topic == nil && ref.TopicID != [16]byte{}:
			ids[ref.TopicID]++
		}
	}
	for _, ref := range refs {
		st := deleteTopicResult(ref)
		t, err := s.deleteTopic(img, ref, names, ids)
		if t != nil && req.Version >= 6 {
			// v6 answers with both the name and the id, whichever was
			// asked for.
			st.Topic, st.TopicID = strPtr(t.Name), t.ID
		}
		if err != nil {
			st.ErrorCode, st.ErrorMessage = kafkaCode(err), adminMessage(err)
		} else {
			s.logger.Info("deleted topic", "topic", t.Name, "topic_id", t.ID.String())
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// deleteTopicResult is the answer for ref before the outcome is known.
func deleteTopicResult(ref kmsg.DeleteTopicsRequestTopic) kmsg.DeleteTopicsResponseTopic {
	st := kmsg.NewDeleteTopicsResponseTopic()
	st.Topic, st.TopicID = ref.Topic, ref.TopicID
	return st
}

// deleteTopic deletes the topic ref names and returns it; on error, it
// returns the topic too when ref resolved to one. names and ids count the
// request's references, to refuse a topic named twice.
//
// The topic is resolved in img and deleted by name: a topic deleted and
// recreated under the same name by another client in between would be the
// one deleted. The controller has no delete-by-id that checks the id under
// its lock yet.
func (s *Server) deleteTopic(img *cluster.Image, ref kmsg.DeleteTopicsRequestTopic, names map[string]int, ids map[[16]byte]int) (*cluster.Topic, error) {
	byName, byID := ref.Topic != nil, ref.TopicID != [16]byte{}
	var t *cluster.Topic
	switch {
	case byName && byID:
		return nil, apiErrorf(kerr.InvalidRequest, "you may not specify both topic name and topic id")
	case !byName && !byID:
		return nil, apiErrorf(kerr.InvalidRequest, "neither topic name nor id were specified")
	case byName:
		if names[*ref.Topic] > 1 {
			return nil, apiErrorf(kerr.InvalidRequest, "topic %q is listed more than once", *ref.Topic)
		}
		if t = img.Topics[*ref.Topic]; t == nil {
			return nil, apiErrorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", *ref.Topic)
		}
		if ids[t.ID] > 1 {
			return t, apiErrorf(kerr.InvalidRequest, "topic %q is also listed by its id %s", t.Name, t.ID)
		}
	default:
		if ids[ref.TopicID] > 1 {
			return nil, apiErrorf(kerr.InvalidRequest, "topic id %s is listed more than once", cluster.TopicID(ref.TopicID))
		}
		if t = img.ByID[ref.TopicID]; t == nil {
			return nil, apiErrorf(kerr.UnknownTopicID, "topic id %s does not exist", cluster.TopicID(ref.TopicID))
		}
	}
	if _, err := s.ctrl.DeleteTopic(t.Name); err != nil {
		return t, err
	}
	return t, nil
}
