package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A full fetch names a session id with epoch -1 (close it, no new one) or 0
// (open one); either way Kafka answers with the data. kafka-go's
// Client.Fetch sends id -1, epoch -1. Only an incremental fetch (epoch > 0)
// names a session that must exist.
func TestFetchSessionEpochs(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "sessions", 1, nil)
	admProduce(t, admClient(t, s), "sessions", 0, 3)
	for _, tc := range []struct {
		id, epoch int32
		want      *kerr.Error
	}{
		{-1, -1, nil},
		{0, -1, nil},
		{0, 0, nil},
		{12345, -1, nil},
		{12345, 1, kerr.FetchSessionIDNotFound},
	} {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 0, 1<<20
		req.SessionID, req.SessionEpoch = tc.id, tc.epoch
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "sessions"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 0, 1<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := admSend[*kmsg.FetchResponse](t, s, req, 11)
		if tc.want != nil {
			if resp.ErrorCode != tc.want.Code || len(resp.Topics) != 0 {
				t.Errorf("session %d epoch %d: error %v with %d topics, want %v and none", tc.id, tc.epoch, kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics), tc.want)
			}
			continue
		}
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
			t.Errorf("session %d epoch %d: want the records, got error %v, %d topics", tc.id, tc.epoch, kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
		}
		if resp.SessionID != 0 {
			t.Errorf("session %d epoch %d: the answer opens session %d; the broker hands out none", tc.id, tc.epoch, resp.SessionID)
		}
	}
}
