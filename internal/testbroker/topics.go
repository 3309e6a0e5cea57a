package testbroker

import (
	"context"
	"fmt"
	"os/exec"
	"testing"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

// CreateTopic creates a topic with the tributary binary.
func CreateTopic(t testing.TB, addr, topic string, partitions int) {
	t.Helper()
	out, err := exec.Command(Binary(t), "topic", "create", topic, "-b", addr, "-p", fmt.Sprint(partitions)).CombinedOutput()
	if err != nil {
		t.Fatalf("topic create %s: %v\n%s", topic, err, out)
	}
}

// HighWatermarks are a topic's high watermarks, by partition.
func HighWatermarks(t testing.TB, addr, topic string) map[int32]int64 {
	t.Helper()
	ctx := context.Background()
	cl, err := kafkacli.Connect(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	info, err := cl.Topic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := cl.Offsets(ctx, topic, info.PartitionIndexes())
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for p, r := range ranges {
		out[int32(p)] = r.End
	}
	return out
}
