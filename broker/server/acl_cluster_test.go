package server_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// TestAclsOnEveryBroker: in a three-node cluster with the authorizer, an
// ACL created through a broker that is not the active controller judges
// the next request on every broker, as soon as CreateAcls returns; a
// deleted one stops doing so as soon as DeleteAcls returns. The brokers
// replicate as User:ANONYMOUS, a super user.
func TestAclsOnEveryBroker(t *testing.T) {
	t.Parallel()
	start := time.Now()
	var mu sync.Mutex
	sasl := map[int32]string{}
	c := testcluster.StartCustom(t, 3, func(n *testcluster.Node, cfg *testbroker.Config) {
		port := testbroker.FreePort(t)
		mu.Lock()
		sasl[n.ID] = fmt.Sprintf("127.0.0.1:%d", port)
		mu.Unlock()
		cfg.Listeners += fmt.Sprintf(",SASL_PLAINTEXT://127.0.0.1:%d", port)
		cfg.Props = append(cfg.Props, "inter.broker.listener.name=PLAINTEXT",
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users=User:ANONYMOUS",
			"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
			`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`)
	})
	t.Logf("cluster started after %v", time.Since(start))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 3, 3, nil, "guarded"); err != nil {
		t.Fatal(err)
	}
	controller := c.Controller(10 * time.Second)
	via := controller%3 + 1 // a broker that forwards
	// describeCode is what Metadata answers alice for the topic on node id.
	describeCode := func(id int32) int16 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(sasl[id]), kgo.RequestRetries(0), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("guarded")}}
		resp, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode
	}
	for id := int32(1); id <= 3; id++ {
		if code := describeCode(id); code != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("alice without ACLs on broker %d: %v", id, kerr.ErrorForCode(code))
		}
	}
	admin := mustClient(t, c.Node(via).Addr())
	create := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, "guard", kmsg.ACLResourcePatternTypePrefixed
	cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:alice", "*", kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeAllow
	create.Creations = append(create.Creations, cr)
	cresp, err := create.RequestWith(ctx, admin)
	if err != nil || cresp.Results[0].ErrorCode != 0 {
		t.Fatalf("CreateAcls through broker %d: %+v %v", via, cresp, err)
	}
	for id := int32(1); id <= 3; id++ {
		if code := describeCode(id); code != 0 {
			t.Errorf("ACL created through broker %d: alice still refused on broker %d: %v", via, id, kerr.ErrorForCode(code))
		}
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	f.Principal = kmsg.StringPtr("User:alice")
	del.Filters = append(del.Filters, f)
	dresp, err := del.RequestWith(ctx, admin)
	if err != nil || dresp.Results[0].ErrorCode != 0 || len(dresp.Results[0].MatchingACLs) != 1 {
		t.Fatalf("DeleteAcls through broker %d: %+v %v", via, dresp, err)
	}
	for id := int32(1); id <= 3; id++ {
		if code := describeCode(id); code != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("ACL deleted through broker %d: alice still allowed on broker %d: %v", via, id, kerr.ErrorForCode(code))
		}
	}
	// UpdateFeatures is forwarded to the controller, which serves it on
	// its controller listener: the broker alice talks to must refuse it.
	alice, err := kgo.NewClient(kgo.SeedBrokers(sasl[via]), kgo.RequestRetries(0), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	for _, v := range []int16{1, 2} {
		uf := kmsg.NewPtrUpdateFeaturesRequest()
		uf.SetVersion(v)
		fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = "transaction.version", 0, 2
		uf.FeatureUpdates = append(uf.FeatureUpdates, fu)
		uresp, err := alice.SeedBrokers()[0].Request(ctx, uf)
		if err != nil {
			t.Fatal(err)
		}
		if code := uresp.(*kmsg.UpdateFeaturesResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("UpdateFeatures v%d from alice through broker %d: %v, want CLUSTER_AUTHORIZATION_FAILED", v, via, kerr.ErrorForCode(code))
		}
	}
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range av.FinalizedFeatures {
		if f.Name == "transaction.version" && f.MaxVersionLevel != 2 {
			t.Errorf("transaction.version is %d after alice's refused downgrade, want 2", f.MaxVersionLevel)
		}
	}
	t.Logf("took %v", time.Since(start))
}
