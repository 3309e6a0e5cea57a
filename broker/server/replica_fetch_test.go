package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/replica"
)

// A client that claims a replica id, to read past the high watermark or
// move the ISR, is refused (CVE-2018-1288): only a fetch carrying the
// cluster's inter-broker secret is a replica's. A single node has no
// replicas, so every such fetch is refused, with or without a guess.
func TestClientClaimingAReplicaIDIsRefused(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "guarded", 1, nil)
	admProduce(t, admClient(t, s), "guarded", 0, 3)
	for _, guess := range [][]byte{nil, []byte(""), []byte("secret")} {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = 1, 0, 1<<20, -1
		if guess != nil {
			req.UnknownTags.Set(replica.SecretTag, guess)
		}
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "guarded"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := admSend[*kmsg.FetchResponse](t, s, req, 12)
		if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(resp.Topics) != 0 {
			t.Errorf("replica fetch with secret %q: error %v and %d topics, want CLUSTER_AUTHORIZATION_FAILED and none",
				guess, kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
		}
	}
}
