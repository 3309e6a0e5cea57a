package testcluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testcluster"
)

// The queue workload against a healthy cluster, as a baseline for the
// chaos tests: franz-go spreading its records over the partitions and
// Kafka's Java producer on one hot partition, at the same time, and a
// perfect score (nothing indeterminate either, since no broker dies).
func TestQueueWorkloadSmoke(t *testing.T) {
	c := testcluster.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const topic = "queue"
	resp, err := c.Admin().CreateTopic(ctx, 3, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	c.Leaders(topic, 10*time.Second)

	start := time.Now()
	gw := testcluster.StartWorkload(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: topic, Records: 20000})
	jp := testcluster.StartJavaProducer(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: topic, Records: 20000, Key: "hot"})
	if d, ok := gw.AwaitAck(start, 10*time.Second); !ok {
		t.Fatalf("no acknowledgement within 10 s (%d errors)", gw.Errors())
	} else {
		t.Logf("first franz-go ack after %v", d.Round(time.Millisecond))
	}
	hg := gw.Wait(t)
	hj := jp.Wait(t)
	t.Logf("produced in %v", time.Since(start).Round(time.Millisecond))

	if gw.Acks() != 20000 || jp.Acks() != 20000 || gw.Errors()+jp.Errors() != 0 || gw.LastAck().IsZero() {
		t.Errorf("acks: franz-go %d, java %d; errors %d, %d", gw.Acks(), jp.Acks(), gw.Errors(), jp.Errors())
	}
	if len(hg.DataLoss) > 0 {
		t.Errorf("franz-go reported data loss on %v", hg.DataLoss)
	}
	spread, hot := map[int32]int{}, map[int32]int{}
	for _, a := range hg.Acked {
		spread[a.Partition]++
	}
	for _, a := range hj.Acked {
		hot[a.Partition]++
	}
	if len(spread) != 3 || len(hot) != 1 {
		t.Errorf("records by partition: franz-go %v (want all 3), java %v (want 1, the hot key's)", spread, hot)
	}

	s := c.Score(topic, hg, hj)
	t.Logf("score: %s", s)
	s.Check(t, 40000)
	if s.Attempted != 40000 || s.Acknowledged != 40000 || s.Read != 40000 {
		t.Errorf("want 40000 attempted, acknowledged and read: %s", s)
	}
}
