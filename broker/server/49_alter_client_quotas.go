package server

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/quota"
)

func init() {
	// A broker forwards Alter to the active controller (see
	// handleAlterClientQuotas), on its controller listener.
	controllerAPIs[kmsg.AlterClientQuotas.Int16()] = true
}

// handleAlterClientQuotas has the active controller validate and commit
// the changes, and answers once every live broker has them: a quota set
// by one call applies to the very next request a client sends anywhere.
func (s *Server) handleAlterClientQuotas(c *conn, req *kmsg.AlterClientQuotasRequest) (*kmsg.AlterClientQuotasResponse, error) {
	// acl: Kafka requires ALTER_CONFIGS on CLUSTER here (CLUSTER_AUTHORIZATION_FAILED without).
	if s.ctrl.Quorum() && !s.ctrl.IsActive() && !s.controllerListeners[c.listener] {
		return s.forwardClientQuotas(c, req)
	}
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	alts := make([]cluster.QuotaAlteration, len(req.Entries))
	for i, e := range req.Entries {
		for _, p := range e.Entity {
			alts[i].Entity = append(alts[i].Entity, quota.Part{Type: p.Type, Name: p.Name})
		}
		for _, op := range e.Ops {
			o := cluster.QuotaOp{Key: op.Key}
			if !op.Remove {
				v := op.Value
				o.Value = &v
			}
			alts[i].Ops = append(alts[i].Ops, o)
		}
	}
	errs, offset, err := s.ctrl.AlterClientQuotas(alts, req.ValidateOnly)
	if err == nil && offset >= 0 {
		if werr := s.ctrl.WaitApplied(offset, scramVisible); werr != nil {
			c.logger.Warn("client quotas committed but not yet applied here", "err", werr)
		}
		s.awaitBrokers(c, offset)
	}
	for i, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, p := range e.Entity {
			ep := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ep.Type, ep.Name = p.Type, p.Name
			re.Entity = append(re.Entity, ep)
		}
		// err fails every entry: no active controller, or its log.
		eerr := err
		if eerr == nil {
			eerr = errs[i]
		}
		if eerr != nil {
			re.ErrorCode, re.ErrorMessage = kafkaCode(eerr), adminMessage(eerr)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp, nil
}

// forwardClientQuotas sends an Alter to the active controller and answers
// once this broker's metadata holds the accepted quotas.
func (s *Server) forwardClientQuotas(c *conn, req *kmsg.AlterClientQuotasRequest) (*kmsg.AlterClientQuotasResponse, error) {
	r, err := s.toController(context.Background(), req)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		for _, e := range req.Entries {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			for _, p := range e.Entity {
				ep := kmsg.NewAlterClientQuotasResponseEntryEntity()
				ep.Type, ep.Name = p.Type, p.Name
				re.Entity = append(re.Entity, ep)
			}
			re.ErrorCode, re.ErrorMessage = kerr.NotController.Code, strPtr("the active controller is not reachable: "+err.Error())
			resp.Entries = append(resp.Entries, re)
		}
		return resp, nil
	}
	resp := r.(*kmsg.AlterClientQuotasResponse)
	s.metrics.forwarded.WithLabelValues(kmsg.NameForKey(req.Key())).Inc()
	if req.ValidateOnly {
		return resp, nil
	}
	ok := map[int]bool{}
	for i, re := range resp.Entries {
		ok[i] = re.ErrorCode == 0
	}
	for deadline := time.Now().Add(scramVisible); time.Now().Before(deadline) && !clientQuotasApplied(s.ctrl.Image(), req, ok); {
		time.Sleep(10 * time.Millisecond)
	}
	return resp, nil
}

// clientQuotasApplied is whether img shows the accepted entries of req.
func clientQuotasApplied(img *cluster.Image, req *kmsg.AlterClientQuotasRequest, ok map[int]bool) bool {
	for i, e := range req.Entries {
		if !ok[i] {
			continue
		}
		parts := make([]quota.Part, 0, len(e.Entity))
		for _, p := range e.Entity {
			parts = append(parts, quota.Part{Type: p.Type, Name: p.Name})
		}
		have := img.ClientQuotas.Get(quota.NewEntity(parts...))
		for _, op := range e.Ops {
			v, exists := have[op.Key]
			if op.Remove && exists || !op.Remove && (!exists || v != op.Value) {
				return false
			}
		}
	}
	return true
}
