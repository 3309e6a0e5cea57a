package jobs

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/internal/testyarn"
)

// A submission without Kerberos to a Kerberized ResourceManager is refused
// before any application exists, with what to give in the error.
func TestYARNKerberosRefused(t *testing.T) {
	t.Parallel()
	y := testyarn.Kerberized(t)
	// No Kerberos, no application: the RM's answer, in words.
	e := &yarnExecutor{cfg: YARN{ResourceManager: y.RM}, client: &http.Client{Timeout: 10 * time.Second}, hdfsUser: testhdfs.DefaultUser,
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	err := e.call(context.Background(), http.MethodPost, y.RM+"/ws/v1/cluster/apps/new-application", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "wants Kerberos (SPNEGO) and this submission has no Kerberos login") ||
		!strings.Contains(err.Error(), "401") {
		t.Fatalf("a submission without Kerberos: %v", err)
	}

}

// The pieces of a Kerberized submission, against the Kerberized HDFS: the
// NameNode's delegation token (through colinmarc/hdfs's unexported
// connection: this fails if a new version of the library moves it), its
// Writable form, and the keytab cut down to the user's own keys.
func TestYARNDelegationToken(t *testing.T) {
	t.Parallel()
	c := testhdfs.Kerberized(t)
	k := c.Kerberos
	fs, err := fsys.Open("hdfs://"+c.NameNode+testhdfs.KerberizedDir(t), fsys.Options{HadoopConfDir: k.ConfDir,
		Kerberos: fsys.Kerberos{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf}})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	tok, err := fsys.DelegationToken(fs, "hdfs/localhost@EXAMPLE.COM")
	if err != nil {
		t.Fatal(err)
	}
	if tok.Kind != "HDFS_DELEGATION_TOKEN" || tok.Service != c.NameNode || len(tok.Identifier) == 0 || len(tok.Password) == 0 {
		t.Fatalf("token: kind %q service %q, %d identifier and %d password bytes", tok.Kind, tok.Service, len(tok.Identifier), len(tok.Password))
	}
	// The identifier names the owner and the renewer's short name.
	for _, want := range []string{"tributary@EXAMPLE.COM", "hdfs"} {
		if !bytes.Contains(tok.Identifier, []byte(want)) {
			t.Errorf("the token's identifier %q does not name %q", tok.Identifier, want)
		}
	}
	// Writable: vint lengths (one byte below 128), then the bytes.
	w, err := base64.RawURLEncoding.DecodeString(tok.URLString())
	if err != nil {
		t.Fatal(err)
	}
	if int(w[0]) != len(tok.Identifier) || !bytes.Equal(w[1:1+len(tok.Identifier)], tok.Identifier) ||
		!bytes.HasSuffix(w, append([]byte{byte(len(tok.Service))}, tok.Service...)) {
		t.Fatalf("token's Writable form %x", w)
	}

	// Review M4: a token no application took is cancelled; a second
	// cancel finds it gone, so the first one did cancel it.
	if err := fsys.CancelDelegationToken(fs, tok); err != nil {
		t.Fatalf("cancelling the token: %v", err)
	}
	if err := fsys.CancelDelegationToken(fs, tok); err == nil {
		t.Fatal("a cancelled token was cancelled again")
	}

	kt, err := keytab.Load(k.Keytab)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fsys.PrincipalKeytab(k.Keytab, k.Principal)
	if err != nil {
		t.Fatal(err)
	}
	mine := keytab.New()
	if err := mine.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	if len(mine.Entries) == 0 || len(mine.Entries) >= len(kt.Entries) {
		t.Fatalf("the shipped keytab has %d of the file's %d entries", len(mine.Entries), len(kt.Entries))
	}
	for _, e := range mine.Entries {
		if e.Principal.String() != k.Principal {
			t.Errorf("the shipped keytab holds keys of %s", e.Principal)
		}
	}
	if _, err := fsys.PrincipalKeytab(k.Keytab, "mallory@EXAMPLE.COM"); err == nil {
		t.Error("a keytab cut for a principal it does not hold")
	}
}

// Review H2: a Kerberized submission sends the HDFS delegation token in
// its body; over http:// it is refused unless explicitly allowed, with
// the URL and the way out in the error.
func TestYARNKerberosRefusesPlainHTTP(t *testing.T) {
	for _, tc := range []struct {
		rm    string
		allow bool
		ok    bool
	}{
		{"http://rm.example.com:8088", false, false},
		{"http://rm.example.com:8088", true, true},
		{"https://rm.example.com:8090", false, true},
	} {
		err := checkRMScheme(tc.rm, tc.allow)
		if tc.ok != (err == nil) {
			t.Errorf("%s (allowed %v): %v", tc.rm, tc.allow, err)
		}
		if err != nil && (!strings.Contains(err.Error(), tc.rm) || !strings.Contains(err.Error(), "yarn.allow_insecure_http") || !strings.Contains(err.Error(), "HTTPS_ONLY")) {
			t.Errorf("the error does not name the URL and the ways out: %v", err)
		}
	}
}

// Review M1: a Kerberized REST call sends its ticket once, to the host it
// was made for. A redirect is not followed (the body carries the
// delegation token; the ticket is for the first host): the second server
// sees nothing, and the error names where it pointed. A server that keeps
// answering 401 Negotiate is asked once and the answer is the refusal.
// The executor's own http.Client is left as it was.
func TestYARNKerberosNoRedirectNoLoop(t *testing.T) {
	t.Parallel()
	var other, loops atomic.Int32
	second := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { other.Add(1) }))
	defer second.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, second.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	loop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		loops.Add(1)
		w.Header().Set("WWW-Authenticate", "Negotiate")
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer loop.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	var hosts []string
	e := &yarnExecutor{cfg: YARN{ResourceManager: redirect.URL}, client: client, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		authorize: func(r *http.Request) error {
			hosts = append(hosts, r.URL.Host)
			r.Header.Set("Authorization", "Negotiate ticket-for-"+r.URL.Host)
			return nil
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.call(ctx, http.MethodPost, redirect.URL+"/ws/v1/cluster/apps", []byte(`{"credentials":"token"}`), nil)
	if err == nil || !strings.Contains(err.Error(), "307") || !strings.Contains(err.Error(), second.URL) || !strings.Contains(err.Error(), "not followed") {
		t.Errorf("a redirect: %v", err)
	}
	if n := other.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
	e.cfg.ResourceManager = loop.URL
	err = e.call(ctx, http.MethodGet, loop.URL+"/ws/v1/cluster/apps/application_1_0001", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "refused our Kerberos credentials") {
		t.Errorf("a server answering 401 Negotiate: %v", err)
	}
	if n := loops.Load(); n != 1 {
		t.Errorf("a server answering 401 Negotiate was asked %d times, want 1", n)
	}
	if len(hosts) != 2 || hosts[0] != strings.TrimPrefix(redirect.URL, "http://") || hosts[1] != strings.TrimPrefix(loop.URL, "http://") {
		t.Errorf("tickets made for %v", hosts)
	}
	if client.CheckRedirect != nil || client.Jar != nil {
		t.Error("the executor's http.Client was changed")
	}
}
