package console

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testLogin: a console with per-user login against the SASL listener of
// TestConsoleACLs' broker. Nothing shows before signing in; each person
// sees and does what their own principal may (viewer: the topic shared
// only; ops, a super user: everything, the ACLs and the users); what ops
// grants on the ACLs page shows in viewer's next page; a SCRAM user
// created on the Users page can sign in; passwords are in no page and no
// log line; sessions are bounded and end on sign-out.
//
// The console has credentials of its own, a super user's (review 1): a
// person's client must never carry them, or any password would sign in
// and everyone would act as ops.
func testLogin(t *testing.T, saslAddr, plainAddr string) {
	jobsURL, _ := startJobs(t, plainAddr)
	var logs syncBuffer
	// A lake with bad records of secret and shared, and (review 3) a
	// symlink out of the lake to a file as private as the console's own
	// client properties.
	lakeDir := t.TempDir()
	for _, topic := range []string{"secret", "shared"} {
		if err := os.MkdirAll(filepath.Join(lakeDir, "_errors", topic), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(lakeDir, "_errors", topic, "run-1.json"), []byte(`{"value":"`+topic+` SSN 123-45-6789"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "console.properties")
	if err := os.WriteFile(outside, []byte("password=\"console-admin-secret\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(lakeDir, "_errors", "shared", "link.json")); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Seeds: []string{saslAddr}, LoopbackOnly: true, SampleEvery: -1, LakeURI: "file://" + lakeDir, JobsURL: jobsURL,
		ClientOpts: []kgo.Opt{kgo.SASL(scram.Auth{User: "ops", Pass: "ops-secret"}.AsSha512Mechanism())},
		Login:      &Login{Mechanism: "SCRAM-SHA-512", MaxSessions: 3},
		Logger:     slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer func() { hs.Close(); s.Close() }()

	signIn := func(user, pass string) (*browserish, int, string) {
		c := newBrowserish(t, hs.URL)
		tok := c.token("/login")
		code, loc, body := c.post("/login", form("csrf", tok, "user", user, "password", pass, "next", "/topics"))
		if code == http.StatusSeeOther && loc != "/topics" {
			t.Fatalf("sign-in redirects to %q", loc)
		}
		return c, code, body
	}

	anon := newBrowserish(t, hs.URL)
	if code, _ := anon.get("/topics"); code != http.StatusSeeOther {
		t.Fatalf("GET /topics before signing in: %d, want a redirect to /login", code)
	}
	resp, err := anon.c.Get(hs.URL + "/topics/shared")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "/login?next="+url.QueryEscape("/topics/shared") {
		t.Errorf("redirect to %q", loc)
	}
	if code, _, body := anon.post("/topics", form("name", "x")); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("POST without a session: %d\n%s", code, body)
	}
	// An open redirect would send a signed-in person elsewhere.
	// Browsers drop tabs and newlines, so "/\t/x" is //x (review 4).
	for _, next := range []string{"//evil.example/x", "/\t/evil.example", "/\n/evil.example", "/\r/evil.example", "/\\evil.example", "/\\/evil.example", "/ /evil.example", "https://evil.example", "/\x7f/evil.example", ""} {
		if got := safeNext(next); got != "/" {
			t.Errorf("safeNext(%q) = %q, want /", next, got)
		}
	}
	if got := safeNext("/topics/a?x=1"); got != "/topics/a?x=1" {
		t.Errorf("safeNext(/topics/a?x=1) = %q", got)
	}
	// Through the sign-in form: the Location stays a path of this console.
	{
		c := newBrowserish(t, hs.URL)
		code, loc, _ := c.post("/login", form("csrf", c.token("/login"), "user", "viewer", "password", "viewer-secret", "next", "/\t/evil.example/phish"))
		if code != http.StatusSeeOther || loc != "/" {
			t.Errorf("sign-in with next=/<tab>/evil.example: %d Location %q, want /", code, loc)
		}
		c.post("/logout", form("csrf", c.token("/topics")))
	}

	if _, code, body := signIn("viewer", "wrong-password"); code != http.StatusUnauthorized || !strings.Contains(body, "sign-in refused") || strings.Contains(body, "wrong-password") {
		t.Fatalf("bad password: %d\n%s", code, body)
	}

	viewer, code, body := signIn("viewer", "viewer-secret")
	if code != http.StatusSeeOther {
		t.Fatalf("viewer's sign-in: %d\n%s", code, body)
	}
	_, list := viewer.get("/topics")
	if !strings.Contains(list, `href="/topics/shared"`) || strings.Contains(list, "secret") || !strings.Contains(list, `id="whoami">viewer<`) {
		t.Fatalf("viewer's topic list: want shared, not secret, and who is signed in\n%s", list)
	}
	tok := viewer.token("/topics")
	if code, _, body := viewer.post("/topics", form("csrf", tok, "name", "viewer-made")); code != http.StatusForbidden || !strings.Contains(body, "AUTHORIZATION_FAILED") {
		t.Errorf("viewer created a topic: %d\n%s", code, body)
	}
	// The lake follows the topics' ACLs (review 2): viewer sees shared's
	// bad records, not secret's.
	_, pipe := viewer.get("/pipeline")
	if !strings.Contains(pipe, "_errors/shared/run-1.json") || strings.Contains(pipe, "_errors/secret/") {
		t.Errorf("viewer's Pipeline page: want shared's _errors and not secret's\n%s", pipe)
	}
	if code, body := viewer.get("/pipeline/errors?file=_errors/secret/run-1.json"); code != http.StatusForbidden || strings.Contains(body, "123-45-6789") {
		t.Errorf("viewer opened secret's bad records: %d\n%s", code, body)
	}
	if code, body := viewer.get("/pipeline/errors?file=_errors/shared/run-1.json"); code != http.StatusOK || !strings.Contains(body, "shared SSN") {
		t.Errorf("viewer could not open shared's bad records: %d\n%s", code, body)
	}
	// Only regular files inside the lake (review 3): not a symlink out.
	if code, body := viewer.get("/pipeline/errors?file=_errors/shared/link.json"); code == http.StatusOK || strings.Contains(body, "console-admin-secret") {
		t.Errorf("a symlink in _errors was followed: %d\n%s", code, body)
	}
	if strings.Contains(pipe, "link.json") {
		t.Errorf("the Pipeline page lists a symlink in _errors")
	}
	// Load jobs change only for ALTER on the cluster, and the log names
	// who changed them (review 9).
	if code, _, body := viewer.post("/jobs/clicks-lake/pause", form("csrf", viewer.token("/topics"))); code != http.StatusForbidden || !strings.Contains(body, "ALTER on the cluster") {
		t.Errorf("viewer paused a load job: %d\n%s", code, body)
	}
	// The browse consumers are the person's too, not the console's.
	if code, body := viewer.get("/topics/secret/messages"); code == http.StatusOK {
		t.Errorf("viewer browsed secret: %d\n%s", code, body)
	}

	ops, code, body := signIn("ops", "ops-secret")
	if code != http.StatusSeeOther {
		t.Fatalf("ops' sign-in: %d\n%s", code, body)
	}
	_, list = ops.get("/topics")
	if !strings.Contains(list, `href="/topics/secret"`) || !strings.Contains(list, `href="/acls"`) || !strings.Contains(list, `href="/users"`) {
		t.Fatalf("ops' topic list: want secret and the ACLs and Users pages\n%s", list)
	}
	if code, loc, body := ops.post("/jobs/clicks-lake/pause", form("csrf", ops.token("/topics"))); code != http.StatusSeeOther {
		t.Errorf("ops could not pause a load job: %d %s\n%s", code, loc, body)
	}
	if !strings.Contains(logs.String(), "paused job clicks-lake") || !strings.Contains(logs.String(), "as=ops") {
		t.Errorf("the log does not say who paused the job:\n%s", logs.String())
	}
	ops.post("/jobs/clicks-lake/resume", form("csrf", ops.token("/topics")))
	_, acls := ops.get("/acls")
	mustContain(t, "ACL list", acls, "<td>User:viewer</td>", "<td>shared</td>")
	tok = ops.token("/acls")
	grant := form("csrf", tok, "principal", "User:viewer", "permission", "ALLOW", "operation", "DESCRIBE", "type", "TOPIC", "name", "secret", "pattern", "LITERAL", "host", "*")
	if code, loc, body := ops.post("/acls", grant); code != http.StatusSeeOther || !strings.Contains(loc, "created+ACL") {
		t.Fatalf("ops' grant: %d %s\n%s", code, loc, body)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, list = viewer.get("/topics"); strings.Contains(list, `href="/topics/secret"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("viewer does not see secret after ops' grant:\n%s", list)
		}
	}
	grant.Set("csrf", tok)
	if code, loc, _ := ops.post("/acls/delete", grant); code != http.StatusSeeOther || !strings.Contains(loc, "deleted+1+ACL") {
		t.Fatalf("ops' revoke: %d %s", code, loc)
	}
	if code, _, body := ops.post("/acls", form("csrf", tok, "principal", "viewer", "permission", "ALLOW", "operation", "READ", "type", "TOPIC", "name", "x", "pattern", "LITERAL")); code != http.StatusBadRequest || !strings.Contains(body, "Type:name") {
		t.Errorf("an ACL with a bad principal: %d\n%s", code, body)
	}
	// viewer may not create ACLs: the broker says so.
	if code, _, body := viewer.post("/acls", form("csrf", viewer.token("/topics"), "principal", "User:viewer", "permission", "ALLOW", "operation", "ALL", "type", "TOPIC", "name", "*", "pattern", "LITERAL")); code != http.StatusForbidden || !strings.Contains(body, "AUTHORIZATION_FAILED") {
		t.Errorf("viewer granted itself everything: %d\n%s", code, body)
	}

	// A user made on the Users page signs in with its password.
	tok = ops.token("/users")
	if code, _, body := ops.post("/users", form("csrf", tok, "user", "newbie", "password", "newbie-secret", "mechanism", "SCRAM-SHA-512")); code != http.StatusSeeOther {
		t.Fatalf("create user: %d\n%s", code, body)
	}
	_, users := ops.get("/users")
	mustContain(t, "users", users, "<td>newbie</td>", "SCRAM-SHA-512 (8192 iterations)", "<td>viewer</td>")
	// Three sessions at most: viewer and ops hold two.
	newbie, code, body := signIn("newbie", "newbie-secret")
	if code != http.StatusSeeOther {
		t.Fatalf("newbie's sign-in: %d\n%s", code, body)
	}
	if _, code, body := signIn("ops", "ops-secret"); code != http.StatusServiceUnavailable || !strings.Contains(body, "the most this console holds") {
		t.Errorf("a fourth session: %d\n%s", code, body)
	}
	// Deleting a credential ends that person's sessions (review 7): the
	// client authenticated with it would otherwise live on.
	if code, _, body := ops.post("/users/newbie/delete", form("csrf", tok, "mechanism", "SCRAM-SHA-512", "confirm", "newbie")); code != http.StatusSeeOther {
		t.Fatalf("delete user: %d\n%s", code, body)
	}
	if code, _ := newbie.get("/topics"); code != http.StatusSeeOther {
		t.Errorf("newbie's page after its credential was deleted: %d, want a redirect to /login", code)
	}
	if _, code, _ := signIn("newbie", "newbie-secret"); code != http.StatusUnauthorized {
		t.Errorf("a deleted user signed in: %d", code)
	}
	// Signing in again in the same browser ends the session it held
	// (review 6): viewer's old cookie opens nothing.
	oldViewer := viewer.cookie(sessionCookie)
	if code, _, body := viewer.post("/login", form("csrf", viewer.token("/login"), "user", "viewer", "password", "viewer-secret", "next", "/topics")); code != http.StatusSeeOther {
		t.Fatalf("viewer's second sign-in: %d\n%s", code, body)
	}
	if s.sessions.get(oldViewer) != nil {
		t.Errorf("viewer's first session outlived its second sign-in")
	}
	// Sign-out ends the session: its cookie no longer opens a page.
	if code, loc, _ := viewer.post("/logout", form("csrf", viewer.token("/topics"))); code != http.StatusSeeOther || loc != "/login" {
		t.Errorf("sign-out: %d %s", code, loc)
	}
	if code, _ := viewer.get("/topics"); code != http.StatusSeeOther {
		t.Errorf("a page after signing out: %d", code)
	}
	// Guessing is limited per user name (review 5): after 5 failures even
	// the right password waits, and says so; another user still signs in.
	// A stranger's user name is clipped in the log.
	if _, code, _ := signIn(strings.Repeat("x", 200_000), "p"); code != http.StatusUnauthorized {
		t.Errorf("a 200 KB user name: %d", code)
	}
	if strings.Contains(logs.String(), strings.Repeat("x", 1000)) {
		t.Errorf("the log holds a 200 KB user name whole")
	}
	for i := 0; i < failuresPerUser; i++ {
		if _, code, body := signIn("ops", "guess"); code != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d\n%s", i, code, body)
		}
	}
	if _, code, body := signIn("ops", "ops-secret"); code != http.StatusTooManyRequests || !strings.Contains(body, "try again in") {
		t.Errorf("ops' right password after %d failures: %d, want 429\n%s", failuresPerUser, code, body)
	}
	if _, code, body := signIn("viewer", "viewer-secret"); code != http.StatusSeeOther {
		t.Errorf("viewer while ops is locked: %d\n%s", code, body)
	}
	for _, secret := range []string{"viewer-secret", "ops-secret", "newbie-secret", "wrong-password"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the console's log holds a password:\n%s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), "signed in") || !strings.Contains(logs.String(), "user=viewer") {
		t.Errorf("no sign-in in the log:\n%s", logs.String())
	}
}

// cookie is the value of the browser's cookie name for the console.
func (b *browserish) cookie(name string) string {
	u, _ := url.Parse(b.base)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}
