package server

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/share"
)

// validateShareAcks is Kafka's KafkaApis.validateAcknowledgementBatches
// for one partition's batches, checked before any state changes (review
// H2): each batch has first <= last, starts after the previous one ends,
// has one type or one per offset, and types within range; RENEW (4) only
// in a v2 request marked IsRenewAck. Kafka lets a batch start on the
// previous one's last offset; we refuse that overlap too, since no client
// sends it and it lets one request renew the same records over and over.
// Any failure is INVALID_REQUEST for the partition.
func validateShareAcks(batches []share.AckBatch, version int16, isRenewAck bool) *kerr.Error {
	maxType := share.AckReject
	if version >= 2 {
		maxType = share.AckRenew
	}
	for i, b := range batches {
		if b.First > b.Last || i > 0 && b.First <= batches[i-1].Last || len(b.Types) == 0 ||
			len(b.Types) > 1 && int64(len(b.Types)) != b.Last-b.First+1 {
			return kerr.InvalidRequest
		}
		for _, t := range b.Types {
			if t < share.AckGap || t > maxType || t == share.AckRenew && !isRenewAck {
				return kerr.InvalidRequest
			}
		}
	}
	return nil
}

// shareCaller is the group and member a ShareFetch or ShareAcknowledge
// names, checked the same way for both so that neither can reach a share
// session the other would refuse: READ on the group first (Kafka answers
// an unauthorized caller before judging its ids), then a non-empty group
// and a member id no longer than a UUID's 36 characters.
func shareCaller(c *conn, group, member *string) (string, string, *kerr.Error) {
	var groupID, memberID string
	if group != nil {
		groupID = *group
	}
	if member != nil {
		memberID = *member
	}
	if !c.allowedGroup(opRead, groupID) {
		return "", "", kerr.GroupAuthorizationFailed
	}
	if groupID == "" || memberID == "" || len(memberID) > 36 {
		return "", "", kerr.InvalidRequest
	}
	return groupID, memberID, nil
}
