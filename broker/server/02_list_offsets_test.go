package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListOffsetsTieredSpecs: on a topic that is not tiered, the versions
// advertised for the tiered timestamps answer as Kafka does: -4
// (EARLIEST_LOCAL, v8) is the log start, -5 (LATEST_TIERED, v9) and -6
// (EARLIEST_PENDING_UPLOAD, v11) are -1 with no leader epoch; v10's
// TimeoutMs is taken. (The tiered answers: TestTieredStorageHDFS.)
func TestListOffsetsTieredSpecs(t *testing.T) {
	s := startAdminBroker(t, nil)
	cl := admClient(t, s)
	admCreateTopic(t, s, "plain", 1, nil)
	admProduce(t, cl, "plain", 0, 10)
	for _, c := range []struct {
		version   int16
		ts        int64
		offset    int64
		anyEpoch  bool
		wantEpoch int32
	}{
		{8, -4, 0, true, 0},
		{9, -5, -1, false, -1},
		{10, -5, -1, false, -1},
		{11, -6, -1, false, -1},
		{11, -1, 10, true, 0},
	} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		req.TimeoutMillis = 1000
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "plain"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, c.ts, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := admSend[*kmsg.ListOffsetsResponse](t, s, req, c.version)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d %d: %+v", c.version, c.ts, resp)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.Offset != c.offset || (!c.anyEpoch && p.LeaderEpoch != c.wantEpoch) {
			t.Errorf("v%d timestamp %d: offset %d epoch %d %v; want offset %d", c.version, c.ts, p.Offset, p.LeaderEpoch, kerr.ErrorForCode(p.ErrorCode), c.offset)
		}
	}
}
