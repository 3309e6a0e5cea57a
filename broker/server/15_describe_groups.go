package server

import (
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupOperations is what DescribeGroups reports as authorized when asked
// (KIP-430): without ACLs, every operation on a group: READ, DELETE,
// DESCRIBE, DESCRIBE_CONFIGS and ALTER_CONFIGS, as bits of AclOperation.
const groupOperations = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11

// handleDescribeGroups describes groups; an unknown group is state Dead
// with no error, as Kafka answers up to v5. Member metadata and
// assignments are shown only for a Stable group.
func (s *Server) handleDescribeGroups(c *conn, req *kmsg.DescribeGroupsRequest) (*kmsg.DescribeGroupsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, g := range req.Groups {
		d := s.groups.Describe(g)
		d.AuthorizedOperations = math.MinInt32
		if req.IncludeAuthorizedOperations {
			d.AuthorizedOperations = groupOperations
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}
