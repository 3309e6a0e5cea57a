package server

import "github.com/twmb/franz-go/pkg/kmsg"

// handleOffsetCommit commits offsets; each is acknowledged once appended to
// __consumer_offsets. Partitions that do not exist are
// UNKNOWN_TOPIC_OR_PARTITION and are not committed.
func (s *Server) handleOffsetCommit(c *conn, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	if s.isShareGroup(req.Group) {
		return commitToShareGroup(req), nil
	}
	img := s.ctrl.Image()
	known := func(topic string, p int32) bool {
		t := img.Topics[topic]
		return t != nil && p >= 0 && int(p) < len(t.Partitions)
	}
	return s.groups.CommitOffsets(req, known), nil
}
