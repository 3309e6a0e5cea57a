package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// features says whether the cluster has an authorizer and SCRAM
// credentials, for the ACLs and Users pages: asked with a filter that
// matches nothing (cheap on any cluster), and kept a minute.
type features struct {
	mu         sync.Mutex
	at         time.Time // of the last answer
	retry      time.Time // after a failed probe, none before this
	probing    bool
	acls, scrm bool
}

// get answers from the last probe, and probes again when that is older
// than a minute. The probe runs outside the lock and one at a time: with
// the broker slow or down, other pages render at once with the last answer
// instead of queueing behind 3 s calls, and a failed probe is retried
// after 15 s, not on every page (review 13).
func (f *features) get(ctx context.Context, cl *kgo.Client) (bool, bool) {
	f.mu.Lock()
	now := time.Now()
	if now.Sub(f.at) < time.Minute || f.probing || now.Before(f.retry) {
		defer f.mu.Unlock()
		return f.acls, f.scrm
	}
	f.probing = true
	f.mu.Unlock()
	acls, scrm, err := probeFeatures(ctx, cl)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probing = false
	if err != nil {
		f.retry = time.Now().Add(15 * time.Second)
	} else {
		f.acls, f.scrm, f.at = acls, scrm, time.Now()
	}
	return f.acls, f.scrm
}

func probeFeatures(ctx context.Context, cl *kgo.Client) (acls, scrm bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral
	name := "__tributary_console_probe"
	req.ResourceName = &name
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return false, false, err
	}
	// SECURITY_DISABLED: no authorizer. An authorization failure still
	// means there is one (the page then says what the broker says).
	acls = resp.ErrorCode != kerr.SecurityDisabled.Code
	_, err = kadm.NewClient(cl).DescribeUserSCRAMs(ctx, "__tributary_console_probe")
	scrm = err == nil || !errors.Is(err, kerr.UnsupportedVersion) && !isUnsupported(err)
	return acls, scrm, nil
}

func isUnsupported(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "not supported") || strings.Contains(err.Error(), "UNSUPPORTED_VERSION"))
}

type aclRow struct {
	Principal, Host, Type, Name, Pattern, Operation, Permission string
}

type aclsData struct {
	ACLs    []aclRow
	Filter  string
	Types   []string
	Ops     []string
	Pattern []string
}

var (
	aclTypes    = []string{"TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN"}
	aclOps      = []string{"ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"}
	aclPatterns = []string{"LITERAL", "PREFIXED"}
)

// maxACLsShown bounds the ACL page; a filter narrows it.
const maxACLsShown = 2000

func (s *Server) acls(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := ctxOf(r)
	defer cancel()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, s.client(ctx))
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		s.fail(w, r, "ACLs", err)
		return
	}
	d := aclsData{Filter: strings.TrimSpace(r.URL.Query().Get("q")), Types: aclTypes, Ops: aclOps, Pattern: aclPatterns}
	lf := strings.ToLower(d.Filter)
	for _, res := range resp.Resources {
		for _, a := range res.ACLs {
			row := aclRow{Principal: a.Principal, Host: a.Host, Type: res.ResourceType.String(), Name: res.ResourceName,
				Pattern: res.ResourcePatternType.String(), Operation: a.Operation.String(), Permission: a.PermissionType.String()}
			if lf != "" && !strings.Contains(strings.ToLower(row.Principal+" "+row.Name), lf) {
				continue
			}
			d.ACLs = append(d.ACLs, row)
		}
	}
	sort.Slice(d.ACLs, func(i, j int) bool {
		a, b := d.ACLs[i], d.ACLs[j]
		return a.Type+"\x00"+a.Name+"\x00"+a.Principal+"\x00"+a.Operation < b.Type+"\x00"+b.Name+"\x00"+b.Principal+"\x00"+b.Operation
	})
	if len(d.ACLs) > maxACLsShown {
		d.ACLs = d.ACLs[:maxACLsShown]
	}
	s.render(w, r, http.StatusOK, "acls", page{Title: "ACLs", Nav: "acls", Data: d})
}

// aclFromForm reads one ACL, exactly: create and delete name the same.
func aclFromForm(f url.Values) (aclRow, error) {
	a := aclRow{Principal: strings.TrimSpace(f.Get("principal")), Host: strings.TrimSpace(f.Get("host")), Type: f.Get("type"),
		Name: strings.TrimSpace(f.Get("name")), Pattern: f.Get("pattern"), Operation: f.Get("operation"), Permission: f.Get("permission")}
	if a.Host == "" {
		a.Host = "*"
	}
	if !strings.Contains(a.Principal, ":") {
		return a, badInput("principal %q: want Type:name, e.g. User:alice", a.Principal)
	}
	if a.Type == "CLUSTER" && a.Name == "" {
		a.Name = "kafka-cluster"
	}
	if a.Name == "" {
		return a, badInput("a resource name is needed (* for every one)")
	}
	return a, nil
}

func (a aclRow) kmsg() (rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, op kmsg.ACLOperation, perm kmsg.ACLPermissionType, err error) {
	if rt, err = kmsg.ParseACLResourceType(a.Type); err != nil || rt <= kmsg.ACLResourceTypeAny {
		return rt, pt, op, perm, badInput("resource type %q", a.Type)
	}
	if pt, err = kmsg.ParseACLResourcePatternType(a.Pattern); err != nil || pt <= kmsg.ACLResourcePatternTypeMatch {
		return rt, pt, op, perm, badInput("pattern %q: want LITERAL or PREFIXED", a.Pattern)
	}
	if op, err = kmsg.ParseACLOperation(a.Operation); err != nil || op <= kmsg.ACLOperationAny {
		return rt, pt, op, perm, badInput("operation %q", a.Operation)
	}
	if perm, err = kmsg.ParseACLPermissionType(a.Permission); err != nil || perm <= kmsg.ACLPermissionTypeAny {
		return rt, pt, op, perm, badInput("permission %q: want ALLOW or DENY", a.Permission)
	}
	return rt, pt, op, perm, nil
}

// postedACL is a posted ACL form with its Kafka enums, read one way for
// create and delete so that both refuse the same bad values with the same
// message.
func postedACL(f url.Values) (a aclRow, rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, op kmsg.ACLOperation, perm kmsg.ACLPermissionType, err error) {
	if a, err = aclFromForm(f); err != nil {
		return a, rt, pt, op, perm, err
	}
	rt, pt, op, perm, err = a.kmsg()
	return a, rt, pt, op, perm, err
}

func (s *Server) createACL(w http.ResponseWriter, r *http.Request) {
	a, rt, pt, op, perm, err := postedACL(r.PostForm)
	if err != nil {
		s.fail(w, r, "create ACL", err)
		return
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	req := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, a.Name, pt
	c.Principal, c.Host, c.Operation, c.PermissionType = a.Principal, a.Host, op, perm
	req.Creations = append(req.Creations, c)
	resp, err := req.RequestWith(ctx, s.client(ctx))
	if err == nil && len(resp.Results) == 1 {
		err = kerr.ErrorForCode(resp.Results[0].ErrorCode)
		if err != nil && resp.Results[0].ErrorMessage != nil {
			err = fmt.Errorf("%w: %s", err, *resp.Results[0].ErrorMessage)
		}
	}
	if err != nil {
		s.fail(w, r, "create ACL", err)
		return
	}
	what := fmt.Sprintf("created ACL: %s %s %s on %s %s (%s) from %s", a.Principal, a.Permission, a.Operation, a.Type, a.Name, a.Pattern, a.Host)
	s.log.Info("console: "+what, "as", userOf(ctx))
	s.done(w, r, "/acls", what)
}

func (s *Server) deleteACL(w http.ResponseWriter, r *http.Request) {
	a, rt, pt, op, perm, err := postedACL(r.PostForm)
	if err != nil {
		s.fail(w, r, "delete ACL", err)
		return
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	req := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourceName, f.ResourcePatternType = rt, &a.Name, pt
	f.Principal, f.Host, f.Operation, f.PermissionType = &a.Principal, &a.Host, op, perm
	req.Filters = append(req.Filters, f)
	resp, err := req.RequestWith(ctx, s.client(ctx))
	n := 0
	if err == nil && len(resp.Results) == 1 {
		err = kerr.ErrorForCode(resp.Results[0].ErrorCode)
		n = len(resp.Results[0].MatchingACLs)
	}
	if err != nil {
		s.fail(w, r, "delete ACL", err)
		return
	}
	what := fmt.Sprintf("deleted %d ACL: %s %s %s on %s %s", n, a.Principal, a.Permission, a.Operation, a.Type, a.Name)
	s.log.Info("console: "+what, "as", userOf(ctx))
	s.done(w, r, "/acls", what)
}

type userRow struct {
	User  string
	Creds []string
	Err   string
}

func (s *Server) users(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := ctxOf(r)
	defer cancel()
	us, err := s.admin(ctx).DescribeUserSCRAMs(ctx)
	if err != nil {
		s.fail(w, r, "SCRAM users", err)
		return
	}
	var rows []userRow
	for _, u := range us.Sorted() {
		row := userRow{User: u.User}
		for _, c := range u.CredInfos {
			row.Creds = append(row.Creds, fmt.Sprintf("%s (%d iterations)", c.Mechanism, c.Iterations))
		}
		if u.Err != nil {
			row.Err = u.Err.Error()
		}
		rows = append(rows, row)
	}
	s.render(w, r, http.StatusOK, "users", page{Title: "Users", Nav: "users", Data: rows})
}

func scramMechanism(m string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(m) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512", "":
		return kadm.ScramSha512, nil
	}
	return 0, badInput("mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", m)
}

// upsertUser sets a user's SCRAM password. The password goes to the
// broker only (kadm salts and hashes it here first); it is never logged
// nor echoed back in a page.
func (s *Server) upsertUser(w http.ResponseWriter, r *http.Request) {
	user, pass := strings.TrimSpace(r.PostForm.Get("user")), r.PostForm.Get("password")
	mech, err := scramMechanism(r.PostForm.Get("mechanism"))
	iter := int32(8192)
	if v := r.PostForm.Get("iterations"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 4096 || n > 16384 {
			err = badInput("iterations %q: between 4096 and 16384", v)
		}
		iter = int32(n)
	}
	if err == nil && (user == "" || pass == "") {
		err = badInput("a user name and a password are needed")
	}
	if err != nil {
		s.fail(w, r, "set SCRAM credential", err)
		return
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	rs, err := s.admin(ctx).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: mech, Iterations: iter, Password: pass}})
	if err == nil {
		for _, x := range rs {
			if x.Err != nil {
				err = x.Err
			}
		}
	}
	if err != nil {
		s.fail(w, r, "set SCRAM credential of "+user, err)
		return
	}
	what := fmt.Sprintf("set the %s credential of %s", mech, user)
	s.endSessionsOf(user)
	s.log.Info("console: "+what, "as", userOf(ctx))
	s.done(w, r, "/users", what)
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	mech, err := scramMechanism(r.PostForm.Get("mechanism"))
	if err == nil && r.PostForm.Get("confirm") != user {
		err = badInput("type the user's name, %s, to delete its credential", user)
	}
	if err != nil {
		s.fail(w, r, "delete SCRAM credential", err)
		return
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	rs, err := s.admin(ctx).AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: user, Mechanism: mech}}, nil)
	if err == nil {
		for _, x := range rs {
			if x.Err != nil {
				err = x.Err
			}
		}
	}
	if err != nil {
		s.fail(w, r, "delete SCRAM credential of "+user, err)
		return
	}
	what := fmt.Sprintf("deleted the %s credential of %s", mech, user)
	s.endSessionsOf(user)
	s.log.Info("console: "+what, "as", userOf(ctx))
	s.done(w, r, "/users", what)
}

// endSessionsOf ends the console sessions of a user whose credential was
// just changed or deleted: their clients stay authenticated with the old
// one otherwise (review 7). Changes made elsewhere (kafka-configs) are not
// seen here; the broker's connections.max.reauth.ms bounds those.
func (s *Server) endSessionsOf(user string) {
	if s.sessions == nil {
		return
	}
	if n := s.sessions.removeUser(user); n > 0 {
		s.log.Info("console: ended the sessions of a user whose credential changed", "user", clip(user, 100), "sessions", n)
	}
}
