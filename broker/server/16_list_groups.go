package server

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleListGroups lists the groups this node coordinates, filtered by
// state (v4+, case-insensitive as Kafka) and type (v5+: "classic" or "consumer").
func (s *Server) handleListGroups(c *conn, req *kmsg.ListGroupsRequest) (*kmsg.ListGroupsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if s.groups.Loading() {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return resp, nil
	}
	states := map[string]bool{}
	for _, st := range req.StatesFilter {
		states[strings.ToLower(st)] = true
	}
	types := map[string]bool{}
	for _, t := range req.TypesFilter {
		types[strings.ToLower(t)] = true
	}
	for _, g := range s.groups.List() {
		if len(states) > 0 && !states[strings.ToLower(g.StateName)] {
			continue
		}
		if len(types) > 0 && !types[g.Type] {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.ID, g.ProtocolType, g.StateName, g.Type
		resp.Groups = append(resp.Groups, lg)
	}
	// KIP-932 share groups (broker/share) coordinated here.
	for _, g := range s.shares.Groups() {
		if s.groups.Status(g.ID) != nil || len(states) > 0 && !states[strings.ToLower(g.State)] || len(types) > 0 && !types["share"] {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.ID, "share", g.State, "share"
		resp.Groups = append(resp.Groups, lg)
	}
	return resp, nil
}
