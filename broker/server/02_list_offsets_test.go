package server

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/remotelog"
)

// TestListOffsetsTieredSpecs: on a topic that is not tiered, the versions
// advertised for the tiered timestamps answer as Kafka does: -4
// (EARLIEST_LOCAL, v8) is the log start, -5 (LATEST_TIERED, v9) and -6
// (EARLIEST_PENDING_UPLOAD, v11) are -1 with no leader epoch. (The
// tiered answers: TestTieredStorageHDFS; v10's TimeoutMs on a tiered
// topic: TestListOffsetsTieredTimeout.)
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

// TestListOffsetsTieredTimeout: on a tiered topic whose remote storage
// does not answer (the remote time index of the oldest segment is a FIFO
// no one writes: a read hangs as on a stalled DataNode), ListOffsets v10
// by timestamp answers within its TimeoutMs with a retriable error, not
// after the broker's own 30 s.
func TestListOffsetsTieredTimeout(t *testing.T) {
	root := t.TempDir()
	s := startAdminBroker(t, map[string]string{
		"remote.log.storage.system.enable":    "true",
		"rsm.config.storage.uri":              "file://" + root,
		"remote.log.manager.task.interval.ms": "100",
		"log.retention.check.interval.ms":     "100",
		"log.segment.delete.delay.ms":         "0",
	})
	cl := admClient(t, s)
	admCreateTopic(t, s, "tiered", 1, map[string]string{
		"remote.storage.enable": "true",
		"segment.bytes":         "4096",
		"local.retention.bytes": "1024",
	})
	for range 20 {
		admProduce(t, cl, "tiered", 0, 50)
	}
	var oldest string
	deadline := time.Now().Add(30 * time.Second)
	for oldest == "" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		matches, _ := filepath.Glob(filepath.Join(root, "*", "*", "*"+remotelog.SuffixTimeIndex))
		if len(matches) == 0 {
			matches, _ = filepath.Glob(filepath.Join(root, "*", "*", "*", "*"+remotelog.SuffixTimeIndex))
		}
		slices.Sort(matches)
		if len(matches) > 0 && localStart(t, s, "tiered") > 0 {
			oldest = matches[0]
		}
	}
	if oldest == "" {
		out, _ := exec.Command("find", root).CombinedOutput()
		t.Fatalf("no segment uploaded and trimmed locally in 30 s (local start %d):\n%s", localStart(t, s, "tiered"), out)
	}
	if err := os.Remove(oldest); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(oldest, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // let the hung read end
		if f, err := os.OpenFile(oldest, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.TimeoutMillis = 300
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "tiered"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, 0, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	start := time.Now()
	resp := admSend[*kmsg.ListOffsetsResponse](t, s, req, 10)
	took := time.Since(start)
	p := resp.Topics[0].Partitions[0]
	if took > 5*time.Second {
		t.Fatalf("answered after %v, with TimeoutMs 300", took)
	}
	if err := kerr.ErrorForCode(p.ErrorCode); err == nil || !kerr.IsRetriable(err) {
		t.Fatalf("offset %d, error %v; want a retriable error (remote storage did not answer)", p.Offset, err)
	}
	t.Logf("answered in %v: %v", took, kerr.ErrorForCode(p.ErrorCode))
}

// localStart is the partition's local log start (ListOffsets -4).
func localStart(t *testing.T, s *Server, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -4, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return admSend[*kmsg.ListOffsetsResponse](t, s, req, 8).Topics[0].Partitions[0].Offset
}

// TestListOffsetsPendingUploadUnknown: before the tier manager has loaded
// a tiered partition's remote metadata, EARLIEST_PENDING_UPLOAD (-6) is
// not known: -1 with no epoch, as Kafka answers after a restart, not the
// local log start.
func TestListOffsetsPendingUploadUnknown(t *testing.T) {
	s := startAdminBroker(t, map[string]string{
		"remote.log.storage.system.enable":    "true",
		"rsm.config.storage.uri":              "file://" + t.TempDir(),
		"remote.log.manager.task.interval.ms": "3600000", // no pass after the first
	})
	cl := admClient(t, s)
	admCreateTopic(t, s, "tiered", 1, map[string]string{"remote.storage.enable": "true"})
	admProduce(t, cl, "tiered", 0, 10)
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "tiered"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -6, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p := admSend[*kmsg.ListOffsetsResponse](t, s, req, 11).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.Offset != -1 || p.LeaderEpoch != -1 {
		t.Fatalf("-6 before the remote metadata is loaded: offset %d epoch %d %v; want -1, -1",
			p.Offset, p.LeaderEpoch, kerr.ErrorForCode(p.ErrorCode))
	}
}
