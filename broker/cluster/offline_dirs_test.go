package cluster

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A broker's report of a failed log dir takes the replicas it names out of
// their ISR, moving the leadership of those it led to another ISR member
// with a new leader epoch, and leaves its other replicas alone; the
// registration keeps the report, a repeat changes nothing, and a report
// without the current broker epoch is refused.
func TestOfflineDirMovesOnlyItsReplicas(t *testing.T) {
	c, tp := threeBrokers(t)
	// Broker 2 loses the dir holding partitions 0 and 1, not 2.
	var offline []ReplicaRef
	for _, i := range []int32{0, 1} {
		offline = append(offline, ReplicaRef{TopicID: tp.ID, Partition: i})
	}
	before := c.Image().Topics["t"].Partitions
	epoch := c.Image().Brokers[2].Epoch
	wantCode(t, c.ReportOfflineDirs(2, epoch+1, []string{"dirB"}, offline), kerr.StaleBrokerEpoch)
	if err := c.ReportOfflineDirs(2, epoch, []string{"dirB"}, offline); err != nil {
		t.Fatal(err)
	}
	after := c.Image().Topics["t"].Partitions
	for i := range int32(2) {
		p, was := after[i], before[i]
		if slices.Contains(p.ISR, 2) || p.Leader == 2 || p.Leader < 0 {
			t.Errorf("partition %d after broker 2's dir failed: %+v", i, p)
		}
		if was.Leader == 2 && p.LeaderEpoch != was.LeaderEpoch+1 {
			t.Errorf("partition %d: leader epoch %d, want %d", i, p.LeaderEpoch, was.LeaderEpoch+1)
		}
		if was.Leader != 2 && p.Leader != was.Leader {
			t.Errorf("partition %d: leader moved from %d to %d though broker 2 did not lead it", i, was.Leader, p.Leader)
		}
	}
	if p := after[2]; !slices.Contains(p.ISR, 2) || p.PartitionEpoch != before[2].PartitionEpoch {
		t.Errorf("partition 2, not in the failed dir, changed: %+v (was %+v)", p, before[2])
	}
	b := c.Image().Brokers[2]
	if b.Fenced || !slices.Equal(b.OfflineLogDirs, []string{"dirB"}) || len(b.OfflineReplicas) != 2 {
		t.Errorf("broker 2's registration after the report: %+v", b)
	}
	off := c.Image().Offset
	if err := c.ReportOfflineDirs(2, epoch, []string{"dirB"}, offline); err != nil || c.Image().Offset != off {
		t.Errorf("a repeated report: %v, offset %d -> %d", err, off, c.Image().Offset)
	}
}
