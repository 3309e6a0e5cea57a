package server

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/cluster"
)

// DescribeAcls, CreateAcls and DeleteAcls: ACL bindings are metadata
// records, decided by the active controller (broker/cluster/acls.go).
// Describing needs DESCRIBE on the cluster, changing ALTER, as in Kafka;
// without an authorizer all three answer SECURITY_DISABLED.

func init() {
	controllerAPIs[kmsg.CreateACLs.Int16()] = true
	controllerAPIs[kmsg.DeleteACLs.Int16()] = true
}

// aclHandlers are the ACL APIs, in the versions Kafka 4 serves (KIP-896
// removed v0).
func (s *Server) aclHandlers() map[int16]handler {
	return map[int16]handler{
		kmsg.DescribeACLs.Int16(): {min: 1, max: 3, fn: typed(s.handleDescribeAcls)},
		kmsg.CreateACLs.Int16():   {min: 1, max: 3, fn: typed(s.handleCreateAcls)},
		kmsg.DeleteACLs.Int16():   {min: 1, max: 3, fn: typed(s.handleDeleteAcls)},
	}
}

var errSecurityDisabled = &apiError{code: kerr.SecurityDisabled, msg: "No Authorizer is configured on the broker (authorizer.class.name)"}

func (s *Server) handleDescribeAcls(c *conn, req *kmsg.DescribeACLsRequest) (*kmsg.DescribeACLsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	switch {
	case !c.allowedCluster(opDescribe):
		resp.ErrorCode = clusterDenied
		return resp, nil
	case s.authorizer == nil:
		resp.ErrorCode, resp.ErrorMessage = errSecurityDisabled.code.Code, &errSecurityDisabled.msg
		return resp, nil
	}
	f := acl.Filter{ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType}
	if err := f.ValidateFilter(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, strPtr(err.Error())
		return resp, nil
	}
	var cur *kmsg.DescribeACLsResponseResource
	for _, b := range s.ctrl.Image().Acls.Select(f) {
		if cur == nil || cur.ResourceType != b.ResourceType || cur.ResourceName != b.ResourceName || cur.ResourcePatternType != b.PatternType {
			resp.Resources = append(resp.Resources, kmsg.NewDescribeACLsResponseResource())
			cur = &resp.Resources[len(resp.Resources)-1]
			cur.ResourceType, cur.ResourceName, cur.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		cur.ACLs = append(cur.ACLs, a)
	}
	return resp, nil
}

// aclVisible is how long a change's answer waits for this broker's
// metadata to show it, so that the client's next request here is judged
// by the new ACLs.
const aclVisible = 10 * time.Second

func (s *Server) handleCreateAcls(c *conn, req *kmsg.CreateACLsRequest) (*kmsg.CreateACLsResponse, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	fail := func(code int16, msg *string) (*kmsg.CreateACLsResponse, error) {
		for range req.Creations {
			r := kmsg.NewCreateACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, msg
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}
	switch {
	case !c.allowedCluster(opAlter):
		return fail(clusterDenied, nil)
	case s.authorizer == nil && !s.controllerListeners[c.listener]:
		return fail(errSecurityDisabled.code.Code, &errSecurityDisabled.msg)
	}
	if s.ctrl.Quorum() && !s.ctrl.IsActive() && !s.controllerListeners[c.listener] {
		r, err := s.toController(context.Background(), req)
		if err != nil {
			return fail(kerr.NotController.Code, strPtr("the active controller is not reachable: "+err.Error()))
		}
		s.metrics.forwarded.WithLabelValues(kmsg.NameForKey(req.Key())).Inc()
		out := r.(*kmsg.CreateACLsResponse)
		var want []acl.Binding
		for i, cr := range req.Creations {
			if i < len(out.Results) && out.Results[i].ErrorCode == 0 {
				want = append(want, creationBinding(cr))
			}
		}
		s.awaitImage(func(img *cluster.Image) bool {
			for _, b := range want {
				if !img.Acls.Has(b) {
					return false
				}
			}
			return true
		})
		return out, nil
	}
	bs := make([]acl.Binding, len(req.Creations))
	for i, cr := range req.Creations {
		bs[i] = creationBinding(cr)
	}
	errs, offset, err := s.ctrl.CreateAcls(bs)
	if err != nil {
		return fail(kafkaCode(err), adminMessage(err))
	}
	s.awaitAclOffset(c, offset)
	for _, e := range errs {
		r := kmsg.NewCreateACLsResponseResult()
		if e != nil {
			r.ErrorCode, r.ErrorMessage = kafkaCode(e), adminMessage(e)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

func creationBinding(cr kmsg.CreateACLsRequestCreation) acl.Binding {
	return acl.Binding{ResourceType: cr.ResourceType, ResourceName: cr.ResourceName, PatternType: cr.ResourcePatternType,
		Principal: cr.Principal, Host: cr.Host, Operation: cr.Operation, Permission: cr.PermissionType}
}

func (s *Server) handleDeleteAcls(c *conn, req *kmsg.DeleteACLsRequest) (*kmsg.DeleteACLsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	fail := func(code int16, msg *string) (*kmsg.DeleteACLsResponse, error) {
		for range req.Filters {
			r := kmsg.NewDeleteACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, msg
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}
	switch {
	case !c.allowedCluster(opAlter):
		return fail(clusterDenied, nil)
	case s.authorizer == nil && !s.controllerListeners[c.listener]:
		return fail(errSecurityDisabled.code.Code, &errSecurityDisabled.msg)
	}
	if s.ctrl.Quorum() && !s.ctrl.IsActive() && !s.controllerListeners[c.listener] {
		r, err := s.toController(context.Background(), req)
		if err != nil {
			return fail(kerr.NotController.Code, strPtr("the active controller is not reachable: "+err.Error()))
		}
		s.metrics.forwarded.WithLabelValues(kmsg.NameForKey(req.Key())).Inc()
		out := r.(*kmsg.DeleteACLsResponse)
		var gone []acl.Binding
		for _, fr := range out.Results {
			for _, m := range fr.MatchingACLs {
				if m.ErrorCode == 0 {
					gone = append(gone, acl.Binding{ResourceType: m.ResourceType, ResourceName: m.ResourceName, PatternType: m.ResourcePatternType,
						Principal: m.Principal, Host: m.Host, Operation: m.Operation, Permission: m.PermissionType})
				}
			}
		}
		s.awaitImage(func(img *cluster.Image) bool {
			for _, b := range gone {
				if img.Acls.Has(b) {
					return false
				}
			}
			return true
		})
		return out, nil
	}
	fs := make([]acl.Filter, len(req.Filters))
	for i, f := range req.Filters {
		fs[i] = acl.Filter{ResourceType: f.ResourceType, ResourceName: f.ResourceName, PatternType: f.ResourcePatternType,
			Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType}
	}
	matched, errs, offset, err := s.ctrl.DeleteAcls(fs)
	if err != nil {
		return fail(kafkaCode(err), adminMessage(err))
	}
	s.awaitAclOffset(c, offset)
	for i := range fs {
		r := kmsg.NewDeleteACLsResponseResult()
		if errs[i] != nil {
			r.ErrorCode, r.ErrorMessage = kafkaCode(errs[i]), adminMessage(errs[i])
		}
		for _, b := range matched[i] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
			r.MatchingACLs = append(r.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

// awaitAclOffset waits, on the active controller, until the change at
// offset is applied here and, in a cluster, reported by every live broker
// (as SCRAM changes are), so that every broker judges by the new ACLs
// once the call returns.
func (s *Server) awaitAclOffset(c *conn, offset int64) {
	if offset < 0 {
		return
	}
	if err := s.ctrl.WaitApplied(offset, aclVisible); err != nil {
		c.logger.Warn("ACL change committed but not yet applied here", "err", err)
	}
	s.awaitBrokers(c, offset)
}

// awaitImage polls this node's metadata until done or aclVisible.
func (s *Server) awaitImage(done func(*cluster.Image) bool) {
	deadline := time.Now().Add(aclVisible)
	for time.Now().Before(deadline) && !done(s.ctrl.Image()) {
		select {
		case <-s.stopping:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
