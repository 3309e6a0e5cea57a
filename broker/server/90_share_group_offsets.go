package server

import (
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/share"
)

// Share-group offsets for administrators (KIP-932's
// DescribeShareGroupOffsets, AlterShareGroupOffsets,
// DeleteShareGroupOffsets; kafka-share-groups.sh --describe,
// --reset-offsets, --delete-offsets). The group's coordinator checks the
// group (it must exist; to change offsets it must be empty) and then
// reads and writes the state at the share coordinators, the leaders of the
// __share_group_state partitions (share_state_admin.go), as Kafka's group
// coordinator does through its persister: so the answer is the same
// whichever brokers lead the topic partitions (docs/broker.md).

// handleDescribeShareGroupOffsets: DESCRIBE on the group (else the group
// is GROUP_AUTHORIZATION_FAILED) and on each topic (else the topic's
// partitions are TOPIC_AUTHORIZATION_FAILED). A partition the group never
// read has start offset -1, as in Kafka. Without topics, every partition
// the group has state for, of the topics the caller may describe.
func (s *Server) handleDescribeShareGroupOffsets(c *conn, req *kmsg.DescribeShareGroupOffsetsRequest) (*kmsg.DescribeShareGroupOffsetsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	img := s.ctrl.Image()
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		if !c.allowedGroup(opDescribe, rg.GroupID) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if code := s.groups.Status(rg.GroupID); code != nil {
			g.ErrorCode = code.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if s.shares.Members(rg.GroupID) < 0 {
			g.ErrorCode = kerr.GroupIDNotFound.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		topics, all := rg.Topics, rg.Topics == nil
		if all {
			topics = s.describableTopics(c, img)
		}
		var keys []share.Key
		for _, rt := range topics {
			meta, ok := img.Topics[rt.Topic]
			if !ok || !c.allowedTopic(opDescribe, rt.Topic) {
				continue
			}
			for _, p := range rt.Partitions {
				if p >= 0 && int(p) < len(meta.Partitions) {
					keys = append(keys, share.Key{Group: rg.GroupID, Topic: [16]byte(meta.ID), Partition: p})
				}
			}
		}
		found, _, errs := s.shareState.Summaries(rg.GroupID, keys)
		hws := s.highWatermarks(img, found)
		for _, rt := range topics {
			t := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			t.Topic = rt.Topic
			meta, exists := img.Topics[rt.Topic]
			allowed := c.allowedTopic(opDescribe, rt.Topic)
			if exists {
				t.TopicID = [16]byte(meta.ID)
			}
			for _, p := range rt.Partitions {
				sp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				sp.Partition, sp.StartOffset, sp.LeaderEpoch, sp.Lag = p, -1, -1, -1
				k := share.Key{Group: rg.GroupID, Topic: t.TopicID, Partition: p}
				sum, has := found[k]
				switch {
				case !allowed:
					sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case !exists || p < 0 || int(p) >= len(meta.Partitions):
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case errs[k] != nil:
					sp.ErrorCode = errs[k].Code
					sp.ErrorMessage = strPtr(errs[k].Message)
				case has && sum.StartOffset == share.StartUnset:
					// Initialized, never read: no start offset yet, as
					// Kafka describes it.
				case has:
					sp.StartOffset, sp.LeaderEpoch = sum.StartOffset, sum.LeaderEpoch
					if hw, ok := hws[k]; ok {
						// Kafka's lag (KIP-1226): what is left between the
						// start offset and the end, less what is finished.
						sp.Lag = max(hw-sum.StartOffset-int64(sum.Complete), 0)
					}
				case all:
					continue // no state: not one of the group's partitions
				}
				t.Partitions = append(t.Partitions, sp)
			}
			if !all || len(t.Partitions) > 0 {
				g.Topics = append(g.Topics, t)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

// highWatermarks are the high watermarks of the partitions of keys: this
// broker's replica's, else the leader's, asked with one ListOffsets per
// leader (a partition whose leader does not answer is left out: its lag
// is unknown).
func (s *Server) highWatermarks(img *cluster.Image, keys map[share.Key]shareSummary) map[share.Key]int64 {
	out := map[share.Key]int64{}
	remote := map[int32][]share.Key{}
	for k := range keys {
		t, ok := img.ByID[cluster.TopicID(k.Topic)]
		if !ok || int(k.Partition) >= len(t.Partitions) {
			continue
		}
		if part, e := s.hostedPartition(t.Name, k.Partition); e == nil {
			out[k] = part.HighWatermark()
		} else if l := t.Partitions[k.Partition].Leader; l >= 0 && l != s.nodeID {
			remote[l] = append(remote[l], k)
		}
	}
	var mu sync.Mutex
	eachCoordinator(remote, func(leader int32, ks []share.Key) {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(4)
		req.ReplicaID = -1
		byName := map[string][]int32{}
		for _, k := range ks {
			name := img.ByID[cluster.TopicID(k.Topic)].Name
			byName[name] = append(byName[name], k.Partition)
		}
		for name, ps := range byName {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = name
			for _, p := range ps {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		r, err := s.shareState.remote(leader, req)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rt := range r.(*kmsg.ListOffsetsResponse).Topics {
			t, ok := img.Topics[rt.Topic]
			if !ok {
				continue
			}
			for _, rp := range rt.Partitions {
				if rp.ErrorCode == 0 && rp.Offset >= 0 {
					out[share.Key{Group: ks[0].Group, Topic: [16]byte(t.ID), Partition: rp.Partition}] = rp.Offset
				}
			}
		}
	})
	return out
}

// describableTopics is every partition of the topics (not internal) the
// caller may describe, sorted by name: where a group's state may be.
func (s *Server) describableTopics(c *conn, img *cluster.Image) []kmsg.DescribeShareGroupOffsetsRequestGroupTopic {
	var out []kmsg.DescribeShareGroupOffsetsRequestGroupTopic
	for name, t := range img.Topics {
		if t.Internal() || !c.allowedTopic(opDescribe, name) {
			continue
		}
		rt := kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name}
		for p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, int32(p))
		}
		out = append(out, rt)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

// shareGroupKeys is every share partition a group may have state for:
// each partition of each topic (not internal).
func shareGroupKeys(img *cluster.Image, group string) []share.Key {
	var keys []share.Key
	for _, t := range img.Topics {
		if t.Internal() {
			continue
		}
		for p := range t.Partitions {
			keys = append(keys, share.Key{Group: group, Topic: [16]byte(t.ID), Partition: int32(p)})
		}
	}
	return keys
}

// handleAlterShareGroupOffsets resets the start offsets of an empty share
// group's partitions (NON_EMPTY_GROUP while it has members): READ on the
// group and on each topic, as Kafka. Each partition's state is
// initialized anew at the next state epoch (Kafka's
// InitializeShareGroupState), which fences a partition leader still
// holding the old state.
func (s *Server) handleAlterShareGroupOffsets(c *conn, req *kmsg.AlterShareGroupOffsetsRequest) (*kmsg.AlterShareGroupOffsetsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if !c.allowedGroup(opRead, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	part, gen, code := s.groups.ShareStatus(req.GroupID)
	if code != nil {
		resp.ErrorCode = code.Code
		return resp, nil
	}
	if !s.shares.Has(req.GroupID) && s.isOtherGroup(req.GroupID) {
		// Kafka's getOrMaybeCreateShareGroup: no share twin of a classic
		// or consumer group (review L1).
		resp.ErrorCode, resp.ErrorMessage = kerr.GroupIDNotFound.Code, strPtr("Group "+req.GroupID+" is not a share group.")
		return resp, nil
	}
	if code := s.shares.AdminGroup(req.GroupID, true, part, gen); code != nil {
		resp.ErrorCode = code.Code
		return resp, nil
	}
	defer s.shares.AdminDone(req.GroupID)
	img := s.ctrl.Image()
	offsets := map[share.Key]int64{}
	keys := []share.Key{}
	bad := map[share.Key]int16{}
	for _, rt := range req.Topics {
		meta, exists := img.Topics[rt.Topic]
		allowed := c.allowedTopic(opRead, rt.Topic)
		for _, p := range rt.Partitions {
			k := share.Key{Group: req.GroupID, Topic: [16]byte(meta.ID), Partition: p.Partition}
			switch {
			case !allowed:
				bad[k] = kerr.TopicAuthorizationFailed.Code
			case !exists || p.Partition < 0 || int(p.Partition) >= len(meta.Partitions):
				bad[k] = kerr.UnknownTopicOrPartition.Code
			default:
				// Stored as given, as Kafka's group coordinator stores it
				// (its tool bounds it on the client side): the same answer
				// whichever broker hosts the partition (review L4). Below
				// the log start, the leader starts at the log start.
				off := p.StartOffset
				if off < 0 {
					bad[k] = kerr.InvalidRequest.Code
					break
				}
				offsets[k] = off
				keys = append(keys, k)
			}
		}
	}
	found, next, errs := s.shareState.Summaries(req.GroupID, keys)
	inits := map[share.Key]shareInit{}
	for _, k := range keys {
		if errs[k] == nil {
			// Past the stored state's epoch, or past every epoch a
			// deleted state had: a leader's older copy is fenced.
			inits[k] = shareInit{Epoch: max(found[k].StateEpoch, next[k]) + 1, Start: offsets[k]}
		}
	}
	for k, e := range s.shareState.Initialize(req.GroupID, inits) {
		errs[k] = e
	}
	var done []share.Key
	for _, k := range keys {
		if errs[k] == nil {
			done = append(done, k)
		}
	}
	s.shares.Initialized(req.GroupID, done, topicNames(img))
	s.shares.Forget(keys)
	for _, rt := range req.Topics {
		t := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		meta, exists := img.Topics[rt.Topic]
		if exists {
			t.TopicID = [16]byte(meta.ID)
		}
		for _, p := range rt.Partitions {
			sp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			sp.Partition = p.Partition
			k := share.Key{Group: req.GroupID, Topic: t.TopicID, Partition: p.Partition}
			if code, ok := bad[k]; ok {
				sp.ErrorCode = code
			} else if e := errs[k]; e != nil {
				sp.ErrorCode, sp.ErrorMessage = e.Code, strPtr(e.Message)
			}
			t.Partitions = append(t.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}

// handleDeleteShareGroupOffsets forgets an empty share group's state for
// whole topics, at the share coordinators: DELETE on the group, READ on
// each topic.
func (s *Server) handleDeleteShareGroupOffsets(c *conn, req *kmsg.DeleteShareGroupOffsetsRequest) (*kmsg.DeleteShareGroupOffsetsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if !c.allowedGroup(kmsg.ACLOperationDelete, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	part, gen, code := s.groups.ShareStatus(req.GroupID)
	if code != nil {
		resp.ErrorCode = code.Code
		return resp, nil
	}
	if code := s.shares.AdminGroup(req.GroupID, false, part, gen); code != nil {
		resp.ErrorCode = code.Code
		return resp, nil
	}
	defer s.shares.AdminDone(req.GroupID)
	img := s.ctrl.Image()
	var keys []share.Key
	for _, rt := range req.Topics {
		if meta, ok := img.Topics[rt.Topic]; ok && c.allowedTopic(opRead, rt.Topic) {
			for p := range meta.Partitions {
				keys = append(keys, share.Key{Group: req.GroupID, Topic: [16]byte(meta.ID), Partition: int32(p)})
			}
		}
	}
	topics := map[[16]byte]string{}
	for _, k := range keys {
		topics[k.Topic] = ""
	}
	for name, meta := range img.Topics {
		if _, ok := topics[[16]byte(meta.ID)]; ok {
			topics[[16]byte(meta.ID)] = name
		}
	}
	// Recorded deleting first, as Kafka's coordinator does: a coordinator
	// that loads the group meanwhile initializes them again rather than
	// taking them as initialized.
	if code := s.shares.StateDeleting(req.GroupID, topics, gen); code != nil {
		resp.ErrorCode = code.Code
		return resp, nil
	}
	errs := s.shareState.Delete(req.GroupID, keys)
	s.shares.Forget(keys)
	var gone [][16]byte
	for id := range topics {
		ok := true
		for k := range errs {
			ok = ok && k.Topic != id
		}
		if ok {
			gone = append(gone, id)
		}
	}
	if code := s.shares.StateDeleted(req.GroupID, gone, gen); code != nil {
		// The coordinator moved during the call: the states are gone,
		// but only the group's coordinator can record it (the log still
		// has the topics deleting, so they are initialized again). The
		// client retries against it.
		resp.ErrorCode = code.Code
		return resp, nil
	}
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		meta, exists := img.Topics[rt.Topic]
		switch {
		case !c.allowedTopic(opRead, rt.Topic):
			t.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case !exists:
			t.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			t.TopicID = [16]byte(meta.ID)
			for p := range meta.Partitions {
				if e := errs[share.Key{Group: req.GroupID, Topic: t.TopicID, Partition: int32(p)}]; e != nil {
					t.ErrorCode, t.ErrorMessage = e.Code, strPtr(e.Message)
					break
				}
			}
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}

// deleteShareGroupState deletes every share partition's state of a share
// group being deleted, at the share coordinators (Kafka's DeleteGroups
// deletes it through its persister too).
func (s *Server) deleteShareGroupState(group string) *kerr.Error {
	found, _, errs := s.shareState.Summaries(group, shareGroupKeys(s.ctrl.Image(), group))
	for _, e := range errs {
		return e
	}
	keys := make([]share.Key, 0, len(found))
	for k := range found {
		keys = append(keys, k)
	}
	for _, e := range s.shareState.Delete(group, keys) {
		return e
	}
	return nil
}
