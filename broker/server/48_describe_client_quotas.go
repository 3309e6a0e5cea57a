package server

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/quota"
)

// DescribeClientQuotas and AlterClientQuotas (KIP-546): client quotas are
// metadata records (broker/cluster/quotas.go), decided by the active
// controller and enforced by every broker (quota_enforce.go).

func (s *Server) quotaHandlers() map[int16]handler {
	return map[int16]handler{
		kmsg.DescribeClientQuotas.Int16(): {min: 0, max: 1, fn: typed(s.handleDescribeClientQuotas)},
		kmsg.AlterClientQuotas.Int16():    {min: 0, max: 1, fn: typed(s.handleAlterClientQuotas)},
	}
}

// handleDescribeClientQuotas filters the quotas of this broker's metadata
// as Kafka's ClientQuotasImage.describe does: each component matches its
// entity type exactly, as the default, or any name (SPECIFIED); strict
// leaves out entities with more types than the filter names.
func (s *Server) handleDescribeClientQuotas(c *conn, req *kmsg.DescribeClientQuotasRequest) (*kmsg.DescribeClientQuotasResponse, error) {
	// acl: Kafka requires DESCRIBE_CONFIGS on CLUSTER here (CLUSTER_AUTHORIZATION_FAILED without).
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(code *kerr.Error, msg string) (*kmsg.DescribeClientQuotasResponse, error) {
		resp.ErrorCode, resp.ErrorMessage, resp.Entries = code.Code, &msg, nil
		return resp, nil
	}
	exact := map[string]*string{}
	specified := map[string]bool{}
	for _, comp := range req.Components {
		t := comp.EntityType
		if t == "" {
			return fail(kerr.InvalidRequest, "Invalid empty entity type.")
		}
		if _, ok := exact[t]; ok || specified[t] {
			return fail(kerr.InvalidRequest, "Entity type "+t+" cannot appear more than once in the filter.")
		}
		if t != quota.User && t != quota.ClientID && t != quota.IP {
			return fail(kerr.UnsupportedVersion, "Unsupported entity type "+t)
		}
		switch comp.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if comp.Match == nil {
				return fail(kerr.InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			exact[t] = comp.Match
		case kmsg.QuotasMatchTypeDefault:
			if comp.Match != nil {
				return fail(kerr.InvalidRequest, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			exact[t] = nil
		case kmsg.QuotasMatchTypeAny:
			if comp.Match != nil {
				return fail(kerr.InvalidRequest, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			specified[t] = true
		default:
			return fail(kerr.InvalidRequest, "Unknown match type "+strconv.Itoa(int(comp.MatchType)))
		}
	}
	named := func(t string) bool { _, ok := exact[t]; return ok || specified[t] }
	if named(quota.IP) && (named(quota.User) || named(quota.ClientID)) {
		return fail(kerr.InvalidRequest, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, e := range s.ctrl.Image().ClientQuotas.Entries() {
		if !quotaMatches(e.Entity, exact, specified, req.Strict) {
			continue
		}
		re := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range e.Entity {
			ep := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ep.Type, ep.Name = p.Type, p.Name
			re.Entity = append(re.Entity, ep)
		}
		for _, k := range sortedKeys(e.Values) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, e.Values[k]
			re.Values = append(re.Values, v)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp, nil
}

func quotaMatches(e quota.Entity, exact map[string]*string, specified map[string]bool, strict bool) bool {
	if strict && len(e) != len(exact)+len(specified) {
		return false
	}
	for t, want := range exact {
		p, ok := e.Get(t)
		if !ok || (want == nil) != (p.Name == nil) || want != nil && *want != *p.Name {
			return false
		}
	}
	for t := range specified {
		if _, ok := e.Get(t); !ok {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
