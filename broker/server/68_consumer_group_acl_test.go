package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestConsumerGroupTopicAuthorization: KIP-848 groups under ACLs, as Kafka
// 4 answers: subscribing by name to a topic the member may not DESCRIBE is
// TOPIC_AUTHORIZATION_FAILED; a regex resolves only to describable topics;
// ConsumerGroupDescribe of a group naming a topic the caller may not
// DESCRIBE is TOPIC_AUTHORIZATION_FAILED without its members.
func TestConsumerGroupTopicAuthorization(t *testing.T) {
	t.Parallel()
	plainPort, saslPort := testbroker.FreePort(t), testbroker.FreePort(t)
	jaas := "org.apache.kafka.common.security.plain.PlainLoginModule required"
	for u, p := range aclUsers {
		jaas += fmt.Sprintf(" user_%s=%q", u, p)
	}
	testbroker.StartConfig(t, testbroker.Config{
		Dir: t.TempDir(), Port: plainPort,
		Listeners: fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d", plainPort, saslPort),
		Props: []string{
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users=User:admin;User:ANONYMOUS",
			"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + jaas + ";",
		},
	})
	s := newAclSide(t, "tributary", fmt.Sprintf("127.0.0.1:%d", saslPort), nil)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 10000
	for _, name := range []string{"cga-ok", "cga-secret"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		ct.Topics = append(ct.Topics, rt)
	}
	for _, r := range s.send(t, "admin", ct).(*kmsg.CreateTopicsResponse).Topics {
		if r.ErrorCode != 0 {
			t.Fatalf("creating %s: %v", r.Topic, kerr.ErrorForCode(r.ErrorCode))
		}
		s.ids[r.Topic] = r.TopicID
	}
	ca := kmsg.NewPtrCreateACLsRequest()
	for _, a := range []struct {
		typ  kmsg.ACLResourceType
		name string
	}{{kmsg.ACLResourceTypeGroup, "cga"}, {kmsg.ACLResourceTypeTopic, "cga-ok"}} {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = a.typ, a.name, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		ca.Creations = append(ca.Creations, c)
	}
	for _, r := range s.send(t, "admin", ca).(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"cga"}
	s.send(t, "admin", fc) // creates __consumer_offsets
	hb := func(user, member string, names []string, re *string) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberID, r.RebalanceTimeoutMillis = "cga", member, 30000
			r.SubscribedTopicNames, r.SubscribedTopicRegex, r.Topics = names, re, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			resp := s.send(t, user, r).(*kmsg.ConsumerGroupHeartbeatResponse)
			switch resp.ErrorCode {
			case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
				if time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
					continue
				}
			}
			return resp
		}
	}
	if r := hb("alice", "m-names", []string{"cga-ok", "cga-secret"}, nil); r.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice subscribing to cga-secret by name: error %d, want TOPIC_AUTHORIZATION_FAILED", r.ErrorCode)
	}
	re := "cga-.*"
	r := hb("alice", "m-regex", nil, &re)
	if r.ErrorCode != 0 || r.Assignment == nil || len(r.Assignment.Topics) != 1 || r.Assignment.Topics[0].TopicID != s.ids["cga-ok"] {
		t.Fatalf("alice subscribing to %q: %+v; want cga-ok only", re, r)
	}
	describe := func(user string) kmsg.ConsumerGroupDescribeResponseGroup {
		d := kmsg.NewPtrConsumerGroupDescribeRequest()
		d.Groups = []string{"cga"}
		return s.send(t, user, d).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
	}
	if g := describe("alice"); g.ErrorCode != 0 || len(g.Members) != 1 {
		t.Fatalf("alice describing her group: %+v", g)
	}
	if r := hb("admin", "m-admin", []string{"cga-secret"}, nil); r.ErrorCode != 0 {
		t.Fatalf("admin joining with cga-secret: %+v", r)
	}
	if g := describe("alice"); g.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(g.Members) != 0 {
		t.Fatalf("alice describing a group that uses cga-secret: error %d, %d members; want TOPIC_AUTHORIZATION_FAILED and none", g.ErrorCode, len(g.Members))
	}
	if g := describe("admin"); g.ErrorCode != 0 || len(g.Members) != 2 {
		t.Fatalf("admin describing the group: %+v", g)
	}
}
