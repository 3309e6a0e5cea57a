package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
)

func init() {
	// Decided by the active controller: a broker forwards it there.
	forwardedAPIs[kmsg.UpdateFeatures.Int16()] = true
	controllerAPIs[kmsg.UpdateFeatures.Int16()] = true
}

// handleUpdateFeatures finalizes feature levels (`kafka-features.sh
// upgrade|downgrade`, Admin.updateFeatures), with ALTER on the cluster as
// in Kafka. The updates are checked together first: one bad update fails
// the request and nothing changes, as Kafka's controller applies them in
// one batch.
func (s *Server) handleUpdateFeatures(c *conn, req *kmsg.UpdateFeaturesRequest) (*kmsg.UpdateFeaturesResponse, error) {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	ups := make([]cluster.FeatureUpdate, len(req.FeatureUpdates))
	for i, f := range req.FeatureUpdates {
		ups[i] = cluster.FeatureUpdate{Name: f.Feature, Level: f.MaxVersionLevel, UpgradeType: f.UpgradeType}
		if req.Version == 0 {
			ups[i].UpgradeType = 1
			if f.AllowDowngrade {
				ups[i].UpgradeType = 2
			}
		}
	}
	errs := make([]error, len(ups))
	var first error
	seen := map[string]bool{}
	dup := ""
	for _, u := range ups {
		if seen[u.Name] {
			dup = u.Name
		}
		seen[u.Name] = true
	}
	switch {
	case dup != "":
		// Kafka's INVALID_REQUEST: checked one by one, two updates of one
		// feature could each pass, and the level would depend on the order.
		first = &cluster.Error{Code: kerr.InvalidRequest, Message: "The request names feature " + dup + " more than once."}
		for i := range errs {
			errs[i] = first
		}
	case !c.allowedCluster(opAlter):
		first = &cluster.Error{Code: kerr.ClusterAuthorizationFailed, Message: "Cluster authorization failed."}
		for i := range errs {
			errs[i] = first
		}
	default:
		for i, u := range ups {
			if errs[i] = s.ctrl.UpdateFeature(u, true); errs[i] != nil && first == nil {
				first = errs[i]
			}
		}
		if first == nil && !req.ValidateOnly {
			for i, u := range ups {
				if errs[i] = s.ctrl.UpdateFeature(u, false); errs[i] != nil && first == nil {
					first = errs[i]
				}
			}
		}
	}
	code := func(err error) (int16, *string) {
		if err == nil {
			return 0, nil
		}
		var ce *cluster.Error
		if errors.As(err, &ce) {
			return ce.Code.Code, &ce.Message
		}
		msg := err.Error()
		return kerr.NotController.Code, &msg
	}
	if req.Version >= 2 {
		resp.ErrorCode, resp.ErrorMessage = code(first)
		return resp, nil
	}
	for i, f := range req.FeatureUpdates {
		r := kmsg.NewUpdateFeaturesResponseResult()
		r.Feature = f.Feature
		err := errs[i]
		if err == nil && first != nil {
			err = &cluster.Error{Code: kerr.InvalidUpdateVersion, Message: "another update of the request failed"}
		}
		r.ErrorCode, r.ErrorMessage = code(err)
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
