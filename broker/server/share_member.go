package server

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/group"
)

// shareMember refuses a ShareFetch from a member its share group does not
// have (UNKNOWN_MEMBER_ID) or for a share group that does not exist
// (GROUP_ID_NOT_FOUND), when this broker is the group's coordinator and
// so knows its members. Without it, anyone allowed to read a group
// pattern could make up group ids and leave share-partition state behind
// for each, which no group limit, expiry or DeleteGroups ever reaches
// (review M1). On a leader that is not the coordinator membership is not
// known, and the fetch goes on to the leader's own fence: it serves only
// share partitions whose state the group's coordinator initialized
// (broker/share/init.go), as Kafka 4.4's leaders do.
func (s *Server) shareMember(groupID, memberID string) *kerr.Error {
	img := s.ctrl.Image()
	if t, ok := img.Topics[group.OffsetsTopic]; ok && len(t.Partitions) > 0 {
		if t.Partitions[group.PartitionFor(groupID, int32(len(t.Partitions)))].Leader != s.nodeID {
			return nil
		}
	}
	return s.shares.Member(groupID, memberID)
}
