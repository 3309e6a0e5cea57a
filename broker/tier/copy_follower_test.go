package tier_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/atomicfile"
	"github.com/tributary-io/tributary/internal/remotelog"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// TestTieredFollowerCopiesWithoutRemoteState: a follower that cannot take
// the remote range's state from remote storage copies that range from
// its leader (Fetch v12, which the leader serves from remote storage) and
// joins the ISR, rather than retry a rebuild forever:
//   - node 2 has remote storage, but the remote segments carry no exact
//     producer snapshot (as older uploads): it must not start with no
//     producers (Kafka requires the snapshot);
//   - node 3 has remote.log.storage.system.enable off (turned on broker by
//     broker).
//
// The remote store is a file:// directory the nodes share.
func TestTieredFollowerCopiesWithoutRemoteState(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	began := time.Now()
	c := testcluster.StartCustom(t, 3, func(n *testcluster.Node, cfg *testbroker.Config) {
		if n.ID != 3 {
			cfg.Props = append(cfg.Props, "remote.log.storage.system.enable=true")
		}
	},
		"rsm.config.storage.uri=file://"+root,
		"remote.log.manager.task.interval.ms=100",
		"log.retention.check.interval.ms=100",
		"log.segment.delete.delay.ms=0",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	t.Cleanup(func() {
		if t.Failed() {
			for _, node := range c.Nodes {
				t.Logf("node %d log:\n%s", node.ID, lastLines(node.Log(), 30))
			}
		}
	})
	const topic = "copied"
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(2048))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// On node 1 alone at first.
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{1}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	for k, v := range map[string]string{"remote.storage.enable": "true", "segment.bytes": "4096", "local.retention.bytes": "4096"} {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && resp.Topics[0].ErrorCode != 0 {
		err = fmt.Errorf("create %s: error %d", topic, resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster up after %v", time.Since(began))
	const n = 600
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte(fmt.Sprintf("v%09d %s", i, strings.Repeat("x", 60)))}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "node 1 to keep only its recent segments", func() bool {
		return localLogs(t, c.Node(1).DataDir(), topic+"-0")[0] > 0
	})
	// Wait for the uploads to settle, then take the exact-snapshot mark
	// off every remote segment, as older code uploaded them: in every
	// manifest version, so that whichever is the newest says so.
	var vers []string
	waitFor(t, ctx, "the remote manifest", func() bool {
		vers, _ = filepath.Glob(filepath.Join(root, "*", "0", remotelog.ManifestDir, "*.json"))
		return len(vers) > 0
	})
	time.Sleep(500 * time.Millisecond)
	vers, _ = filepath.Glob(filepath.Join(root, "*", "0", remotelog.ManifestDir, "*.json"))
	for _, man := range vers {
		data, err := os.ReadFile(man)
		if err != nil {
			t.Fatal(err)
		}
		m, err := remotelog.ParseManifest(data)
		if err != nil {
			t.Fatal(err)
		}
		for i := range m.Segments {
			m.Segments[i].ProducerState = ""
		}
		if err := atomicfile.WriteFile(man, m.Encode()); err != nil {
			t.Fatal(err)
		}
	}

	t.Logf("remote segments unmarked after %v", time.Since(began))
	adm := c.Admin()
	isr := func(want int32) func() bool {
		return func() bool {
			md, err := adm.Metadata(ctx, topic)
			return err == nil && slices.Contains(md.Topics[topic].Partitions[0].ISR, want)
		}
	}
	for _, node := range []int32{2, 3} {
		var ar kadm.AlterPartitionAssignmentsReq
		replicas := []int32{1, 2}
		if node == 3 {
			replicas = []int32{1, 2, 3}
		}
		ar.Assign(topic, 0, replicas)
		if _, err := adm.AlterPartitionAssignments(ctx, ar); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, fmt.Sprintf("node %d in the ISR", node), isr(node))
		t.Logf("node %d in the ISR after %v", node, time.Since(began))
		logs := c.Node(node).Log()
		if node == 2 && !strings.Contains(logs, "copying the remote range") {
			t.Errorf("node 2 did not say it copies the remote range")
		}
		// Node 3 fetches at v12 from the start: never told to rebuild.
		if node == 3 && strings.Contains(logs, "rebuilding from it") {
			t.Errorf("node 3, without remote storage, tried to rebuild from it")
		}
		if strings.Contains(logs, "log state rebuilt from remote storage") {
			t.Errorf("node %d rebuilt its state from remote storage", node)
		}
	}
}
