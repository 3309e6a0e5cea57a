package server

import (
	"net"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/config"
)

// Authorization (docs/security.md): with authorizer.class.name set, every
// request is judged by the ACLs of this node's metadata image, for the
// connection's principal and client address, with the operations and
// error codes of Kafka's KafkaApis. authorizeRequest, called once per
// request before its handler, refuses what a whole request may not do and
// takes out of it the topics, groups and resources it may not touch; the
// hook it returns puts them back into the answer with their error, in the
// request's order, so the handlers themselves know nothing of ACLs.
// Fetch, which writes its own answer, checks in fetchOnce.
//
// Requests on controller listeners are not judged: they come from brokers
// of the cluster, forwarded after the receiving broker judged them.

// setupAuthorizer reads authorizer.class.name, super.users and
// allow.everyone.if.no.acl.found, and counts the open listeners in
// tributary_broker_open_listeners.
func (s *Server) setupAuthorizer() {
	if s.cfg.String("authorizer.class.name") != "" {
		s.authorizer = &acl.Authorizer{
			SuperUsers:   config.SuperUsers(s.cfg.String("super.users")),
			AllowIfNoACL: s.cfg.Bool("allow.everyone.if.no.acl.found"),
		}
		if s.cfg.IsSet("controller.quorum.voters") && !slices.Contains(s.authorizer.SuperUsers, auth.Anonymous.String()) {
			if ib, ok := s.cfg.InterBrokerListener(); ok && ib.Protocol == "PLAINTEXT" {
				// The commonest way to break a cluster with ACLs: followers
				// fetch as ANONYMOUS over a PLAINTEXT inter-broker listener.
				s.logger.Warn("the authorizer is on and the inter-broker listener "+ib.Name+" is PLAINTEXT: brokers replicate as User:ANONYMOUS there, so replica fetches fail with CLUSTER_AUTHORIZATION_FAILED; make it an authenticated listener (SASL or SSL with client certificates) whose broker principal is in super.users (docs/security.md, \"Securing the cluster's own traffic\"). User:ANONYMOUS in super.users would make every anonymous connection a super user", "listener", ib.Name)
			}
		}
	}
	open := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tributary_broker_open_listeners",
		Help: "1 for each listener off loopback on which anyone may do anything: PLAINTEXT while no authorizer is configured, or any listener that admits anonymous connections (PLAINTEXT, SSL without required client certificates) while User:ANONYMOUS is in super.users (docs/security.md)."},
		[]string{"listener"})
	s.metrics.reg.MustRegister(open)
	ls, _ := s.cfg.Listeners() // setupSecurity reports a bad value
	for _, l := range ls {
		if s.openListener(l.Protocol, l.Name, l.Host) {
			open.WithLabelValues(l.Name).Set(1)
		}
	}
}

// openListener is whether a listener lets anyone on the network do
// anything: not on loopback, not a controller listener (refused or warned
// of on its own), and either PLAINTEXT with no authorizer, or admitting
// anonymous connections while User:ANONYMOUS is a super user.
func (s *Server) openListener(protocol, name, host string) bool {
	if s.controllerNames[name] || loopback(host) {
		return false
	}
	if s.authorizer == nil {
		return protocol == "PLAINTEXT"
	}
	anonymous := protocol == "PLAINTEXT" || protocol == "SSL" && s.cfg.ListenerString(name, "ssl.client.auth") != "required"
	return anonymous && slices.Contains(s.authorizer.SuperUsers, auth.Anonymous.String())
}

// host is the client's address as ACL hosts name it.
func (c *conn) host() string {
	if c.remoteHost == "" {
		if a, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
			c.remoteHost = a.IP.String()
		} else {
			c.remoteHost, _, _ = net.SplitHostPort(c.nc.RemoteAddr().String())
		}
	}
	return c.remoteHost
}

// allowed is whether the connection may do op on the resource.
func (c *conn) allowed(op acl.Operation, typ acl.ResourceType, name string) bool {
	if c.s.authorizer == nil || c.s.controllerListeners[c.listener] {
		return true
	}
	return c.s.authorizer.Authorize(c.s.ctrl.Image().Acls, acl.Request{Principal: c.Principal().String(), Host: c.host()}, op, typ, name)
}

func (c *conn) allowedCluster(op acl.Operation) bool {
	return c.allowed(op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

func (c *conn) allowedTopic(op acl.Operation, topic string) bool {
	return c.allowed(op, kmsg.ACLResourceTypeTopic, topic)
}

func (c *conn) allowedGroup(op acl.Operation, group string) bool {
	return c.allowed(op, kmsg.ACLResourceTypeGroup, group)
}

const (
	opRead            = kmsg.ACLOperationRead
	opWrite           = kmsg.ACLOperationWrite
	opCreate          = kmsg.ACLOperationCreate
	opDelete          = kmsg.ACLOperationDelete
	opAlter           = kmsg.ACLOperationAlter
	opDescribe        = kmsg.ACLOperationDescribe
	opClusterAction   = kmsg.ACLOperationClusterAction
	opDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	opAlterConfigs    = kmsg.ACLOperationAlterConfigs
	opIdempotentWrite = kmsg.ACLOperationIdempotentWrite
)

var (
	topicDenied   = kerr.TopicAuthorizationFailed.Code
	groupDenied   = kerr.GroupAuthorizationFailed.Code
	clusterDenied = kerr.ClusterAuthorizationFailed.Code
	txnDenied     = kerr.TransactionalIDAuthorizationFailed.Code
)

// keep splits items into those allowed and the positions of the others.
func keep[T any](items []T, ok func(T) bool) (kept []T, denied []T) {
	for _, it := range items {
		if ok(it) {
			kept = append(kept, it)
		} else {
			denied = append(denied, it)
		}
	}
	return kept, denied
}

// authorizeRequest judges req before its handler: deny, when not nil, is
// the whole answer; post, when not nil, completes the handler's answer
// with what was taken out of req.
func (c *conn) authorizeRequest(req kmsg.Request) (deny kmsg.Response, post func(kmsg.Response)) {
	if c.s.authorizer == nil || c.s.controllerListeners[c.listener] {
		return nil, nil
	}
	switch q := req.(type) {
	case *kmsg.ProduceRequest:
		// With acks=0 a refusal closes the connection after the allowed
		// topics are written, as Kafka does with any error there: the
		// producer learns of it only that way.
		if q.TransactionID != nil && !c.allowed(opWrite, kmsg.ACLResourceTypeTransactionalId, *q.TransactionID) {
			if q.Acks == 0 {
				q.Topics, c.closeAfter = nil, true
				return nil, nil
			}
			r := q.ResponseKind().(*kmsg.ProduceResponse)
			for _, t := range q.Topics {
				r.Topics = append(r.Topics, produceTopicError(t, txnDenied))
			}
			return r, nil
		}
		var denied []kmsg.ProduceRequestTopic
		q.Topics, denied = keep(q.Topics, func(t kmsg.ProduceRequestTopic) bool { return c.allowedTopic(opWrite, t.Topic) })
		if len(denied) == 0 {
			return nil, nil
		}
		c.closeAfter = c.closeAfter || q.Acks == 0
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.ProduceResponse)
			for _, t := range denied {
				r.Topics = append(r.Topics, produceTopicError(t, topicDenied))
			}
		}
	case *kmsg.ListOffsetsRequest:
		var denied []kmsg.ListOffsetsRequestTopic
		q.Topics, denied = keep(q.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return c.allowedTopic(opDescribe, t.Topic) })
		if len(denied) == 0 {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.ListOffsetsResponse)
			for _, t := range denied {
				st := kmsg.NewListOffsetsResponseTopic()
				st.Topic = t.Topic
				for _, p := range t.Partitions {
					sp := kmsg.NewListOffsetsResponseTopicPartition()
					sp.Partition, sp.ErrorCode, sp.Timestamp, sp.Offset = p.Partition, topicDenied, -1, -1
					st.Partitions = append(st.Partitions, sp)
				}
				r.Topics = append(r.Topics, st)
			}
		}
	case *kmsg.MetadataRequest:
		return nil, c.authorizeMetadata(q)
	case *kmsg.OffsetCommitRequest:
		if !c.allowedGroup(opRead, q.Group) {
			r := q.ResponseKind().(*kmsg.OffsetCommitResponse)
			for _, t := range q.Topics {
				r.Topics = append(r.Topics, commitTopicError(t, groupDenied))
			}
			return r, nil
		}
		var denied []kmsg.OffsetCommitRequestTopic
		q.Topics, denied = keep(q.Topics, func(t kmsg.OffsetCommitRequestTopic) bool { return c.allowedTopic(opRead, t.Topic) })
		if len(denied) == 0 {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.OffsetCommitResponse)
			for _, t := range denied {
				r.Topics = append(r.Topics, commitTopicError(t, topicDenied))
			}
		}
	case *kmsg.OffsetFetchRequest:
		return c.authorizeOffsetFetch(q)
	case *kmsg.FindCoordinatorRequest:
		return c.authorizeFindCoordinator(q)
	case *kmsg.JoinGroupRequest:
		if !c.allowedGroup(opRead, q.Group) {
			r := q.ResponseKind().(*kmsg.JoinGroupResponse)
			r.ErrorCode, r.Generation = groupDenied, -1
			return r, nil
		}
	case *kmsg.SyncGroupRequest:
		if !c.allowedGroup(opRead, q.Group) {
			r := q.ResponseKind().(*kmsg.SyncGroupResponse)
			r.ErrorCode = groupDenied
			return r, nil
		}
	case *kmsg.HeartbeatRequest:
		if !c.allowedGroup(opRead, q.Group) {
			r := q.ResponseKind().(*kmsg.HeartbeatResponse)
			r.ErrorCode = groupDenied
			return r, nil
		}
	case *kmsg.LeaveGroupRequest:
		if !c.allowedGroup(opRead, q.Group) {
			r := q.ResponseKind().(*kmsg.LeaveGroupResponse)
			r.ErrorCode = groupDenied
			return r, nil
		}
	case *kmsg.DescribeGroupsRequest:
		all := q.Groups
		q.Groups, _ = keep(q.Groups, func(g string) bool { return c.allowedGroup(opDescribe, g) })
		if len(q.Groups) == len(all) && !q.IncludeAuthorizedOperations {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.DescribeGroupsResponse)
			got := map[string]kmsg.DescribeGroupsResponseGroup{}
			for _, g := range r.Groups {
				if q.IncludeAuthorizedOperations {
					g.AuthorizedOperations = c.authorizedOps(kmsg.ACLResourceTypeGroup, g.Group)
				}
				got[g.Group] = g
			}
			r.Groups = r.Groups[:0]
			for _, name := range all {
				g, ok := got[name]
				if !ok {
					g = kmsg.NewDescribeGroupsResponseGroup()
					g.Group, g.ErrorCode = name, groupDenied
				}
				r.Groups = append(r.Groups, g)
			}
		}
	case *kmsg.ListGroupsRequest:
		if c.allowedCluster(opDescribe) {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.ListGroupsResponse)
			r.Groups, _ = keep(r.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return c.allowedGroup(opDescribe, g.Group) })
		}
	case *kmsg.DeleteGroupsRequest:
		var denied []string
		q.Groups, denied = keep(q.Groups, func(g string) bool { return c.allowedGroup(opDelete, g) })
		if len(denied) == 0 {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.DeleteGroupsResponse)
			for _, g := range denied {
				rg := kmsg.NewDeleteGroupsResponseGroup()
				rg.Group, rg.ErrorCode = g, groupDenied
				r.Groups = append(r.Groups, rg)
			}
		}
	case *kmsg.OffsetDeleteRequest:
		if !c.allowedGroup(opDelete, q.Group) {
			r := q.ResponseKind().(*kmsg.OffsetDeleteResponse)
			r.ErrorCode = groupDenied
			return r, nil
		}
		var denied []kmsg.OffsetDeleteRequestTopic
		q.Topics, denied = keep(q.Topics, func(t kmsg.OffsetDeleteRequestTopic) bool { return c.allowedTopic(opRead, t.Topic) })
		if len(denied) == 0 {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.OffsetDeleteResponse)
			for _, t := range denied {
				rt := kmsg.NewOffsetDeleteResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetDeleteResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, topicDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
	case *kmsg.CreateTopicsRequest:
		all := q.Topics
		if !c.allowedCluster(opCreate) {
			q.Topics, _ = keep(q.Topics, func(t kmsg.CreateTopicsRequestTopic) bool { return c.allowedTopic(opCreate, t.Topic) })
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.CreateTopicsResponse)
			got := map[string]kmsg.CreateTopicsResponseTopic{}
			for _, t := range r.Topics {
				// A topic created by one who may not describe its configs
				// is answered without them, as Kafka's controller does.
				if t.ErrorCode == 0 && !c.allowedTopic(opDescribeConfigs, t.Topic) {
					t.Configs, t.NumPartitions, t.ReplicationFactor, t.ConfigErrorCode = nil, -1, -1, topicDenied
				}
				got[t.Topic] = t
			}
			r.Topics = r.Topics[:0]
			for _, t := range all {
				rt, ok := got[t.Topic]
				if !ok {
					rt = kmsg.NewCreateTopicsResponseTopic()
					rt.Topic, rt.ErrorCode, rt.NumPartitions, rt.ReplicationFactor = t.Topic, topicDenied, -1, -1
					rt.ErrorMessage = strPtr("Authorization failed.")
				}
				r.Topics = append(r.Topics, rt)
			}
		}
	case *kmsg.DeleteTopicsRequest:
		return nil, c.authorizeDeleteTopics(q)
	case *kmsg.DeleteRecordsRequest:
		var denied []kmsg.DeleteRecordsRequestTopic
		q.Topics, denied = keep(q.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool { return c.allowedTopic(opDelete, t.Topic) })
		if len(denied) == 0 {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.DeleteRecordsResponse)
			for _, t := range denied {
				rt := kmsg.NewDeleteRecordsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewDeleteRecordsResponseTopicPartition()
					rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, topicDenied, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
	case *kmsg.InitProducerIDRequest:
		r := q.ResponseKind().(*kmsg.InitProducerIDResponse)
		r.ProducerID, r.ProducerEpoch = -1, -1
		if q.TransactionalID != nil {
			if !c.allowed(opWrite, kmsg.ACLResourceTypeTransactionalId, *q.TransactionalID) {
				r.ErrorCode = txnDenied
				return r, nil
			}
			return nil, nil
		}
		if !c.allowedCluster(opIdempotentWrite) && !c.s.authorizer.AuthorizeAny(c.s.ctrl.Image().Acls, acl.Request{Principal: c.Principal().String(), Host: c.host()}, opWrite, kmsg.ACLResourceTypeTopic) {
			r.ErrorCode = clusterDenied
			return r, nil
		}
	case *kmsg.OffsetForLeaderEpochRequest:
		if c.allowedCluster(opClusterAction) {
			return nil, nil
		}
		var denied []kmsg.OffsetForLeaderEpochRequestTopic
		q.Topics, denied = keep(q.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) bool { return c.allowedTopic(opDescribe, t.Topic) })
		if len(denied) == 0 {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.OffsetForLeaderEpochResponse)
			for _, t := range denied {
				rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
					rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, topicDenied, -1, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
	case *kmsg.DescribeConfigsRequest:
		return nil, c.authorizeConfigs(q)
	case *kmsg.AlterConfigsRequest:
		return nil, c.authorizeConfigs(q)
	case *kmsg.IncrementalAlterConfigsRequest:
		return nil, c.authorizeConfigs(q)
	case *kmsg.DescribeLogDirsRequest:
		if !c.allowedCluster(opDescribe) {
			r := q.ResponseKind().(*kmsg.DescribeLogDirsResponse)
			r.ErrorCode = clusterDenied
			return r, nil
		}
	case *kmsg.CreatePartitionsRequest:
		all := q.Topics
		q.Topics, _ = keep(q.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool { return c.allowedTopic(opAlter, t.Topic) })
		if len(q.Topics) == len(all) {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.CreatePartitionsResponse)
			got := map[string]kmsg.CreatePartitionsResponseTopic{}
			for _, t := range r.Topics {
				got[t.Topic] = t
			}
			r.Topics = r.Topics[:0]
			for _, t := range all {
				rt, ok := got[t.Topic]
				if !ok {
					rt = kmsg.NewCreatePartitionsResponseTopic()
					rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, topicDenied, strPtr("The topic authorization is failed.")
				}
				r.Topics = append(r.Topics, rt)
			}
		}
	case *kmsg.ElectLeadersRequest:
		if !c.allowedCluster(opAlter) {
			r := q.ResponseKind().(*kmsg.ElectLeadersResponse)
			r.ErrorCode = clusterDenied
			for _, t := range q.Topics {
				rt := kmsg.NewElectLeadersResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewElectLeadersResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, clusterDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
			return r, nil
		}
	case *kmsg.UpdateFeaturesRequest:
		// Here and not only in the handler: a forwarded request reaches the
		// controller on its controller listener, where every request is
		// allowed, so the broker that received it must judge it.
		if !c.allowedCluster(opAlter) {
			r := q.ResponseKind().(*kmsg.UpdateFeaturesResponse)
			msg := strPtr("Cluster authorization failed.")
			r.ErrorCode, r.ErrorMessage = clusterDenied, msg
			if q.Version >= 2 {
				return r, nil
			}
			for _, f := range q.FeatureUpdates {
				rr := kmsg.NewUpdateFeaturesResponseResult()
				rr.Feature, rr.ErrorCode, rr.ErrorMessage = f.Feature, clusterDenied, msg
				r.Results = append(r.Results, rr)
			}
			return r, nil
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		if !c.allowedCluster(opAlter) {
			r := q.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
			r.ErrorCode = clusterDenied
			for _, t := range q.Topics {
				rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, clusterDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
			return r, nil
		}
	case *kmsg.ListPartitionReassignmentsRequest:
		if !c.allowedCluster(opDescribe) {
			r := q.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
			r.ErrorCode = clusterDenied
			return r, nil
		}
	case *kmsg.DescribeClusterRequest:
		// Open to all, as in Kafka: it shows only what Metadata does.
		if q.IncludeClusterAuthorizedOperations {
			return nil, func(resp kmsg.Response) {
				r := resp.(*kmsg.DescribeClusterResponse)
				r.ClusterAuthorizedOperations = 0
				if c.allowedCluster(opDescribe) {
					r.ClusterAuthorizedOperations = c.authorizedOps(kmsg.ACLResourceTypeCluster, acl.ClusterName)
				}
			}
		}
	case *kmsg.DescribeQuorumRequest:
		if !c.allowedCluster(opDescribe) {
			r := q.ResponseKind().(*kmsg.DescribeQuorumResponse)
			r.ErrorCode = clusterDenied
			return r, nil
		}
	case *kmsg.UnregisterBrokerRequest:
		if !c.allowedCluster(opAlter) {
			r := q.ResponseKind().(*kmsg.UnregisterBrokerResponse)
			r.ErrorCode = clusterDenied
			return r, nil
		}
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		if !c.allowedCluster(opDescribe) {
			r := q.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
			r.ErrorCode = clusterDenied
			return r, nil
		}
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		if !c.allowedCluster(opAlter) {
			r := q.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
			seen := map[string]bool{}
			add := func(u string) {
				if !seen[u] {
					seen[u] = true
					rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
					rr.User, rr.ErrorCode = u, clusterDenied
					r.Results = append(r.Results, rr)
				}
			}
			for _, d := range q.Deletions {
				add(d.Name)
			}
			for _, u := range q.Upsertions {
				add(u.Name)
			}
			return r, nil
		}
	case *kmsg.DescribeTopicPartitionsRequest:
		// No topics asks for all of them: those it may not describe are
		// left out; named ones it may not describe are refused.
		var denied []kmsg.DescribeTopicPartitionsRequestTopic
		named := len(q.Topics) > 0
		q.Topics, denied = keep(q.Topics, func(t kmsg.DescribeTopicPartitionsRequestTopic) bool { return c.allowedTopic(opDescribe, t.Topic) })
		addDenied := func(r *kmsg.DescribeTopicPartitionsResponse) {
			for _, t := range denied {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				rt.Topic, rt.ErrorCode = strPtr(t.Topic), topicDenied
				r.Topics = append(r.Topics, rt)
			}
		}
		if named && len(q.Topics) == 0 {
			r := q.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
			addDenied(r)
			return r, nil
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.DescribeTopicPartitionsResponse)
			r.Topics, _ = keep(r.Topics, func(t kmsg.DescribeTopicPartitionsResponseTopic) bool {
				return t.Topic == nil || c.allowedTopic(opDescribe, *t.Topic)
			})
			addDenied(r)
		}
	case *kmsg.BrokerRegistrationRequest, *kmsg.BrokerHeartbeatRequest, *kmsg.AlterPartitionRequest, *kmsg.AllocateProducerIDsRequest:
		// Served on controller listeners only, which are not judged.
	case *kmsg.ConsumerGroupHeartbeatRequest, *kmsg.ConsumerGroupDescribeRequest:
		return c.authorizeConsumerGroups(req)
	default:
		return c.authorizeMore(req)
	}
	return nil, nil
}

func produceTopicError(t kmsg.ProduceRequestTopic, code int16) kmsg.ProduceResponseTopic {
	rt := kmsg.NewProduceResponseTopic()
	rt.Topic = t.Topic
	for _, p := range t.Partitions {
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.Partition, rp.ErrorCode, rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = p.Partition, code, -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

func commitTopicError(t kmsg.OffsetCommitRequestTopic, code int16) kmsg.OffsetCommitResponseTopic {
	rt := kmsg.NewOffsetCommitResponseTopic()
	rt.Topic = t.Topic
	for _, p := range t.Partitions {
		rp := kmsg.NewOffsetCommitResponseTopicPartition()
		rp.Partition, rp.ErrorCode = p.Partition, code
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// supportedOps are the operations each resource type has (Kafka's
// AclEntry.supportedOperations), which authorized_operations reports.
var supportedOps = map[acl.ResourceType][]acl.Operation{
	kmsg.ACLResourceTypeTopic:           {opRead, opWrite, opCreate, opDescribe, opDelete, opAlter, opDescribeConfigs, opAlterConfigs},
	kmsg.ACLResourceTypeGroup:           {opRead, opDescribe, opDelete, opDescribeConfigs, opAlterConfigs},
	kmsg.ACLResourceTypeCluster:         {opCreate, opClusterAction, opDescribeConfigs, opAlterConfigs, opIdempotentWrite, opAlter, opDescribe},
	kmsg.ACLResourceTypeTransactionalId: {opDescribe, opWrite},
}

// authorizedOps is the KIP-430 bit field of the operations the
// connection may do on a resource: bit n for operation code n.
func (c *conn) authorizedOps(typ acl.ResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOps[typ] {
		if c.allowed(op, typ, name) {
			bits |= 1 << op
		}
	}
	return bits
}
