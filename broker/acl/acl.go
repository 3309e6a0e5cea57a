package acl

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's enum values, by the names Kafka's tools use.
type (
	ResourceType = kmsg.ACLResourceType
	PatternType  = kmsg.ACLResourcePatternType
	Operation    = kmsg.ACLOperation
	Permission   = kmsg.ACLPermissionType
)

// Wildcard is the resource name, principal name and host that match any.
const (
	Wildcard          = "*"
	WildcardPrincipal = "User:*"
	// ClusterName is the only name of the CLUSTER resource.
	ClusterName = "kafka-cluster"
)

// Binding is one ACL: who (Principal from Host) may or may not
// (Permission) do Operation on the resources the pattern names.
type Binding struct {
	ResourceType ResourceType `json:"resource_type"`
	ResourceName string       `json:"resource_name"`
	PatternType  PatternType  `json:"pattern_type"`
	Principal    string       `json:"principal"`
	Host         string       `json:"host"`
	Operation    Operation    `json:"operation"`
	Permission   Permission   `json:"permission"`
}

func (b Binding) String() string {
	return fmt.Sprintf("(pattern=%s:%s:%s, principal=%s, host=%s, operation=%s, permission=%s)",
		b.ResourceType, b.PatternType, b.ResourceName, b.Principal, b.Host, b.Operation, b.Permission)
}

// ErrInvalid is a binding CreateAcls must refuse (INVALID_REQUEST).
var ErrInvalid = errors.New("broker/acl: invalid ACL")

// Validate is what Kafka's controller checks of a new binding.
func (b Binding) Validate() error {
	switch b.ResourceType {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster,
		kmsg.ACLResourceTypeTransactionalId, kmsg.ACLResourceTypeDelegationToken, kmsg.ACLResourceTypeUser:
	default:
		return fmt.Errorf("%w: invalid resourceType %d", ErrInvalid, b.ResourceType)
	}
	if b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed {
		return fmt.Errorf("%w: invalid patternType %d", ErrInvalid, b.PatternType)
	}
	if b.Operation <= kmsg.ACLOperationAny || b.Operation > kmsg.ACLOperationDescribeTokens {
		return fmt.Errorf("%w: invalid operation %d", ErrInvalid, b.Operation)
	}
	if b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny {
		return fmt.Errorf("%w: invalid permissionType %d", ErrInvalid, b.Permission)
	}
	if b.ResourceName == "" {
		return fmt.Errorf("%w: resource name should not be empty", ErrInvalid)
	}
	if b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterName {
		return fmt.Errorf("%w: the only valid name for the CLUSTER resource is %s", ErrInvalid, ClusterName)
	}
	if typ, name, ok := strings.Cut(b.Principal, ":"); !ok || typ == "" || name == "" {
		return fmt.Errorf("%w: could not parse principal %q: it must be TYPE:NAME", ErrInvalid, b.Principal)
	}
	if b.Host == "" {
		return fmt.Errorf("%w: the host must not be empty (use * for any host)", ErrInvalid)
	}
	return nil
}

// Filter selects bindings, as DescribeAcls and DeleteAcls do: a nil
// string matches anything, ANY matches every value, and the MATCH pattern
// type selects the bindings that would apply to the named resource.
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Matches is whether f selects b (Kafka's AclBindingFilter.matches).
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	anyPattern := f.PatternType == kmsg.ACLResourcePatternTypeAny
	if !anyPattern && f.PatternType != kmsg.ACLResourcePatternTypeMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		switch {
		case anyPattern || f.PatternType == b.PatternType:
			if name != b.ResourceName {
				return false
			}
		case b.PatternType == kmsg.ACLResourcePatternTypeLiteral:
			if name != b.ResourceName && b.ResourceName != Wildcard {
				return false
			}
		case b.PatternType == kmsg.ACLResourcePatternTypePrefixed:
			if !strings.HasPrefix(name, b.ResourceName) {
				return false
			}
		default:
			return false
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission
}

// ValidateFilter is what DeleteAcls refuses: UNKNOWN values.
func (f Filter) ValidateFilter() error {
	if f.ResourceType == kmsg.ACLResourceTypeUnknown || f.PatternType == kmsg.ACLResourcePatternTypeUnknown ||
		f.Operation == kmsg.ACLOperationUnknown || f.Permission == kmsg.ACLPermissionTypeUnknown {
		return fmt.Errorf("%w: the filter has an UNKNOWN value", ErrInvalid)
	}
	return nil
}

// Set is an immutable set of bindings, indexed for Authorize once first
// asked.
type Set struct {
	bindings map[Binding]struct{}

	once  sync.Once
	index map[ResourceType]*typeIndex
}

// typeIndex holds one resource type's bindings the way Authorize looks
// them up: LITERAL ones by name, the "*" ones, and the PREFIXED ones,
// which are scanned (there are few in practice, as in Kafka's clusters).
type typeIndex struct {
	all      []Binding
	literal  map[string][]Binding
	wildcard []Binding
	prefixed []Binding
}

// NewSet is a set of bs.
func NewSet(bs ...Binding) *Set {
	s := &Set{bindings: make(map[Binding]struct{}, len(bs))}
	for _, b := range bs {
		s.bindings[b] = struct{}{}
	}
	return s
}

// Len is how many bindings s holds (a nil Set holds none).
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.bindings)
}

// Has is whether s holds b.
func (s *Set) Has(b Binding) bool {
	if s == nil {
		return false
	}
	_, ok := s.bindings[b]
	return ok
}

// With is s with add and without remove.
func (s *Set) With(add, remove []Binding) *Set {
	n := &Set{bindings: make(map[Binding]struct{}, s.Len()+len(add))}
	if s != nil {
		for b := range s.bindings {
			n.bindings[b] = struct{}{}
		}
	}
	for _, b := range remove {
		delete(n.bindings, b)
	}
	for _, b := range add {
		n.bindings[b] = struct{}{}
	}
	return n
}

// All is every binding, in a stable order (resource, then the rest).
func (s *Set) All() []Binding {
	if s == nil {
		return nil
	}
	out := make([]Binding, 0, len(s.bindings))
	for b := range s.bindings {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

func less(a, b Binding) bool {
	switch {
	case a.ResourceType != b.ResourceType:
		return a.ResourceType < b.ResourceType
	case a.PatternType != b.PatternType:
		return a.PatternType < b.PatternType
	case a.ResourceName != b.ResourceName:
		return a.ResourceName < b.ResourceName
	case a.Principal != b.Principal:
		return a.Principal < b.Principal
	case a.Host != b.Host:
		return a.Host < b.Host
	case a.Operation != b.Operation:
		return a.Operation < b.Operation
	}
	return a.Permission < b.Permission
}

// Select is the bindings f matches, in All's order.
func (s *Set) Select(f Filter) []Binding {
	var out []Binding
	for _, b := range s.All() {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

func (s *Set) typeIndex(t ResourceType) *typeIndex {
	if s == nil {
		return nil
	}
	s.once.Do(func() {
		s.index = map[ResourceType]*typeIndex{}
		for _, b := range s.All() {
			ix := s.index[b.ResourceType]
			if ix == nil {
				ix = &typeIndex{literal: map[string][]Binding{}}
				s.index[b.ResourceType] = ix
			}
			ix.all = append(ix.all, b)
			switch {
			case b.PatternType == kmsg.ACLResourcePatternTypePrefixed:
				ix.prefixed = append(ix.prefixed, b)
			case b.ResourceName == Wildcard:
				ix.wildcard = append(ix.wildcard, b)
			default:
				ix.literal[b.ResourceName] = append(ix.literal[b.ResourceName], b)
			}
		}
	})
	return s.index[t]
}

func (s *Set) byType(t ResourceType) []Binding {
	if ix := s.typeIndex(t); ix != nil {
		return ix.all
	}
	return nil
}

// forResource calls fn with every binding whose pattern matches the
// resource, until fn returns false.
func (s *Set) forResource(t ResourceType, name string, fn func(Binding) bool) {
	ix := s.typeIndex(t)
	if ix == nil {
		return
	}
	for _, bs := range [][]Binding{ix.literal[name], ix.wildcard} {
		for _, b := range bs {
			if !fn(b) {
				return
			}
		}
	}
	for _, b := range ix.prefixed {
		if strings.HasPrefix(name, b.ResourceName) && !fn(b) {
			return
		}
	}
}

// Authorizer decides as Kafka's StandardAuthorizer does.
type Authorizer struct {
	// SuperUsers are principals ("User:admin") allowed everything.
	SuperUsers []string
	// AllowIfNoACL is allow.everyone.if.no.acl.found: a resource no ACL
	// names at all is open to everyone.
	AllowIfNoACL bool
}

// Request is who asks, from where, to do what.
type Request struct {
	Principal string // "User:alice"
	Host      string // the client's IP address
}

// Authorize is whether r may do op on the resource (typ, name) under the
// bindings of s: super users may do everything; otherwise a matching
// DENY wins over any ALLOW, a matching ALLOW allows, and a resource with
// no ACL at all (for anyone) follows AllowIfNoACL. An ALLOW of READ,
// WRITE, DELETE or ALTER implies DESCRIBE, and one of ALTER_CONFIGS
// implies DESCRIBE_CONFIGS; a DENY implies nothing.
func (a *Authorizer) Authorize(s *Set, r Request, op Operation, typ ResourceType, name string) bool {
	if slices.Contains(a.SuperUsers, r.Principal) {
		return true
	}
	allowed, found, denied := false, false, false
	s.forResource(typ, name, func(b Binding) bool {
		found = true
		switch result(b, r, op) {
		case deny:
			denied = true
			return false
		case allow:
			allowed = true
		}
		return true
	})
	switch {
	case denied:
		return false
	case !found:
		return a.AllowIfNoACL
	}
	return allowed
}

// AuthorizeAny is whether r may do op on some resource of typ: Kafka's
// authorizeByResourceType, which InitProducerId uses to let a principal
// that may write some topic be idempotent. It is allowed when an ALLOW
// for the principal exists that no DENY of the same pattern or a broader
// one cancels.
func (a *Authorizer) AuthorizeAny(s *Set, r Request, op Operation, typ ResourceType) bool {
	if slices.Contains(a.SuperUsers, r.Principal) {
		return true
	}
	bs := s.byType(typ)
	if len(bs) == 0 {
		return a.AllowIfNoACL
	}
	denied := func(allowB Binding) bool {
		for _, d := range bs {
			if result(d, r, op) != deny {
				continue
			}
			if d.PatternType == kmsg.ACLResourcePatternTypeLiteral && (d.ResourceName == Wildcard || d.ResourceName == allowB.ResourceName && allowB.PatternType == kmsg.ACLResourcePatternTypeLiteral) {
				return true
			}
			if d.PatternType == kmsg.ACLResourcePatternTypePrefixed && strings.HasPrefix(allowB.ResourceName, d.ResourceName) {
				return true
			}
		}
		return false
	}
	for _, b := range bs {
		if b.Permission == kmsg.ACLPermissionTypeAllow && result(b, r, op) == allow && !denied(b) {
			return true
		}
	}
	return false
}

type outcome int

const (
	none outcome = iota
	allow
	deny
)

// result is what b says of r doing op, its resource already matched.
func result(b Binding, r Request, op Operation) outcome {
	if b.Principal != r.Principal && b.Principal != WildcardPrincipal {
		return none
	}
	if b.Host != Wildcard && b.Host != r.Host {
		return none
	}
	if b.Operation != kmsg.ACLOperationAll {
		if b.Permission == kmsg.ACLPermissionTypeAllow {
			switch op {
			case kmsg.ACLOperationDescribe:
				switch b.Operation {
				case kmsg.ACLOperationDescribe, kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
				default:
					return none
				}
			case kmsg.ACLOperationDescribeConfigs:
				if b.Operation != kmsg.ACLOperationDescribeConfigs && b.Operation != kmsg.ACLOperationAlterConfigs {
					return none
				}
			default:
				if b.Operation != op {
					return none
				}
			}
		} else if b.Operation != op {
			return none
		}
	}
	if b.Permission == kmsg.ACLPermissionTypeAllow {
		return allow
	}
	if b.Permission == kmsg.ACLPermissionTypeDeny {
		return deny
	}
	return none
}
