package server

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// The ACL matrix, modelled on Kafka's AuthorizerIntegrationTest and run
// against Apache Kafka 4.4 and Tributary side by side: for each API,
// alice holds the ACLs it needs and bob none, and both brokers must give
// each the same error codes (alice's success codes included, so a broker
// that allows too much or refuses too much differs). PREFIXED patterns,
// DENY over ALLOW (bob allowed through User:*, alice denied) and a super
// user are cases of their own.

var aclUsers = map[string]string{"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}

// aclSide is one broker of the comparison.
type aclSide struct {
	name    string
	addr    string // SASL_PLAINTEXT
	nodeID  int32
	ids     map[string][16]byte
	clients map[string]*kgo.Client
}

func (s *aclSide) send(t *testing.T, user string, req kmsg.Request) kmsg.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := s.clients[user].SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %s as %s: %v", s.name, kmsg.NameForKey(req.Key()), user, err)
	}
	return resp
}

func newAclSide(t *testing.T, name, addr string, versions *kversion.Versions) *aclSide {
	s := &aclSide{name: name, addr: addr, ids: map[string][16]byte{}, clients: map[string]*kgo.Client{}}
	for u, p := range aclUsers {
		opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: u, Pass: p}.AsMechanism()), kgo.RequestRetries(0)}
		if versions != nil {
			opts = append(opts, kgo.MaxVersions(versions))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		s.clients[u] = cl
	}
	return s
}

// setup creates the topics and ACLs every case starts from, as admin.
func (s *aclSide) setup(t *testing.T) {
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 10000
	for _, name := range []string{"acl-topic", "acl-pre-topic", "acl-deny-topic", "acl-del", "acl-none", "acl-host-topic"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		ct.Topics = append(ct.Topics, rt)
	}
	for _, r := range s.send(t, "admin", ct).(*kmsg.CreateTopicsResponse).Topics {
		if r.ErrorCode != 0 {
			t.Fatalf("%s: creating %s: %v", s.name, r.Topic, kerr.ErrorForCode(r.ErrorCode))
		}
		s.ids[r.Topic] = r.TopicID
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		md := kmsg.NewPtrMetadataRequest()
		mr := s.send(t, "admin", md).(*kmsg.MetadataResponse)
		s.nodeID = mr.Brokers[0].NodeID
		ready := 0
		for _, mt := range mr.Topics {
			if len(mt.Partitions) > 0 && mt.Partitions[0].Leader >= 0 {
				ready++
			}
		}
		if ready >= 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: topics without leaders", s.name)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, topic := range []string{"acl-topic", "acl-pre-topic", "acl-deny-topic", "acl-none"} {
		// Metadata may name the leader a moment before it leads.
		for code := int16(-1); code != 0; {
			if code = produceCode(s.send(t, "admin", produceReq(topic))); code != 0 && time.Now().After(deadline) {
				t.Fatalf("%s: admin produce: %v", s.name, kerr.ErrorForCode(code))
			}
		}
	}
	// The coordinators load their topics first; the matrix compares
	// authorization, not that.
	for _, req := range []func() kmsg.Request{
		func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorKey, r.CoordinatorKeys = "acl-group", []string{"acl-group"}
			return r
		},
		func() kmsg.Request { return kmsg.NewPtrInitProducerIDRequest() },
	} {
		for {
			codes := errorCodes(s.send(t, "admin", req()))
			if !slices.ContainsFunc(codes, func(c int16) bool { return c != 0 }) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: coordinator not ready: %v", s.name, named(codes))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	ca := kmsg.NewPtrCreateACLsRequest()
	host := "*"
	add := func(typ kmsg.ACLResourceType, pat kmsg.ACLResourcePatternType, res, principal string, perm kmsg.ACLPermissionType, ops ...kmsg.ACLOperation) {
		for _, op := range ops {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = typ, res, pat
			c.Principal, c.Host, c.Operation, c.PermissionType = principal, host, op, perm
			ca.Creations = append(ca.Creations, c)
		}
	}
	const (
		topic, group, cluster, txn = kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster, kmsg.ACLResourceTypeTransactionalId
		lit, pre                   = kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
		allow, deny                = kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny
	)
	add(topic, lit, "acl-topic", "User:alice", allow, opRead, opWrite, opDelete, opAlter, opAlterConfigs)
	add(topic, lit, "acl-new", "User:alice", allow, opCreate)
	add(topic, lit, "acl-del", "User:alice", allow, opDelete)
	add(topic, pre, "acl-pre-", "User:alice", allow, opWrite)
	add(topic, pre, "acl-auto", "User:alice", allow, opDescribe)
	add(topic, lit, "acl-deny-topic", "User:*", allow, opRead)
	add(topic, lit, "acl-deny-topic", "User:alice", deny, opRead)
	add(group, lit, "acl-group", "User:alice", allow, opRead, opDelete)
	add(group, lit, "acl-group2", "User:alice", allow, opDelete)
	add(cluster, lit, "kafka-cluster", "User:alice", allow, opAlter, opAlterConfigs)
	add(txn, lit, "acl-txn", "User:alice", allow, opWrite)
	// Hosts: the clients connect from 127.0.0.1.
	host = "127.0.0.1"
	add(topic, lit, "acl-host-topic", "User:alice", allow, opWrite)
	host = "10.9.9.9"
	add(topic, lit, "acl-host-topic", "User:alice", deny, opWrite)
	add(topic, lit, "acl-host-topic", "User:bob", allow, opWrite)
	for i, r := range s.send(t, "admin", ca).(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("%s: creating ACL %d: %v", s.name, i, kerr.ErrorForCode(r.ErrorCode))
		}
	}
}

func produceReq(topic string) *kmsg.ProduceRequest {
	b, err := record.Build(record.DefaultBuildOptions(), record.NewRecords(record.KV{Key: []byte("k"), Value: []byte("v")}))
	if err != nil {
		panic(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func produceCode(r kmsg.Response) int16 {
	return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// errorCodes are every ErrorCode field of a response, sorted: what the
// matrix compares.
func errorCodes(r kmsg.Response) []int16 {
	var out []int16
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				f := v.Type().Field(i)
				if f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16 {
					out = append(out, int16(v.Field(i).Int()))
					continue
				}
				walk(v.Field(i))
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				return
			}
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(r))
	slices.Sort(out)
	return out
}

type aclCase struct {
	name string
	req  func(s *aclSide) kmsg.Request
	// codes, when set, replaces errorCodes (answers that list what the
	// principal may see).
	codes func(s *aclSide, r kmsg.Response) []int16
	// denied is the code bob must get somewhere in his answer (0: bob
	// must get no error at all).
	denied int16
	// who are the principals compared: alice and bob unless set.
	who []string
	// aliceDiffers: alice's answer depends on more than authorization
	// (transactions, which Tributary does not have yet): only bob's is
	// compared.
	aliceDiffers bool
}

func aclCases() []aclCase {
	topicReq := func(topic string) func(s *aclSide) kmsg.Request {
		return func(s *aclSide) kmsg.Request { return produceReq(topic) }
	}
	var (
		topicDenied   = kerr.TopicAuthorizationFailed.Code
		groupDenied   = kerr.GroupAuthorizationFailed.Code
		clusterDenied = kerr.ClusterAuthorizationFailed.Code
		txnDenied     = kerr.TransactionalIDAuthorizationFailed.Code
	)
	return []aclCase{
		{name: "Produce", req: topicReq("acl-topic"), denied: topicDenied},
		{name: "Produce/prefixed", req: topicReq("acl-pre-topic"), denied: topicDenied},
		{name: "Produce/hosts", req: topicReq("acl-host-topic"), denied: topicDenied},
		{name: "Produce/super-user", req: topicReq("acl-none"), denied: topicDenied, who: []string{"admin", "bob"}},
		{name: "Fetch", req: func(s *aclSide) kmsg.Request { return fetchReq(s, "acl-topic") }, denied: topicDenied},
		{name: "Fetch/deny-over-allow", req: func(s *aclSide) kmsg.Request { return fetchReq(s, "acl-deny-topic") }, denied: 0},
		{name: "ListOffsets", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "acl-topic"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = -1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, denied: topicDenied},
		{name: "Metadata/named", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("acl-topic")}}
			return r
		}, denied: topicDenied},
		{name: "Metadata/authorized-operations", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("acl-topic")}}
			r.IncludeTopicAuthorizedOperations = true
			return r
		}, codes: func(s *aclSide, r kmsg.Response) []int16 {
			t := r.(*kmsg.MetadataResponse).Topics[0]
			return []int16{t.ErrorCode, int16(t.AuthorizedOperations), int16(t.AuthorizedOperations >> 16)}
		}, denied: topicDenied},
		{name: "DescribeCluster/authorized-operations", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDescribeClusterRequest()
			r.IncludeClusterAuthorizedOperations = true
			return r
		}, codes: func(s *aclSide, r kmsg.Response) []int16 {
			d := r.(*kmsg.DescribeClusterResponse)
			return []int16{d.ErrorCode, int16(d.ClusterAuthorizedOperations), int16(d.ClusterAuthorizedOperations >> 16)}
		}},
		{name: "Metadata/all", req: func(s *aclSide) kmsg.Request { return kmsg.NewPtrMetadataRequest() },
			codes: func(s *aclSide, r kmsg.Response) []int16 {
				var seen []int16 // 1 for each of our topics listed
				for _, t := range r.(*kmsg.MetadataResponse).Topics {
					if t.Topic != nil && s.ids[*t.Topic] != [16]byte{} {
						seen = append(seen, 1)
					}
				}
				return seen
			}},
		{name: "Metadata/auto-create-needs-CREATE", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("acl-auto-x")}}
			r.AllowAutoTopicCreation = true
			return r
		}, denied: topicDenied},
		{name: "OffsetCommit", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation = "acl-group", -1
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = "acl-topic", s.ids["acl-topic"] // v10 names it by id
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = 1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, denied: groupDenied},
		{name: "OffsetCommit/v10-topic-ids", req: func(s *aclSide) kmsg.Request {
			// By id only: the ACLs match the names the ids resolve to;
			// an unknown id is UNKNOWN_TOPIC_ID.
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation = "acl-group", -1
			for _, id := range aclV10IDs(s) {
				rt := kmsg.NewOffsetCommitRequestTopic()
				rt.TopicID = id
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Offset = 1
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
			}
			return r
		}, codes: func(s *aclSide, r kmsg.Response) []int16 {
			c := r.(*kmsg.OffsetCommitResponse)
			out := []int16{c.GetVersion()}
			for _, id := range aclV10IDs(s) {
				code := int16(-999) // the topic is missing from the answer
				for _, t := range c.Topics {
					if t.TopicID == id && len(t.Partitions) == 1 {
						code = t.Partitions[0].ErrorCode
					}
				}
				out = append(out, code)
			}
			return out
		}},
		{name: "OffsetFetch/v10-topic-ids", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "acl-group"
			for _, id := range aclV10IDs(s) {
				g.Topics = append(g.Topics, kmsg.OffsetFetchRequestGroupTopic{TopicID: id, Partitions: []int32{0}})
			}
			r.Groups = append(r.Groups, g)
			return r
		}, codes: func(s *aclSide, r kmsg.Response) []int16 {
			f := r.(*kmsg.OffsetFetchResponse)
			out := []int16{f.GetVersion()}
			for _, g := range f.Groups {
				out = append(out, g.ErrorCode)
				for _, id := range aclV10IDs(s) {
					code := int16(-999)
					for _, t := range g.Topics {
						if t.TopicID == id && len(t.Partitions) == 1 {
							code = t.Partitions[0].ErrorCode
						}
					}
					out = append(out, code)
				}
			}
			return out
		}},
		{name: "OffsetFetch", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "acl-group"
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "acl-topic", TopicID: s.ids["acl-topic"], Partitions: []int32{0}}}
			r.Groups = append(r.Groups, g)
			r.Group, r.Topics = "acl-group", []kmsg.OffsetFetchRequestTopic{{Topic: "acl-topic", Partitions: []int32{0}}}
			return r
		}, denied: groupDenied},
		{name: "FindCoordinator/group", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorKey, r.CoordinatorKeys = "acl-group", []string{"acl-group"}
			return r
		}, denied: groupDenied},
		{name: "FindCoordinator/transaction", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorType = 1
			r.CoordinatorKey, r.CoordinatorKeys = "acl-txn", []string{"acl-txn"}
			return r
		}, denied: txnDenied, aliceDiffers: true},
		{name: "JoinGroup", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = "acl-group", 10000, 10000, "consumer"
			r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0}}}
			return r
		}, denied: groupDenied},
		{name: "Heartbeat", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.MemberID, r.Generation = "acl-group", "nobody", 1
			return r
		}, denied: groupDenied},
		{name: "SyncGroup", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group, r.MemberID, r.Generation = "acl-group", "nobody", 1
			r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
			return r
		}, denied: groupDenied},
		{name: "LeaveGroup", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group, r.MemberID = "acl-group", "nobody"
			r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "nobody"}}
			return r
		}, denied: groupDenied},
		{name: "DescribeGroups", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{"acl-group"}
			return r
		}, denied: groupDenied},
		{name: "DescribeGroups/authorized-operations", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups, r.IncludeAuthorizedOperations = []string{"acl-group"}, true
			return r
		}, codes: func(s *aclSide, r kmsg.Response) []int16 {
			g := r.(*kmsg.DescribeGroupsResponse).Groups[0]
			return []int16{g.ErrorCode, int16(g.AuthorizedOperations), int16(g.AuthorizedOperations >> 16)}
		}, denied: groupDenied},
		{name: "ListGroups", req: func(s *aclSide) kmsg.Request { return kmsg.NewPtrListGroupsRequest() },
			codes: func(s *aclSide, r kmsg.Response) []int16 {
				out := []int16{r.(*kmsg.ListGroupsResponse).ErrorCode}
				for _, g := range r.(*kmsg.ListGroupsResponse).Groups {
					if g.Group == "acl-group" {
						out = append(out, 1)
					}
				}
				return out
			}},
		{name: "OffsetDelete", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = "acl-group"
			r.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "acl-topic", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
			return r
		}, denied: groupDenied},
		{name: "DeleteGroups", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{"acl-group2"}
			return r
		}, denied: groupDenied},
		{name: "CreateTopics", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			r.TimeoutMillis, r.ValidateOnly = 5000, true
			r.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "acl-new", NumPartitions: 1, ReplicationFactor: 1}}
			return r
		}, codes: func(s *aclSide, r kmsg.Response) []int16 {
			// Allowed to create, not to describe its configs.
			t := r.(*kmsg.CreateTopicsResponse).Topics[0]
			return []int16{t.ErrorCode, t.ConfigErrorCode, int16(t.NumPartitions), int16(len(t.Configs))}
		}, denied: topicDenied},
		{name: "CreatePartitions", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			r.TimeoutMillis, r.ValidateOnly = 5000, true
			r.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "acl-topic", Count: 2}}
			return r
		}, denied: topicDenied},
		{name: "DescribeConfigs/topic", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			r.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "acl-topic", ConfigNames: []string{"retention.ms"}}}
			return r
		}, denied: topicDenied},
		{name: "DescribeConfigs/broker", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			r.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: fmt.Sprint(s.nodeID), ConfigNames: []string{"log.retention.ms"}}}
			return r
		}, denied: clusterDenied},
		{name: "AlterConfigs", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			r.ValidateOnly = true
			r.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "acl-topic",
				Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("100000")}}}}
			return r
		}, denied: topicDenied},
		{name: "IncrementalAlterConfigs", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r.ValidateOnly = true
			r.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "acl-topic",
				Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("100000")}}}}
			return r
		}, denied: topicDenied},
		{name: "DeleteRecords", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			r.TimeoutMillis = 5000
			r.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "acl-topic", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}}}
			return r
		}, denied: topicDenied},
		{name: "InitProducerId/idempotent", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionTimeoutMillis = 10000
			return r
		}, denied: clusterDenied},
		{name: "InitProducerId/transactional", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr("acl-txn"), 10000
			return r
		}, denied: txnDenied, aliceDiffers: true},
		{name: "OffsetForLeaderEpoch", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = -1
			r.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "acl-topic", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 0}}}}
			return r
		}, denied: topicDenied},
		{name: "DescribeTopicPartitions", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDescribeTopicPartitionsRequest()
			r.ResponsePartitionLimit = 10
			r.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "acl-topic"}}
			return r
		}, denied: topicDenied},
		{name: "DescribeCluster/open-to-all", req: func(s *aclSide) kmsg.Request { return kmsg.NewPtrDescribeClusterRequest() }, denied: 0},
		{name: "DescribeLogDirs", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDescribeLogDirsRequest()
			r.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: "acl-topic", Partitions: []int32{0}}}
			return r
		}, codes: func(s *aclSide, r kmsg.Response) []int16 { return []int16{r.(*kmsg.DescribeLogDirsResponse).ErrorCode} }, denied: clusterDenied},
		{name: "ListPartitionReassignments", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrListPartitionReassignmentsRequest()
			r.TimeoutMillis = 5000
			return r
		}, denied: clusterDenied},
		{name: "AlterPartitionReassignments", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			r.TimeoutMillis = 5000
			return r
		}, denied: clusterDenied},
		{name: "ElectLeaders", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrElectLeadersRequest()
			r.TimeoutMillis = 5000
			r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "acl-topic", Partitions: []int32{0}}}
			return r
		}, denied: clusterDenied},
		{name: "DescribeUserScramCredentials", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			r.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{} // null makes Kafka 4.4 fail (NullPointerException)
			return r
		}, denied: clusterDenied},
		{name: "DescribeTopicPartitions/all", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDescribeTopicPartitionsRequest()
			r.ResponsePartitionLimit = 100
			return r
		}, codes: func(s *aclSide, r kmsg.Response) []int16 {
			var seen []int16
			for _, t := range r.(*kmsg.DescribeTopicPartitionsResponse).Topics {
				if t.Topic != nil && s.ids[*t.Topic] != [16]byte{} {
					seen = append(seen, 1)
				}
			}
			return seen
		}},
		{name: "DescribeQuorum", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDescribeQuorumRequest()
			r.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
			return r
		}, codes: func(s *aclSide, r kmsg.Response) []int16 { return []int16{r.(*kmsg.DescribeQuorumResponse).ErrorCode} }, denied: clusterDenied},
		{name: "UnregisterBroker", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrUnregisterBrokerRequest()
			r.BrokerID = 99
			return r
		}, denied: clusterDenied},
		{name: "AlterUserScramCredentials", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			r.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "zed", Mechanism: 1, Iterations: 4096,
				Salt: []byte("0123456789abcdef"), SaltedPassword: []byte("0123456789abcdef0123456789abcdef")}}
			return r
		}, denied: clusterDenied},
		{name: "Metadata/by-id", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = []kmsg.MetadataRequestTopic{{TopicID: s.ids["acl-topic"]}}
			return r
		}, codes: func(s *aclSide, r kmsg.Response) []int16 {
			t := r.(*kmsg.MetadataResponse).Topics[0]
			named := int16(0)
			if t.Topic != nil {
				named = 1
			}
			return []int16{t.ErrorCode, named}
		}, denied: topicDenied},
		{name: "DescribeAcls", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeMatch, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			r.ResourceName = kmsg.StringPtr("acl-pre-topic")
			return r
		}, codes: func(s *aclSide, r kmsg.Response) []int16 {
			// MATCH finds the PREFIXED binding.
			d := r.(*kmsg.DescribeACLsResponse)
			out := []int16{d.ErrorCode}
			for _, res := range d.Resources {
				out = append(out, int16(res.ResourcePatternType), int16(len(res.ACLs)))
			}
			return out
		}, denied: clusterDenied},
		{name: "CreateAcls", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			r.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "carol-topic", ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral,
				Principal: "User:carol", Host: "*", Operation: kmsg.ACLOperationRead, PermissionType: kmsg.ACLPermissionTypeAllow}}
			return r
		}, denied: clusterDenied},
		{name: "CreateAcls/invalid", who: []string{"admin"}, req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			c := func(typ kmsg.ACLResourceType, name string, pat kmsg.ACLResourcePatternType, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) kmsg.CreateACLsRequestCreation {
				return kmsg.CreateACLsRequestCreation{ResourceType: typ, ResourceName: name, ResourcePatternType: pat,
					Principal: "User:carol", Host: "*", Operation: op, PermissionType: perm}
			}
			const topic, lit, read, allow = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
			r.Creations = []kmsg.CreateACLsRequestCreation{
				c(topic, "ok-topic", lit, read, allow),
				c(topic, "", lit, read, allow),
				c(kmsg.ACLResourceTypeCluster, "other", lit, kmsg.ACLOperationAlter, allow),
				// A MATCH or ANY value in a creation fails Kafka's whole
				// request with UNKNOWN_SERVER_ERROR (an exception while it
				// reads the request); Tributary refuses that creation
				// alone with INVALID_REQUEST (acl.Binding.Validate).
			}
			return r
		}, codes: func(s *aclSide, r kmsg.Response) []int16 {
			var out []int16 // in order: which creation failed matters
			for _, res := range r.(*kmsg.CreateACLsResponse).Results {
				out = append(out, res.ErrorCode)
			}
			return out
		}},
		{name: "DeleteAcls", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDeleteACLsRequest()
			r.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: kmsg.ACLResourceTypeAny, ResourcePatternType: kmsg.ACLResourcePatternTypeAny,
				Principal: kmsg.StringPtr("User:carol"), Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny}}
			return r
		}, codes: func(s *aclSide, r kmsg.Response) []int16 {
			var out []int16
			for _, fr := range r.(*kmsg.DeleteACLsResponse).Results {
				out = append(out, fr.ErrorCode, int16(len(fr.MatchingACLs)))
			}
			return out
		}, denied: clusterDenied},
		{name: "DeleteTopics", req: func(s *aclSide) kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.TimeoutMillis = 10000
			r.TopicNames = []string{"acl-del"}
			r.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("acl-del")}}
			return r
		}, denied: topicDenied},
	}
}

// aclV10IDs are the topics of the v10 cases: one alice may read, one she
// may not, and an id no topic has.
func aclV10IDs(s *aclSide) [][16]byte {
	return [][16]byte{s.ids["acl-topic"], s.ids["acl-none"], {9, 9, 9, 9}}
}

func fetchReq(s *aclSide, topic string) kmsg.Request {
	r := kmsg.NewPtrFetchRequest()
	r.ReplicaID, r.MaxBytes, r.MinBytes, r.MaxWaitMillis, r.SessionEpoch = -1, 1<<20, 0, 0, -1
	p := kmsg.NewFetchRequestTopicPartition()
	p.PartitionMaxBytes = 1 << 20
	r.Topics = []kmsg.FetchRequestTopic{{Topic: topic, TopicID: s.ids[topic], Partitions: []kmsg.FetchRequestTopicPartition{p}}}
	return r
}

func TestAclMatrixLikeKafka(t *testing.T) {
	t0 := time.Now()
	var kafka *testbroker.Kafka
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		kafka = testbroker.StartKafkaAuthorizer(t, aclUsers, []string{"User:admin"}, "auto.create.topics.enable=true", "transaction.state.log.num.partitions=1")
	}()
	plainPort, saslPort := testbroker.FreePort(t), testbroker.FreePort(t)
	jaas := "org.apache.kafka.common.security.plain.PlainLoginModule required"
	for u, p := range aclUsers {
		jaas += fmt.Sprintf(" user_%s=%q", u, p)
	}
	defer func() { t.Logf("cases done after %v", time.Since(t0)) }()
	trib := testbroker.StartConfig(t, testbroker.Config{
		Dir: t.TempDir(), Port: plainPort,
		Listeners: fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d", plainPort, saslPort),
		Props: []string{
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users=User:admin;User:ANONYMOUS",
			"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + jaas + ";",
			"group.initial.rebalance.delay.ms=0",
			"auto.create.topics.enable=true",
		},
	})
	wg.Wait()
	t.Logf("brokers up after %v", time.Since(t0))
	if t.Failed() {
		t.FailNow()
	}
	// Both are asked in the versions Tributary serves.
	probe := newAclSide(t, "tributary", fmt.Sprintf("127.0.0.1:%d", saslPort), nil)
	av := probe.send(t, "admin", kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	versions := kversion.FromApiVersionsResponse(av)
	sides := []*aclSide{
		newAclSide(t, "kafka", kafka.SASLAddr(), versions),
		newAclSide(t, "tributary", probe.addr, versions),
	}
	start := time.Now()
	for _, s := range sides {
		s.setup(t)
		t.Logf("%s set up after %v", s.name, time.Since(start))
	}
	for _, tc := range aclCases() {
		t.Run(tc.name, func(t *testing.T) {
			who := tc.who
			if who == nil {
				who = []string{"bob", "alice"}
			}
			for _, user := range who {
				if user == "alice" && tc.aliceDiffers {
					continue
				}
				var got [2][]int16
				for i, s := range sides {
					resp := s.send(t, user, tc.req(s))
					if tc.codes != nil {
						got[i] = tc.codes(s, resp)
					} else {
						got[i] = errorCodes(resp)
					}
				}
				if !slices.Equal(got[0], got[1]) {
					t.Errorf("%s: kafka answers %v, tributary %v", user, named(got[0]), named(got[1]))
				}
				bobWrong := slices.ContainsFunc(got[1], func(c int16) bool { return c != 0 })
				if tc.denied != 0 {
					bobWrong = !slices.Contains(got[1], tc.denied)
				}
				if user == "bob" && tc.codes == nil && bobWrong {
					t.Errorf("bob: tributary answers %v, want %v", named(got[1]), kerr.ErrorForCode(tc.denied))
				}
			}
		})
	}
	aclTools(t, kafka.Addr(), trib.Addr())
}

func named(codes []int16) []string {
	out := make([]string, len(codes))
	for i, c := range codes {
		if c == 0 {
			out[i] = "0"
		} else if e := kerr.ErrorForCode(c); e != nil {
			out[i] = fmt.Sprintf("%d:%s", c, e.(*kerr.Error).Message)
		} else {
			out[i] = fmt.Sprint(c)
		}
	}
	return out
}

// aclTools runs Kafka's kafka-acls.sh (AclCommand) and `tributary acl` on
// both brokers, as a super user on their PLAINTEXT listeners, and compares
// what they print.
func aclTools(t *testing.T, kafkaAddr, tribAddr string) {
	both := func(t *testing.T, run func(addr string) (string, error)) string {
		t.Helper()
		var out [2]string
		var errs [2]error
		var wg sync.WaitGroup
		for i, addr := range []string{kafkaAddr, tribAddr} {
			wg.Add(1)
			go func() { defer wg.Done(); out[i], errs[i] = run(addr) }()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s: %v\n%s", []string{"kafka", "tributary"}[i], err, out[i])
			}
		}
		if out[0] != out[1] {
			t.Errorf("kafka prints:\n%s\ntributary prints:\n%s", out[0], out[1])
		}
		return out[1]
	}
	t.Run("kafka-acls.sh", func(t *testing.T) {
		tool := func(args ...string) func(addr string) (string, error) {
			return func(addr string) (string, error) {
				stdout, stderr, err := testbroker.RunKafkaTool(t, "org.apache.kafka.tools.AclCommand", append([]string{"--bootstrap-server", addr}, args...)...)
				return stdout, errors.Join(err, errorIf(stderr != "", stderr))
			}
		}
		out := both(t, tool("--add", "--allow-principal", "User:dave", "--operation", "Read", "--operation", "Describe",
			"--topic", "dave-", "--resource-pattern-type", "prefixed"))
		if !strings.Contains(out, "patternType=PREFIXED") || strings.Count(out, "(principal=User:dave") != 2 {
			t.Errorf("--add printed no PREFIXED binding:\n%s", out)
		}
		// --add printed the ACLs of the resource; --remove runs on
		// Tributary only, to spare a JVM, and DescribeAcls checks it.
		if out, err := tool("--remove", "--force", "--allow-principal", "User:dave", "--operation", "Read", "--operation", "Describe",
			"--topic", "dave-", "--resource-pattern-type", "prefixed")(tribAddr); err != nil {
			t.Fatalf("--remove: %v\n%s", err, out)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(tribAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		req.Principal = kmsg.StringPtr("User:dave")
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil || len(resp.Resources) > 0 {
			t.Errorf("dave's ACLs after --remove: %+v, %v", resp, err)
		}
	})
	t.Run("tributary acl", func(t *testing.T) {
		bin := testbroker.Binary(t)
		cli := func(args ...string) func(addr string) (string, error) {
			return func(addr string) (string, error) {
				out, err := exec.Command(bin, append(append([]string{"acl"}, args...), "-b", addr)...).CombinedOutput()
				return string(out), err
			}
		}
		out := both(t, cli("create", "--allow-principal", "User:erin", "--operation", "Write,Describe", "--topic", "erin-", "--resource-pattern-type", "prefixed",
			"--deny-principal", "User:erin", "--deny-host", "10.0.0.9"))
		if strings.Count(out, "created") != 4 {
			t.Errorf("create:\n%s", out)
		}
		out = both(t, cli("list", "--topic", "erin-orders", "--resource-pattern-type", "match"))
		if strings.Count(out, "PREFIXED") != 4 || !strings.Contains(out, "10.0.0.9") {
			t.Errorf("list by MATCH:\n%s", out)
		}
		out = both(t, cli("delete", "--principal", "User:erin", "--permission", "deny"))
		if strings.Count(out, "deleted") != 2 {
			t.Errorf("delete:\n%s", out)
		}
		if out = both(t, cli("list", "--principal", "User:erin")); strings.Count(out, "ALLOW") != 2 || strings.Contains(out, "DENY") {
			t.Errorf("list after delete:\n%s", out)
		}
	})
}

func errorIf(cond bool, msg string) error {
	if cond {
		return errors.New(msg)
	}
	return nil
}
