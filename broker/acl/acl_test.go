package acl

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func b(typ ResourceType, pat PatternType, name, principal, host string, op Operation, perm Permission) Binding {
	return Binding{ResourceType: typ, ResourceName: name, PatternType: pat, Principal: principal, Host: host, Operation: op, Permission: perm}
}

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	lit     = kmsg.ACLResourcePatternTypeLiteral
	pre     = kmsg.ACLResourcePatternTypePrefixed
	allowP  = kmsg.ACLPermissionTypeAllow
	denyP   = kmsg.ACLPermissionTypeDeny
	read    = kmsg.ACLOperationRead
	write   = kmsg.ACLOperationWrite
	desc    = kmsg.ACLOperationDescribe
	alice   = "User:alice"
)

func TestAuthorize(t *testing.T) {
	for _, tc := range []struct {
		name    string
		acls    []Binding
		super   []string
		ifNone  bool
		who     Request
		op      Operation
		typ     ResourceType
		res     string
		allowed bool
	}{
		{"no acl, default deny", nil, nil, false, Request{alice, "1.2.3.4"}, read, topic, "t", false},
		{"no acl, allow.everyone.if.no.acl.found", nil, nil, true, Request{alice, "1.2.3.4"}, read, topic, "t", true},
		{"acl for someone else closes the resource", []Binding{b(topic, lit, "t", "User:bob", "*", read, allowP)}, nil, true, Request{alice, "h"}, read, topic, "t", false},
		{"acl on another resource leaves it open", []Binding{b(topic, lit, "u", "User:bob", "*", read, allowP)}, nil, true, Request{alice, "h"}, read, topic, "t", true},
		{"literal allow", []Binding{b(topic, lit, "t", alice, "*", read, allowP)}, nil, false, Request{alice, "h"}, read, topic, "t", true},
		{"literal is not a prefix", []Binding{b(topic, lit, "t", alice, "*", read, allowP)}, nil, false, Request{alice, "h"}, read, topic, "tt", false},
		{"wildcard resource", []Binding{b(topic, lit, "*", alice, "*", read, allowP)}, nil, false, Request{alice, "h"}, read, topic, "any", true},
		{"prefixed allow", []Binding{b(topic, pre, "pay", alice, "*", write, allowP)}, nil, false, Request{alice, "h"}, write, topic, "payments", true},
		{"prefixed other prefix", []Binding{b(topic, pre, "pay", alice, "*", write, allowP)}, nil, false, Request{alice, "h"}, write, topic, "orders", false},
		{"wildcard principal", []Binding{b(topic, lit, "t", "User:*", "*", read, allowP)}, nil, false, Request{alice, "h"}, read, topic, "t", true},
		{"host must match", []Binding{b(topic, lit, "t", alice, "10.0.0.1", read, allowP)}, nil, false, Request{alice, "10.0.0.2"}, read, topic, "t", false},
		{"host matches", []Binding{b(topic, lit, "t", alice, "10.0.0.1", read, allowP)}, nil, false, Request{alice, "10.0.0.1"}, read, topic, "t", true},
		{"deny wins over allow", []Binding{b(topic, lit, "t", alice, "*", read, allowP), b(topic, pre, "t", alice, "*", read, denyP)}, nil, false, Request{alice, "h"}, read, topic, "t", false},
		{"deny for wildcard principal", []Binding{b(topic, lit, "t", alice, "*", read, allowP), b(topic, lit, "*", "User:*", "*", read, denyP)}, nil, false, Request{alice, "h"}, read, topic, "t", false},
		{"deny on other host does not apply", []Binding{b(topic, lit, "t", alice, "*", read, allowP), b(topic, lit, "t", alice, "9.9.9.9", read, denyP)}, nil, false, Request{alice, "h"}, read, topic, "t", true},
		{"read implies describe", []Binding{b(topic, lit, "t", alice, "*", read, allowP)}, nil, false, Request{alice, "h"}, desc, topic, "t", true},
		{"describe does not imply read", []Binding{b(topic, lit, "t", alice, "*", desc, allowP)}, nil, false, Request{alice, "h"}, read, topic, "t", false},
		{"deny read does not deny describe", []Binding{b(topic, lit, "t", alice, "*", write, allowP), b(topic, lit, "t", alice, "*", read, denyP)}, nil, false, Request{alice, "h"}, desc, topic, "t", true},
		{"alter_configs implies describe_configs", []Binding{b(topic, lit, "t", alice, "*", kmsg.ACLOperationAlterConfigs, allowP)}, nil, false, Request{alice, "h"}, kmsg.ACLOperationDescribeConfigs, topic, "t", true},
		{"all allows any", []Binding{b(group, lit, "g", alice, "*", kmsg.ACLOperationAll, allowP)}, nil, false, Request{alice, "h"}, kmsg.ACLOperationDelete, group, "g", true},
		{"deny all denies", []Binding{b(group, lit, "g", alice, "*", read, allowP), b(group, lit, "g", alice, "*", kmsg.ACLOperationAll, denyP)}, nil, false, Request{alice, "h"}, read, group, "g", false},
		{"resource types apart", []Binding{b(group, lit, "t", alice, "*", read, allowP)}, nil, false, Request{alice, "h"}, read, topic, "t", false},
		{"super user", []Binding{b(topic, lit, "t", alice, "*", read, denyP)}, []string{alice}, false, Request{alice, "h"}, read, topic, "t", true},
		{"cluster", []Binding{b(cluster, lit, ClusterName, alice, "*", kmsg.ACLOperationAlter, allowP)}, nil, false, Request{alice, "h"}, kmsg.ACLOperationAlter, cluster, ClusterName, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Authorizer{SuperUsers: tc.super, AllowIfNoACL: tc.ifNone}
			if got := a.Authorize(NewSet(tc.acls...), tc.who, tc.op, tc.typ, tc.res); got != tc.allowed {
				t.Fatalf("Authorize = %v, want %v", got, tc.allowed)
			}
		})
	}
}

func TestFilterMatches(t *testing.T) {
	str := func(s string) *string { return &s }
	litT := b(topic, lit, "payments", alice, "*", read, allowP)
	preT := b(topic, pre, "pay", alice, "*", read, allowP)
	wild := b(topic, lit, "*", alice, "*", read, allowP)
	anyF := Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	for _, tc := range []struct {
		name string
		f    func(Filter) Filter
		want []bool // litT, preT, wild
	}{
		{"any", func(f Filter) Filter { return f }, []bool{true, true, true}},
		{"literal by name", func(f Filter) Filter { f.PatternType, f.ResourceName = lit, str("payments"); return f }, []bool{true, false, false}},
		{"prefixed by name", func(f Filter) Filter { f.PatternType, f.ResourceName = pre, str("pay"); return f }, []bool{false, true, false}},
		{"any pattern by name is exact", func(f Filter) Filter { f.ResourceName = str("pay"); return f }, []bool{false, true, false}},
		{"match", func(f Filter) Filter {
			f.PatternType, f.ResourceName = kmsg.ACLResourcePatternTypeMatch, str("payments")
			return f
		}, []bool{true, true, true}},
		{"match other", func(f Filter) Filter {
			f.PatternType, f.ResourceName = kmsg.ACLResourcePatternTypeMatch, str("orders")
			return f
		}, []bool{false, false, true}},
		{"principal", func(f Filter) Filter { f.Principal = str("User:bob"); return f }, []bool{false, false, false}},
		{"operation", func(f Filter) Filter { f.Operation = write; return f }, []bool{false, false, false}},
		{"permission", func(f Filter) Filter { f.Permission = allowP; return f }, []bool{true, true, true}},
		{"type", func(f Filter) Filter { f.ResourceType = group; return f }, []bool{false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f(anyF)
			for i, bb := range []Binding{litT, preT, wild} {
				if got := f.Matches(bb); got != tc.want[i] {
					t.Errorf("%v: Matches = %v, want %v", bb, got, tc.want[i])
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := b(topic, lit, "t", alice, "*", read, allowP)
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]Binding{
		"match pattern":  b(topic, kmsg.ACLResourcePatternTypeMatch, "t", alice, "*", read, allowP),
		"any operation":  b(topic, lit, "t", alice, "*", kmsg.ACLOperationAny, allowP),
		"empty name":     b(topic, lit, "", alice, "*", read, allowP),
		"cluster name":   b(cluster, lit, "other", alice, "*", read, allowP),
		"bad principal":  b(topic, lit, "t", "alice", "*", read, allowP),
		"any permission": b(topic, lit, "t", alice, "*", read, kmsg.ACLPermissionTypeAny),
		"any type":       b(kmsg.ACLResourceTypeAny, lit, "t", alice, "*", read, allowP),
	} {
		if bad.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestAuthorizeAny(t *testing.T) {
	a := &Authorizer{}
	r := Request{alice, "h"}
	if a.AuthorizeAny(NewSet(b(group, lit, "g", alice, "*", write, allowP)), r, write, topic) {
		t.Fatal("no topic ACL, allowed")
	}
	if !a.AuthorizeAny(NewSet(b(topic, pre, "p", alice, "*", write, allowP)), r, write, topic) {
		t.Fatal("prefixed write, refused")
	}
	if a.AuthorizeAny(NewSet(b(topic, pre, "p", alice, "*", write, allowP), b(topic, lit, "*", alice, "*", write, denyP)), r, write, topic) {
		t.Fatal("wildcard deny, allowed")
	}
}

// TestMatchFilterAgreesWithAuthorize: a MATCH filter for a resource
// selects exactly the bindings Authorize consults for it, so what
// `tributary acl list --resource-pattern-type match` shows is what decides.
func TestMatchFilterAgreesWithAuthorize(t *testing.T) {
	names := []string{"*", "p", "pay", "payments", "pays", "x"}
	var all []Binding
	for _, n := range names {
		for _, pat := range []PatternType{lit, pre} {
			all = append(all, b(topic, pat, n, alice, "*", read, allowP))
		}
	}
	for _, res := range []string{"payments", "pay", "p", "x", "other"} {
		name := res
		f := Filter{ResourceType: topic, ResourceName: &name, PatternType: kmsg.ACLResourcePatternTypeMatch,
			Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
		for _, bb := range all {
			// Alone, a binding allows alice iff it applies to res.
			applies := (&Authorizer{}).Authorize(NewSet(bb), Request{alice, "h"}, read, topic, res)
			if got := f.Matches(bb); got != applies {
				t.Errorf("resource %q, %v: MATCH selects %v, Authorize applies %v", res, bb, got, applies)
			}
		}
	}
}

// BenchmarkAuthorize: one decision among 10,000 literal topic ACLs and 100
// prefixed ones, what a Fetch pays per topic.
func BenchmarkAuthorize(bm *testing.B) {
	var bs []Binding
	for i := range 10000 {
		bs = append(bs, b(topic, lit, fmt.Sprintf("topic-%d", i), fmt.Sprintf("User:u%d", i%50), "*", read, allowP))
	}
	for i := range 100 {
		bs = append(bs, b(topic, pre, fmt.Sprintf("team-%d-", i), alice, "*", write, allowP))
	}
	s := NewSet(bs...)
	a := &Authorizer{}
	r := Request{"User:u7", "10.0.0.1"}
	a.Authorize(s, r, read, topic, "topic-7")
	bm.ResetTimer()
	for range bm.N {
		if !a.Authorize(s, r, read, topic, "topic-7") {
			bm.Fatal("refused")
		}
	}
}
