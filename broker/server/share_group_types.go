package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A group id names one kind of group. The classic protocol's requests and
// KIP-848's ConsumerGroupHeartbeat naming a share group are refused as
// Kafka 4.4's GroupMetadataManager refuses them (compared on the wire by
// broker/conformance's TestShareGroupIDsKeepTheirType): JoinGroup is
// INCONSISTENT_GROUP_PROTOCOL, SyncGroup, Heartbeat and LeaveGroup's
// members UNKNOWN_MEMBER_ID, OffsetCommit's and TxnOffsetCommit's
// partitions and ConsumerGroupHeartbeat GROUP_ID_NOT_FOUND. (The other way round,
// ShareGroupHeartbeat naming a classic or consumer group, is
// GROUP_ID_NOT_FOUND in broker/share.) Share groups live on their
// coordinator, the broker these requests go to, so its share manager
// knows them.

// isShareGroup says whether id is a share group's.
func (s *Server) isShareGroup(id string) bool {
	return s.shares != nil && s.shares.Has(id)
}

func notConsumerGroup(id string) *string {
	return strPtr("Group " + id + " is not a consumer group.")
}

// joinShareGroup answers a JoinGroup naming a share group.
func joinShareGroup(req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.ErrorCode, resp.MemberID, resp.Generation = kerr.InconsistentGroupProtocol.Code, "", -1
	return resp
}

// leaveShareGroup answers a LeaveGroup naming a share group: none of
// its members is a classic member.
func leaveShareGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if req.Version < 3 {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	for _, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, kerr.UnknownMemberID.Code
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

// commitToShareGroup answers an OffsetCommit naming a share group: every
// partition GROUP_ID_NOT_FOUND (Kafka's ShareGroup.validateOffsetCommit).
func commitToShareGroup(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, rt := range req.Topics {
		t := kmsg.NewOffsetCommitResponseTopic()
		t.Topic, t.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetCommitResponseTopicPartition()
			p.Partition, p.ErrorCode = rp.Partition, kerr.GroupIDNotFound.Code
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// txnCommitToShareGroup answers a TxnOffsetCommit naming a share group:
// every partition GROUP_ID_NOT_FOUND, as Kafka 4.4's
// OffsetMetadataManager.validateTransactionalOffsetCommit answers it
// (ShareGroup.validateOffsetCommit throws GroupIdNotFoundException, which
// nothing there catches). Without it the offsets would be kept pending
// under the share group's id, as if it were a classic group's.
func txnCommitToShareGroup(req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, rt := range req.Topics {
		t := kmsg.NewTxnOffsetCommitResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			p.Partition, p.ErrorCode = rp.Partition, kerr.GroupIDNotFound.Code
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}
