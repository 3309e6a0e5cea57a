package server

import "github.com/twmb/franz-go/pkg/kmsg"

func (s *Server) handleApiVersions(c *conn, req *kmsg.ApiVersionsRequest) (*kmsg.ApiVersionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = s.apiKeys(s.controllerListeners[c.listener])
	// No features are finalized: Produce stops at v11 and EndTxn is absent,
	// so clients need no transaction.version (see apis.go).
	resp.FinalizedFeaturesEpoch = -1
	return resp, nil
}
