package server

import "github.com/twmb/franz-go/pkg/kmsg"

func (s *Server) handleDescribeCluster(c *conn, req *kmsg.DescribeClusterRequest) (*kmsg.DescribeClusterResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	img := s.ctrl.Image()
	resp.ClusterID = img.ClusterID
	resp.ControllerID = s.controllerIDForClients(img)
	resp.ClusterAuthorizedOperations = authorizedOpsOmitted
	resp.EndpointType = req.EndpointType
	for _, mb := range s.metadataBrokers(img, c.listener) {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = mb.NodeID, mb.Host, mb.Port, mb.Rack
		resp.Brokers = append(resp.Brokers, b)
	}
	return resp, nil
}
