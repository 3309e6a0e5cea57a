package server

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
)

// TestLogDirFailureAnswersStorageError: a single broker with its second
// log dir on a 256 KiB tmpfs. Produce into a partition there until the
// file system is full: the produce that hit ENOSPC gets
// KAFKA_STORAGE_ERROR, and so do every later produce, fetch and
// ListOffsets of the partitions in that dir (a single node has no other
// replica to lead them), while the partition in the other dir goes on;
// DescribeLogDirs answers KAFKA_STORAGE_ERROR for the dir; the broker
// shuts down without an error.
func TestLogDirFailureAnswersStorageError(t *testing.T) {
	tmpfs := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", tmpfs).CombinedOutput(); err != nil {
		msg := "mounting a tmpfs needs root or CAP_SYS_ADMIN: " + err.Error() + ": " + strings.TrimSpace(string(out))
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		if exec.Command("umount", tmpfs).Run() != nil {
			exec.Command("umount", "-l", tmpfs).Run()
		}
	})
	good := t.TempDir()
	s := startBrokerIn(t, good+","+tmpfs, map[string]string{"auto.create.topics.enable": "false"})
	admCreateTopic(t, s, "t", 2, nil)
	inTmpfs, inGood := int32(-1), int32(-1)
	for i, d := range s.dirs {
		for _, l := range d.Logs() {
			if i == 1 {
				inTmpfs = l.TopicPartition().Partition
			} else {
				inGood = l.TopicPartition().Partition
			}
		}
	}
	if inTmpfs < 0 || inGood < 0 {
		t.Fatalf("partitions not in both dirs: tmpfs %d, other %d", inTmpfs, inGood)
	}

	value := []byte(strings.Repeat("v", 10000))
	acked, code := 0, int16(0)
	for ; code == 0 && acked < 1000; acked++ {
		code = ldProduce(t, s, "t", inTmpfs, value)
	}
	acked--
	if code != kerr.KafkaStorageError.Code || acked < 5 {
		t.Fatalf("after %d acknowledged produces: %v, want KAFKA_STORAGE_ERROR", acked, kerr.ErrorForCode(code))
	}
	for deadline := time.Now().Add(30 * time.Second); !s.parts.Offline("t", inTmpfs); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the partition in the failed dir is not offline after 30 s")
		}
	}
	if code := ldProduce(t, s, "t", inTmpfs, []byte("x")); code != kerr.KafkaStorageError.Code {
		t.Errorf("produce after the failure: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	if code := ldProduce(t, s, "t", inGood, value); code != 0 {
		t.Errorf("produce to the partition in the healthy dir: %v", kerr.ErrorForCode(code))
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxWaitMillis, fetch.MaxBytes = -1, 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	for _, p := range []int32{inTmpfs, inGood} {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = p, 1<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
	}
	fetch.Topics = append(fetch.Topics, ft)
	fr := admSend[*kmsg.FetchResponse](t, s, fetch, 11)
	for _, rp := range fr.Topics[0].Partitions {
		want := int16(0)
		if rp.Partition == inTmpfs {
			want = kerr.KafkaStorageError.Code
		}
		if rp.ErrorCode != want {
			t.Errorf("fetch of t-%d: %v, want %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode), kerr.ErrorForCode(want))
		}
	}

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "t"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = inTmpfs, -1, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	lr := admSend[*kmsg.ListOffsetsResponse](t, s, lo, 7)
	if code := lr.Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Errorf("ListOffsets of the partition in the failed dir: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}

	dr := admSend[*kmsg.DescribeLogDirsResponse](t, s, kmsg.NewPtrDescribeLogDirsRequest(), 4)
	for _, d := range dr.Dirs {
		switch {
		case d.Dir == tmpfs && (d.ErrorCode != kerr.KafkaStorageError.Code || len(d.Topics) != 0):
			t.Errorf("DescribeLogDirs of the failed dir: %v with %d topics, want KAFKA_STORAGE_ERROR and none", kerr.ErrorForCode(d.ErrorCode), len(d.Topics))
		case d.Dir == good && (d.ErrorCode != 0 || len(d.Topics) != 1):
			t.Errorf("DescribeLogDirs of the healthy dir: %v with %d topics", kerr.ErrorForCode(d.ErrorCode), len(d.Topics))
		}
	}
	shutdown(t, s)
}

func ldProduce(t *testing.T, s *Server, topic string, partition int32, value []byte) int16 {
	t.Helper()
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	b, err := record.Build(opts, []kmsg.Record{{Value: value}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := admSend[*kmsg.ProduceResponse](t, s, req, 9)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestEveryLogDirFailedStopsTheBroker: with both log dirs full, the broker
// has nothing left to serve and says so on Failed, which the program takes
// to stop and exit non-zero (as Kafka's broker halts).
func TestEveryLogDirFailedStopsTheBroker(t *testing.T) {
	var dirs []string
	for range 2 {
		d := t.TempDir()
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", d).CombinedOutput(); err != nil {
			msg := "mounting a tmpfs needs root or CAP_SYS_ADMIN: " + err.Error() + ": " + strings.TrimSpace(string(out))
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		t.Cleanup(func() {
			if exec.Command("umount", d).Run() != nil {
				exec.Command("umount", "-l", d).Run()
			}
		})
		dirs = append(dirs, d)
	}
	s := startBrokerIn(t, strings.Join(dirs, ","), map[string]string{"auto.create.topics.enable": "false"})
	admCreateTopic(t, s, "t", 2, nil)
	value := []byte(strings.Repeat("v", 10000))
	for p := range int32(2) {
		for i := 0; i < 1000 && ldProduce(t, s, "t", p, value) == 0; i++ {
		}
	}
	select {
	case <-s.Failed():
		if err := s.FailedErr(); err == nil || !strings.Contains(err.Error(), "every log dir failed") {
			t.Errorf("FailedErr = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("both log dirs are full, and Failed is not closed after 30 s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.Shutdown(ctx) // the metadata log shares the full first dir: its error is expected
}
