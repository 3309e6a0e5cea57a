package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/replica"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestShareGroupAuthorization: share groups under ACLs, as Kafka 4's
// KafkaApis answers: ShareGroupHeartbeat needs READ on the group and
// DESCRIBE on the topics, ShareFetch and ShareAcknowledge READ on the group
// (else the whole request is GROUP_AUTHORIZATION_FAILED) and READ on each
// topic (else its partitions are TOPIC_AUTHORIZATION_FAILED),
// ShareGroupDescribe DESCRIBE on the group.
func TestShareGroupAuthorization(t *testing.T) {
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
	for _, name := range []string{"sha-ok", "sha-secret"} {
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
	// alice may READ group sha and topic sha-ok, and DESCRIBE sha-secret;
	// bob nothing.
	ca := kmsg.NewPtrCreateACLsRequest()
	for _, a := range []struct {
		typ  kmsg.ACLResourceType
		name string
		op   kmsg.ACLOperation
	}{{kmsg.ACLResourceTypeGroup, "sha", kmsg.ACLOperationRead}, {kmsg.ACLResourceTypeTopic, "sha-ok", kmsg.ACLOperationRead}, {kmsg.ACLResourceTypeTopic, "sha-secret", kmsg.ACLOperationDescribe},
		// CLUSTER_ACTION: alice may send the share coordinator's
		// persister RPCs, as a Kafka broker's principal may.
		{kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLOperationClusterAction}} {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = a.typ, a.name, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", a.op, kmsg.ACLPermissionTypeAllow
		ca.Creations = append(ca.Creations, c)
	}
	for _, r := range s.send(t, "admin", ca).(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"sha"}
	s.send(t, "admin", fc) // creates __consumer_offsets
	hb := func(user string, topics ...string) int16 {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			r := kmsg.NewPtrShareGroupHeartbeatRequest()
			r.GroupID, r.MemberID, r.SubscribedTopicNames = "sha", "m-"+user, topics
			code := s.send(t, user, r).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode
			if (code == kerr.CoordinatorLoadInProgress.Code || code == kerr.NotCoordinator.Code || code == kerr.CoordinatorNotAvailable.Code) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			return code
		}
	}
	admWantCode(t, "bob heartbeats", hb("bob", "sha-ok"), nil, kerr.GroupAuthorizationFailed)
	admWantCode(t, "alice subscribes to a topic she may not describe", hb("alice", "sha-ok", "sha-none"), nil, kerr.TopicAuthorizationFailed)
	admWantCode(t, "alice heartbeats", hb("alice", "sha-ok"), nil, nil)
	fetch := func(user string) *kmsg.ShareFetchResponse {
		group, member := "sha", "m-"+user
		r := kmsg.NewPtrShareFetchRequest()
		r.GroupID, r.MemberID, r.MaxRecords, r.MaxBytes = &group, &member, 10, 1<<20
		for _, name := range []string{"sha-ok", "sha-secret"} {
			r.Topics = append(r.Topics, kmsg.ShareFetchRequestTopic{TopicID: s.ids[name], Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}})
		}
		return s.send(t, user, r).(*kmsg.ShareFetchResponse)
	}
	admWantCode(t, "bob fetches", fetch("bob").ErrorCode, nil, kerr.GroupAuthorizationFailed)
	f := fetch("alice")
	admWantCode(t, "alice fetches", f.ErrorCode, nil, nil)
	// Both topics must be answered (review T2): a reply omitting the
	// refused one would pass the loop below.
	if len(f.Topics) != 2 {
		t.Fatalf("alice's fetch answered %d topics, want both", len(f.Topics))
	}
	for _, tp := range f.Topics {
		want := kerr.TopicAuthorizationFailed
		if tp.TopicID == s.ids["sha-ok"] {
			want = nil
		}
		for _, p := range tp.Partitions {
			admWantCode(t, fmt.Sprintf("alice fetches topic %x", tp.TopicID[:4]), p.ErrorCode, nil, want)
		}
	}
	group, member := "sha", "m-bob"
	ar := kmsg.NewPtrShareAcknowledgeRequest()
	ar.GroupID, ar.MemberID, ar.ShareSessionEpoch = &group, &member, 1
	admWantCode(t, "bob acknowledges", s.send(t, "bob", ar).(*kmsg.ShareAcknowledgeResponse).ErrorCode, nil, kerr.GroupAuthorizationFailed)
	d := kmsg.NewPtrShareGroupDescribeRequest()
	d.GroupIDs = []string{"sha"}
	admWantCode(t, "bob describes", s.send(t, "bob", d).(*kmsg.ShareGroupDescribeResponse).Groups[0].ErrorCode, nil, kerr.GroupAuthorizationFailed)

	// The admin APIs of share groups (review T2): DESCRIBE, READ and
	// DELETE on the group, ALTER_CONFIGS for its configs.
	dso := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	dsg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	dsg.GroupID = "sha"
	dso.Groups = append(dso.Groups, dsg)
	admWantCode(t, "bob describes share offsets", s.send(t, "bob", dso).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].ErrorCode, nil, kerr.GroupAuthorizationFailed)
	aso := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	aso.GroupID = "sha"
	aso.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "sha-ok", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0}}}}
	admWantCode(t, "bob alters share offsets", s.send(t, "bob", aso).(*kmsg.AlterShareGroupOffsetsResponse).ErrorCode, nil, kerr.GroupAuthorizationFailed)
	xso := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	xso.GroupID = "sha"
	xso.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "sha-ok"}}
	admWantCode(t, "alice (no DELETE) deletes share offsets", s.send(t, "alice", xso).(*kmsg.DeleteShareGroupOffsetsResponse).ErrorCode, nil, kerr.GroupAuthorizationFailed)
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"sha"}
	admWantCode(t, "alice (no DELETE) deletes the share group", s.send(t, "alice", dg).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, nil, kerr.GroupAuthorizationFailed)
	ic := kmsg.NewPtrIncrementalAlterConfigsRequest()
	icr := kmsg.NewIncrementalAlterConfigsRequestResource()
	icr.ResourceType, icr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sha"
	icc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	icc.Name, icc.Value = "share.auto.offset.reset", strPtr("earliest")
	icr.Configs = append(icr.Configs, icc)
	ic.Resources = append(ic.Resources, icr)
	admWantCode(t, "alice (no ALTER_CONFIGS) sets a share group config", s.send(t, "alice", ic).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode, nil, kerr.GroupAuthorizationFailed)
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "sha"}}
	admWantCode(t, "alice (no DESCRIBE_CONFIGS) describes a share group's configs", s.send(t, "alice", dc).(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode, nil, kerr.GroupAuthorizationFailed)

	// The share coordinator's persister RPCs the group coordinator sends
	// for the admin calls: brokers (or CLUSTER_ACTION) only.
	sum := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	sum.GroupID = "sha"
	sum.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0, LeaderEpoch: -1}}}}
	admWantCode(t, "bob reads a share-state summary", s.send(t, "bob", sum).(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0].ErrorCode, nil, kerr.ClusterAuthorizationFailed)
	ini := kmsg.NewPtrInitializeShareGroupStateRequest()
	ini.GroupID = "sha"
	ini.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0, StateEpoch: 99}}}}
	admWantCode(t, "bob initializes share state", s.send(t, "bob", ini).(*kmsg.InitializeShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode, nil, kerr.ClusterAuthorizationFailed)
	// A wrong cluster secret is no secret.
	ini.UnknownTags.Set(replica.SecretTag, []byte("not-the-secret"))
	admWantCode(t, "bob initializes share state with a wrong secret", s.send(t, "bob", ini).(*kmsg.InitializeShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode, nil, kerr.ClusterAuthorizationFailed)
	sum.UnknownTags.Set(replica.SecretTag, []byte("not-the-secret"))
	admWantCode(t, "bob reads a share-state summary with a wrong secret", s.send(t, "bob", sum).(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0].ErrorCode, nil, kerr.ClusterAuthorizationFailed)
	// alice holds CLUSTER_ACTION: her initialization and summary read are
	// served (after the state topic is there and loaded).
	ini.UnknownTags, sum.UnknownTags = kmsg.Tags{}, kmsg.Tags{}
	var code int16
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code = s.send(t, "alice", ini).(*kmsg.InitializeShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
		if code == 0 || !retriable(asKerr(kerr.ErrorForCode(code))) || time.Now().After(deadline) {
			break
		}
	}
	admWantCode(t, "alice (CLUSTER_ACTION) initializes share state", code, nil, nil)
	sr := s.send(t, "alice", sum).(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0]
	if sr.ErrorCode != 0 || sr.StateEpoch != 99 || sr.StartOffset != 0 {
		t.Errorf("alice (CLUSTER_ACTION) reads the summary: %v epoch %d start %d, want epoch 99 start 0", kerr.ErrorForCode(sr.ErrorCode), sr.StateEpoch, sr.StartOffset)
	}
}
