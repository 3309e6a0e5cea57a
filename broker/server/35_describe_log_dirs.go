package server

import (
	"math"
	"path/filepath"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
)

// DescribeLogDirs (KIP-113) lists each log dir with the size of the
// requested partitions in it (all of them when the topic list is null), and
// from v4 the file system's total and usable bytes (KIP-827). Offset lag is
// 0 and is_future false: there are no replica moves between dirs (no
// future logs) yet. No dir is ever cordoned (v5, KIP-1066).
func (s *Server) handleDescribeLogDirs(c *conn, req *kmsg.DescribeLogDirsRequest) (*kmsg.DescribeLogDirsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	var want map[log.TopicPartition]bool
	if req.Topics != nil {
		want = map[log.TopicPartition]bool{}
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				want[log.TopicPartition{Topic: rt.Topic, Partition: p}] = true
			}
		}
	}
	// A dir where applying a partition's metadata keeps failing (its log
	// cannot be created, configured or deleted) answers
	// KAFKA_STORAGE_ERROR, as Kafka's offline dirs do, with the logs it
	// still serves; see broker/replica's doc.
	failing := map[int]bool{}
	for _, f := range s.parts.Failures() {
		failing[f.Dir] = true
	}
	paths := s.cfg.LogDirs()
	for i, d := range s.dirs {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = paths[i]
		if abs, err := filepath.Abs(paths[i]); err == nil {
			rd.Dir = abs
		}
		if d.Offline() != nil {
			// Kafka lists a failed dir with this error and nothing else.
			rd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		var fs syscall.Statfs_t
		if err := syscall.Statfs(rd.Dir, &fs); err != nil {
			s.logger.Warn("describing log dir", "log_dir", rd.Dir, "err", err)
			rd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		if failing[i] {
			rd.ErrorCode = kerr.KafkaStorageError.Code
		}
		rd.TotalBytes = fsBytes(uint64(fs.Blocks), int64(fs.Bsize))
		rd.UsableBytes = fsBytes(uint64(fs.Bavail), int64(fs.Bsize))
		// Logs come sorted by topic, then partition.
		for _, l := range d.Logs() {
			tp := l.TopicPartition()
			if want != nil && !want[tp] {
				continue
			}
			if n := len(rd.Topics); n == 0 || rd.Topics[n-1].Topic != tp.Topic {
				rt := kmsg.NewDescribeLogDirsResponseDirTopic()
				rt.Topic = tp.Topic
				rd.Topics = append(rd.Topics, rt)
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition, rp.Size, rp.OffsetLag, rp.IsFuture = tp.Partition, l.Size(), 0, false
			rt := &rd.Topics[len(rd.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return resp, nil
}

// fsBytes is blocks×size, capped at MaxInt64 as Kafka caps file systems
// larger than a long.
func fsBytes(blocks uint64, size int64) int64 {
	if size <= 0 {
		return 0
	}
	if blocks > uint64(math.MaxInt64/size) {
		return math.MaxInt64
	}
	return int64(blocks) * size
}
