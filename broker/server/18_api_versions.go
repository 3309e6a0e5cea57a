package server

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
)

func (s *Server) handleApiVersions(c *conn, req *kmsg.ApiVersionsRequest) (*kmsg.ApiVersionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = s.apiKeys(s.controllerListeners[c.listener])
	// Features (KIP-584, broker/cluster/features.go). The epoch is the
	// metadata offset, as Kafka's: a client re-reads the levels when it
	// grows. The Java producer turns transactions v2 on when
	// transaction.version is 2 or more.
	img := s.ctrl.Image()
	for _, f := range cluster.SupportedFeatures {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.Name, f.Min, f.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	}
	resp.FinalizedFeaturesEpoch = max(img.Offset, 0)
	for name, level := range img.FinalizedFeatures() {
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MaxVersionLevel, ff.MinVersionLevel = name, level, level
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	sort.Slice(resp.FinalizedFeatures, func(i, j int) bool { return resp.FinalizedFeatures[i].Name < resp.FinalizedFeatures[j].Name })
	return resp, nil
}
