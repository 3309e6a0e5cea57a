package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
)

// The requests whose authorization is more than a filter: see
// authorizeRequest.

// authorizeMetadata leaves out of a Metadata answer the topics the
// principal may not describe, answers TOPIC_AUTHORIZATION_FAILED for those
// it named, and keeps a topic it may describe but not create from being
// auto-created, as Kafka's handleTopicMetadataRequest.
func (c *conn) authorizeMetadata(q *kmsg.MetadataRequest) func(kmsg.Response) {
	all := q.Topics == nil || (q.Version == 0 && len(q.Topics) == 0)
	var denied []string
	if !all {
		img := c.s.ctrl.Image()
		autoCreate := c.s.cfg.Bool("auto.create.topics.enable") && (q.Version < 4 || q.AllowAutoTopicCreation)
		clusterCreate := autoCreate && c.allowedCluster(opCreate)
		kept := q.Topics[:0:0]
		for _, t := range q.Topics {
			if t.Topic == nil {
				kept = append(kept, t) // by id: judged in the answer
				continue
			}
			name := *t.Topic
			_, exists := img.Topics[name]
			switch {
			case !c.allowedTopic(opDescribe, name):
				denied = append(denied, name)
			case !exists && autoCreate && !clusterCreate && !c.allowedTopic(opCreate, name):
				denied = append(denied, name)
			default:
				kept = append(kept, t)
			}
		}
		q.Topics = kept
	}
	return func(resp kmsg.Response) {
		r := resp.(*kmsg.MetadataResponse)
		out := r.Topics[:0]
		for _, t := range r.Topics {
			if t.Topic != nil && !c.allowedTopic(opDescribe, *t.Topic) {
				if all {
					continue
				}
				// Asked for by id: the id is no secret, the name is.
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID, mt.ErrorCode = t.TopicID, topicDenied
				t = mt
			} else if q.IncludeTopicAuthorizedOperations && t.Topic != nil && t.ErrorCode == 0 {
				t.AuthorizedOperations = c.authorizedOps(kmsg.ACLResourceTypeTopic, *t.Topic)
			}
			out = append(out, t)
		}
		if q.IncludeClusterAuthorizedOperations && c.allowedCluster(opDescribe) {
			r.AuthorizedOperations = c.authorizedOps(kmsg.ACLResourceTypeCluster, acl.ClusterName)
		}
		r.Topics = out
		for _, name := range denied {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.ErrorCode = strPtr(name), topicDenied
			r.Topics = append(r.Topics, mt)
		}
	}
}

func (c *conn) authorizeOffsetFetch(q *kmsg.OffsetFetchRequest) (kmsg.Response, func(kmsg.Response)) {
	if q.Version < 8 {
		if !c.allowedGroup(opDescribe, q.Group) {
			r := q.ResponseKind().(*kmsg.OffsetFetchResponse)
			r.ErrorCode = groupDenied
			for _, t := range q.Topics {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, groupDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
			return r, nil
		}
		var denied []kmsg.OffsetFetchRequestTopic
		if q.Topics != nil {
			q.Topics, denied = keep(q.Topics, func(t kmsg.OffsetFetchRequestTopic) bool { return c.allowedTopic(opDescribe, t.Topic) })
			if q.Topics == nil {
				q.Topics = []kmsg.OffsetFetchRequestTopic{}
			}
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.OffsetFetchResponse)
			r.Topics, _ = keep(r.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return c.allowedTopic(opDescribe, t.Topic) })
			for _, t := range denied {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, topicDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
	}
	deniedGroups := map[string]bool{}
	deniedTopics := map[string][]kmsg.OffsetFetchRequestGroupTopic{}
	var groups []kmsg.OffsetFetchRequestGroup
	for _, g := range q.Groups {
		if !c.allowedGroup(opDescribe, g.Group) {
			deniedGroups[g.Group] = true
			continue
		}
		if g.Topics != nil {
			var d []kmsg.OffsetFetchRequestGroupTopic
			g.Topics, d = keep(g.Topics, func(t kmsg.OffsetFetchRequestGroupTopic) bool { return c.allowedTopic(opDescribe, t.Topic) })
			if g.Topics == nil {
				g.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
			}
			deniedTopics[g.Group] = d
		}
		groups = append(groups, g)
	}
	order := q.Groups
	q.Groups = groups
	return nil, func(resp kmsg.Response) {
		r := resp.(*kmsg.OffsetFetchResponse)
		got := map[string]kmsg.OffsetFetchResponseGroup{}
		for _, g := range r.Groups {
			g.Topics, _ = keep(g.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool { return c.allowedTopic(opDescribe, t.Topic) })
			for _, t := range deniedTopics[g.Group] {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, topicDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				g.Topics = append(g.Topics, rt)
			}
			got[g.Group] = g
		}
		r.Groups = r.Groups[:0]
		for _, rg := range order {
			g, ok := got[rg.Group]
			if !ok && deniedGroups[rg.Group] {
				g = kmsg.NewOffsetFetchResponseGroup()
				g.Group, g.ErrorCode = rg.Group, groupDenied
			}
			r.Groups = append(r.Groups, g)
		}
	}
}

func (c *conn) authorizeFindCoordinator(q *kmsg.FindCoordinatorRequest) (kmsg.Response, func(kmsg.Response)) {
	may := func(key string) (bool, int16) {
		if q.CoordinatorType == coordinatorGroup {
			return c.allowedGroup(opDescribe, key), groupDenied
		}
		return c.allowed(opDescribe, kmsg.ACLResourceTypeTransactionalId, key), txnDenied
	}
	if q.Version < 4 {
		if ok, code := may(q.CoordinatorKey); !ok {
			r := q.ResponseKind().(*kmsg.FindCoordinatorResponse)
			r.ErrorCode, r.NodeID, r.Port = code, -1, -1
			return r, nil
		}
		return nil, nil
	}
	all := q.CoordinatorKeys
	denied := map[string]int16{}
	q.CoordinatorKeys = nil
	for _, k := range all {
		if ok, code := may(k); ok {
			q.CoordinatorKeys = append(q.CoordinatorKeys, k)
		} else {
			denied[k] = code
		}
	}
	if len(denied) == 0 {
		return nil, nil
	}
	if len(q.CoordinatorKeys) == 0 {
		r := q.ResponseKind().(*kmsg.FindCoordinatorResponse)
		for _, k := range all {
			co := kmsg.NewFindCoordinatorResponseCoordinator()
			co.Key, co.NodeID, co.Port, co.ErrorCode = k, -1, -1, denied[k]
			r.Coordinators = append(r.Coordinators, co)
		}
		return r, nil
	}
	return nil, func(resp kmsg.Response) {
		r := resp.(*kmsg.FindCoordinatorResponse)
		got := map[string]kmsg.FindCoordinatorResponseCoordinator{}
		for _, co := range r.Coordinators {
			got[co.Key] = co
		}
		r.Coordinators = r.Coordinators[:0]
		for _, k := range all {
			co, ok := got[k]
			if !ok {
				co = kmsg.NewFindCoordinatorResponseCoordinator()
				co.Key, co.NodeID, co.Port, co.ErrorCode = k, -1, -1, denied[k]
			}
			r.Coordinators = append(r.Coordinators, co)
		}
	}
}

func (c *conn) authorizeDeleteTopics(q *kmsg.DeleteTopicsRequest) func(kmsg.Response) {
	type deniedTopic struct {
		name *string
		id   [16]byte
	}
	var denied []deniedTopic
	if q.Version < 6 {
		var names []string
		q.TopicNames, names = keep(q.TopicNames, func(n string) bool { return c.allowedTopic(opDelete, n) })
		for _, n := range names {
			denied = append(denied, deniedTopic{name: strPtr(n)})
		}
	} else {
		img := c.s.ctrl.Image()
		kept := q.Topics[:0:0]
		for _, t := range q.Topics {
			if t.Topic != nil {
				if !c.allowedTopic(opDelete, *t.Topic) {
					denied = append(denied, deniedTopic{name: t.Topic})
					continue
				}
			} else if known, ok := img.ByID[[16]byte(t.TopicID)]; ok && (!c.allowedTopic(opDescribe, known.Name) || !c.allowedTopic(opDelete, known.Name)) {
				d := deniedTopic{id: t.TopicID}
				if c.allowedTopic(opDescribe, known.Name) {
					d.name = strPtr(known.Name)
				}
				denied = append(denied, d)
				continue
			}
			kept = append(kept, t)
		}
		q.Topics = kept
		if len(q.Topics) == 0 {
			q.TopicNames = nil
		}
	}
	if len(denied) == 0 {
		return nil
	}
	return func(resp kmsg.Response) {
		r := resp.(*kmsg.DeleteTopicsResponse)
		for _, d := range denied {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = d.name, d.id, topicDenied
			r.Topics = append(r.Topics, rt)
		}
	}
}

// Config resource types (kmsg.ConfigResourceType).
const (
	configTopic        = kmsg.ConfigResourceTypeTopic
	configBroker       = kmsg.ConfigResourceTypeBroker
	configBrokerLogger = kmsg.ConfigResourceTypeBrokerLogger
)

// configAllowed is whether op may be done on a config resource, and the
// error when not: topics are judged as topics, brokers as the cluster.
func (c *conn) configAllowed(op kmsg.ACLOperation, typ kmsg.ConfigResourceType, name string) (bool, int16) {
	switch typ {
	case configTopic:
		return c.allowedTopic(op, name), topicDenied
	case configBroker, configBrokerLogger:
		return c.allowedCluster(op), clusterDenied
	case kmsg.ConfigResourceType(32): // GROUP (KIP-848)
		return c.allowedGroup(op, name), groupDenied
	}
	return c.allowedCluster(op), clusterDenied
}

func (c *conn) authorizeConfigs(req kmsg.Request) func(kmsg.Response) {
	type deniedRes struct {
		typ  kmsg.ConfigResourceType
		name string
		code int16
	}
	var denied []deniedRes
	judge := func(op kmsg.ACLOperation, typ kmsg.ConfigResourceType, name string) bool {
		ok, code := c.configAllowed(op, typ, name)
		if !ok {
			denied = append(denied, deniedRes{typ, name, code})
		}
		return ok
	}
	switch q := req.(type) {
	case *kmsg.DescribeConfigsRequest:
		q.Resources, _ = keep(q.Resources, func(r kmsg.DescribeConfigsRequestResource) bool {
			return judge(opDescribeConfigs, r.ResourceType, r.ResourceName)
		})
		if len(denied) == 0 {
			return nil
		}
		return func(resp kmsg.Response) {
			r := resp.(*kmsg.DescribeConfigsResponse)
			for _, d := range denied {
				rr := kmsg.NewDescribeConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode = d.typ, d.name, d.code
				r.Resources = append(r.Resources, rr)
			}
		}
	case *kmsg.AlterConfigsRequest:
		q.Resources, _ = keep(q.Resources, func(r kmsg.AlterConfigsRequestResource) bool {
			return judge(opAlterConfigs, r.ResourceType, r.ResourceName)
		})
		if len(denied) == 0 {
			return nil
		}
		return func(resp kmsg.Response) {
			r := resp.(*kmsg.AlterConfigsResponse)
			for _, d := range denied {
				rr := kmsg.NewAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode = d.typ, d.name, d.code
				r.Resources = append(r.Resources, rr)
			}
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		q.Resources, _ = keep(q.Resources, func(r kmsg.IncrementalAlterConfigsRequestResource) bool {
			return judge(opAlterConfigs, r.ResourceType, r.ResourceName)
		})
		if len(denied) == 0 {
			return nil
		}
		return func(resp kmsg.Response) {
			r := resp.(*kmsg.IncrementalAlterConfigsResponse)
			for _, d := range denied {
				rr := kmsg.NewIncrementalAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode = d.typ, d.name, d.code
				r.Resources = append(r.Resources, rr)
			}
		}
	}
	return nil
}
