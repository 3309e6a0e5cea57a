package server

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupOperations is what DescribeGroups reports as authorized when asked
// (KIP-430): without ACLs, every operation on a group: READ, DELETE,
// DESCRIBE, DESCRIBE_CONFIGS and ALTER_CONFIGS, as bits of AclOperation.
const groupOperations = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11

// handleDescribeGroups describes groups; an unknown group is state Dead
// with no error, as Kafka answers up to v5, and GROUP_ID_NOT_FOUND from v6
// (KIP-1043), which kafka-consumer-groups.sh 4.x reports as Kafka's "Group
// g not found." Member metadata and
// assignments are shown only for a Stable group.
func (s *Server) handleDescribeGroups(c *conn, req *kmsg.DescribeGroupsRequest) (*kmsg.DescribeGroupsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, g := range req.Groups {
		d := s.groups.Describe(g)
		if req.Version >= 6 && d.State == "Dead" && len(d.Members) == 0 {
			d.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + g + " not found."
			d.ErrorMessage = &msg
		}
		d.AuthorizedOperations = math.MinInt32
		if req.IncludeAuthorizedOperations {
			d.AuthorizedOperations = groupOperations
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}
