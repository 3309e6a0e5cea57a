package group

import (
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/config"
)

// consumerConfig reads group.consumer.*; config validation has checked
// the bounds (min <= value <= max, heartbeat below session).
func consumerConfig(bcfg *config.Broker) ConsumerConfig {
	ms := func(name string) time.Duration { return time.Duration(bcfg.Int(name)) * time.Millisecond }
	var assignors []string
	for _, a := range strings.Split(bcfg.String("group.consumer.assignors"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			assignors = append(assignors, a)
		}
	}
	if len(assignors) == 0 {
		assignors = []string{"uniform", "range"}
	}
	policy := strings.ToLower(bcfg.String("group.consumer.migration.policy"))
	return ConsumerConfig{
		SessionTimeout:    ms("group.consumer.session.timeout.ms"),
		HeartbeatInterval: ms("group.consumer.heartbeat.interval.ms"),
		Assignors:         assignors,
		MaxSize:           int(bcfg.Int("group.consumer.max.size")),
		Upgrade:           policy == "upgrade" || policy == "bidirectional",
		Downgrade:         policy == "downgrade" || policy == "bidirectional",
	}
}

// topicsView is the cluster's topics as the assignors see them, rebuilt
// when the metadata image changes. mu must be held.
func (c *Coordinator) topicsView() map[string]TopicMeta {
	img := c.ctrl.Image()
	if img == c.viewOf {
		return c.view
	}
	view := make(map[string]TopicMeta, len(img.Topics))
	for name, t := range img.Topics {
		if !t.Internal() {
			view[name] = TopicMeta{ID: t.ID, Partitions: int32(len(t.Partitions))}
		}
	}
	if maps.Equal(view, c.view) {
		// The same map while the topics are the same: the heartbeats'
		// regex caches (topicsGeneration) stay valid.
		c.viewOf = img
		return c.view
	}
	c.viewOf, c.view = img, view
	return view
}

// ConsumerHeartbeat serves a ConsumerGroupHeartbeat: it answers once the
// records it changed are written (or the write failed), or when stop is
// closed.
func (c *Coordinator) ConsumerHeartbeat(req ConsumerHeartbeatRequest, stop <-chan struct{}) *kmsg.ConsumerGroupHeartbeatResponse {
	ch := make(chan *kmsg.ConsumerGroupHeartbeatResponse, 1)
	c.mu.Lock()
	if code := c.status(req.Group); code != nil {
		c.mu.Unlock()
		return hbError(req.ConsumerGroupHeartbeatRequest, code, "")
	}
	c.gs.ConsumerHeartbeat(req, c.topicsView(), c.now(), func(r *kmsg.ConsumerGroupHeartbeatResponse) { offer(ch, r) })
	c.flushLocked()
	c.mu.Unlock()
	select {
	case r := <-ch:
		return r
	case <-stop:
		return hbError(req.ConsumerGroupHeartbeatRequest, kerr.CoordinatorNotAvailable, "")
	}
}

// ConsumerDescribe serves one group of a ConsumerGroupDescribe.
func (c *Coordinator) ConsumerDescribe(group string) kmsg.ConsumerGroupDescribeResponseGroup {
	d := kmsg.NewConsumerGroupDescribeResponseGroup()
	d.Group = group
	c.mu.Lock()
	defer c.mu.Unlock()
	if code := c.status(group); code != nil {
		d.ErrorCode = code.Code
		return d
	}
	g, ok := c.gs.Group(group)
	if !ok || g.consumer == nil {
		d.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + group + " not found."
		if ok {
			msg = "Group " + group + " is not a consumer group."
		}
		d.ErrorMessage = &msg
		return d
	}
	names := map[[16]byte]string{}
	for name, t := range c.topicsView() {
		names[t.ID] = name
	}
	assignment := func(s tpSet) kmsg.Assignment {
		var a kmsg.Assignment
		for _, t := range s.byTopic() {
			a.TopicPartitions = append(a.TopicPartitions, kmsg.AssignmentTopicPartition{TopicID: t.id, Topic: names[t.id], Partitions: t.parts})
		}
		return a
	}
	cg := g.consumer
	d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName = cg.StateName(), cg.Epoch, cg.AssignmentEpoch, cg.Assignor
	for _, id := range cg.memberIDs() {
		m := cg.members[id]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = m.ID, m.InstanceID, m.RackID, m.Epoch
		dm.ClientID, dm.ClientHost, dm.SubscribedTopics, dm.SubscribedTopicRegex = m.ClientID, m.ClientHost, m.Topics, m.Regex
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		dm.Assignment, dm.TargetAssignment = assignment(m.Assigned), assignment(cg.target[id])
		dm.MemberType = 1 // the consumer protocol
		if m.Classic != nil {
			dm.MemberType = 0 // a classic member of a migrated group
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// CheckConsumerFetch validates the member id and epoch of an OffsetFetch
// v9+ against a consumer group; nil for other groups.
func (c *Coordinator) CheckConsumerFetch(group string, memberID *string, epoch int32) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status(group) != nil {
		return nil // fetchOffsets answers the coordinator's error
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	return c.gs.CheckConsumerFetch(group, id, epoch)
}

// listed is a group as ListGroups shows it.
func listed(g *Group) Listed {
	if g.consumer != nil {
		return Listed{ID: g.ID, ProtocolType: g.ProtocolType, State: g.State, Type: "consumer", StateName: g.consumer.StateName()}
	}
	return Listed{ID: g.ID, ProtocolType: g.ProtocolType, State: g.State, Type: "classic", StateName: g.State.String()}
}

// classicJoinOnConsumer is a JoinGroup for an empty consumer group: it
// becomes a classic group again, its consumer records deleted, as Kafka
// converts it. (A consumer group with members takes classic members in:
// classicJoinConsumer.)
func (gs *Groups) classicJoinOnConsumer(g *Group) *kerr.Error {
	cg := g.consumer
	gs.writes = append(gs.writes, Write{Partition: gs.Partition(g.ID), Records: cg.tombstones(g.ID), Done: func(error) {}})
	g.consumer, g.ProtocolType, g.Generation = nil, "", 0
	return nil
}

func (cg *consumerGroup) subscribedTopics() map[string]bool {
	out := map[string]bool{}
	for _, m := range cg.members {
		for _, t := range m.Topics {
			out[t] = true
		}
	}
	return out
}

// describeConsumer prints a consumer group for tests.
func describeConsumer(g *Group, names map[[16]byte]string) string {
	cg := g.consumer
	var b strings.Builder
	b.WriteString(g.ID + ": " + cg.StateName())
	b.WriteString(" epoch=" + strconv.Itoa(int(cg.Epoch)) + " assignment=" + strconv.Itoa(int(cg.AssignmentEpoch)) + " assignor=" + cg.Assignor)
	for _, id := range cg.memberIDs() {
		m := cg.members[id]
		b.WriteString("\n  member " + id + " epoch=" + strconv.Itoa(int(m.Epoch)) + " state=" + strconv.Itoa(int(m.State)))
		b.WriteString(" assigned=" + setString(m.Assigned, names) + " pending=" + setString(m.Pending, names) + " target=" + setString(cg.target[id], names))
	}
	return b.String()
}

func setString(s tpSet, names map[[16]byte]string) string {
	var parts []string
	for k := range s {
		parts = append(parts, names[k.ID]+"/"+strconv.Itoa(int(k.P)))
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}
