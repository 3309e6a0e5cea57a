package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
)

// OffsetCommit and OffsetFetch v10 (KIP-848) name topics by id only. The
// ids are resolved to names before anything else looks at the request, so
// that authorization (whose ACLs match topic names) and the coordinator
// (which keeps offsets by name, as Kafka's records do) see names, as in
// Kafka's KafkaApis. A topic id the cluster does not know is taken out of
// the request and answered UNKNOWN_TOPIC_ID for each of its partitions;
// every topic of the answer gets its id back, since v10 answers carry
// only ids. The group's authorization comes first, as in Kafka: a caller
// refused the group learns nothing of the ids (GROUP_AUTHORIZATION_FAILED
// for them too).

// resolveTopicIDs fills in the topic names of a v10 OffsetCommit or
// OffsetFetch; the returned func (nil when there is nothing to do)
// completes the answer after the handler and the authorizer.
func (c *conn) resolveTopicIDs(req kmsg.Request) func(kmsg.Response) {
	switch q := req.(type) {
	case *kmsg.OffsetCommitRequest:
		if q.Version < 10 {
			return nil
		}
		img := c.s.ctrl.Image()
		var unknown []kmsg.OffsetCommitRequestTopic
		kept := q.Topics[:0]
		for _, t := range q.Topics {
			if tt, ok := img.ByID[cluster.TopicID(t.TopicID)]; ok {
				t.Topic = tt.Name
				kept = append(kept, t)
			} else {
				unknown = append(unknown, t)
			}
		}
		q.Topics = kept
		code := kerr.UnknownTopicID.Code
		if !c.mayGroup(opRead, q.Group) {
			code = groupDenied
		}
		return func(resp kmsg.Response) {
			r := resp.(*kmsg.OffsetCommitResponse)
			for i := range r.Topics {
				if t, ok := img.Topics[r.Topics[i].Topic]; ok {
					r.Topics[i].TopicID = t.ID
				}
			}
			for _, t := range unknown {
				rt := commitTopicError(t, code)
				rt.TopicID = t.TopicID
				r.Topics = append(r.Topics, rt)
			}
		}
	case *kmsg.OffsetFetchRequest:
		if q.Version < 10 {
			return nil
		}
		img := c.s.ctrl.Image()
		unknown := map[string][]kmsg.OffsetFetchRequestGroupTopic{}
		for gi := range q.Groups {
			g := &q.Groups[gi]
			if g.Topics == nil || !c.mayGroup(opDescribe, g.Group) {
				continue // every committed topic, or the group's error alone
			}
			kept := []kmsg.OffsetFetchRequestGroupTopic{}
			for _, t := range g.Topics {
				if tt, ok := img.ByID[cluster.TopicID(t.TopicID)]; ok {
					t.Topic = tt.Name
					kept = append(kept, t)
				} else {
					unknown[g.Group] = append(unknown[g.Group], t)
				}
			}
			g.Topics = kept
		}
		return func(resp kmsg.Response) {
			r := resp.(*kmsg.OffsetFetchResponse)
			for gi := range r.Groups {
				g := &r.Groups[gi]
				// A committed topic since deleted has no id: it is not
				// shown (Kafka leaves it out too).
				kept := g.Topics[:0]
				for _, t := range g.Topics {
					if tt, ok := img.Topics[t.Topic]; ok {
						t.TopicID = tt.ID
						kept = append(kept, t)
					}
				}
				g.Topics = kept
				for _, t := range unknown[g.Group] {
					rt := kmsg.NewOffsetFetchResponseGroupTopic()
					rt.TopicID = t.TopicID
					for _, p := range t.Partitions {
						rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
						rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, kerr.UnknownTopicID.Code
						rt.Partitions = append(rt.Partitions, rp)
					}
					g.Topics = append(g.Topics, rt)
				}
				if g.Topics == nil {
					g.Topics = []kmsg.OffsetFetchResponseGroupTopic{}
				}
			}
		}
	}
	return nil
}

// mayGroup is whether the caller passes the group's authorization (true
// where there is none).
func (c *conn) mayGroup(op kmsg.ACLOperation, group string) bool {
	return c.s.authorizer == nil || c.s.controllerListeners[c.listener] || c.allowedGroup(op, group)
}
