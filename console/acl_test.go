package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestConsoleACLs: a console logged in as a SCRAM user sees what that
// principal may see and can do what it may do, no more: the broker's ACLs
// decide, since every page is a Kafka request made as that user.
func TestConsoleACLs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	t.Parallel()
	plain, sasl := testbroker.FreePort(t), testbroker.FreePort(t)
	b := testbroker.StartConfig(t, testbroker.Config{
		Dir: t.TempDir(), Port: plain,
		Listeners: fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d", plain, sasl),
		Props: []string{"authorizer.class.name=" + config.StandardAuthorizer, "super.users=User:ANONYMOUS;User:ops",
			"listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-512"},
		Args: []string{"--add-scram", "SCRAM-SHA-512=[name=viewer,password=viewer-secret]", "--add-scram", "SCRAM-SHA-512=[name=ops,password=ops-secret]"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr())) // the anonymous super user
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	for _, topic := range []string{"shared", "secret"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	acl := kadm.NewACLs().Allow("User:viewer").Topics("shared").Operations(kadm.OpDescribe, kadm.OpRead, kadm.OpDescribeConfigs).ResourcePatternType(kadm.ACLPatternLiteral)
	if rs, err := adm.CreateACLs(ctx, acl); err != nil || len(rs) == 0 || rs[0].Err != nil {
		t.Fatalf("create ACLs: %v %+v", err, rs)
	}

	s, err := New(Config{Seeds: []string{fmt.Sprintf("127.0.0.1:%d", sasl)}, LoopbackOnly: true, SampleEvery: -1,
		ClientOpts: []kgo.Opt{kgo.SASL(scram.Auth{User: "viewer", Pass: "viewer-secret"}.AsSha512Mechanism())}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer func() { hs.Close(); s.Close() }()
	c := newBrowserish(t, hs.URL)

	// ACLs apply to new metadata at once; allow the broker a moment.
	var list string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, list = c.get("/topics")
		if strings.Contains(list, `href="/topics/shared"`) || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(list, `href="/topics/shared"`) || strings.Contains(list, "secret") {
		t.Fatalf("viewer's topic list: want shared and not secret\n%s", list)
	}
	if code, body := c.get("/topics/secret"); code == http.StatusOK || strings.Contains(body, "<table id=\"partitions\">") {
		t.Errorf("viewer opened the page of secret: %d", code)
	}
	if code, body := c.get("/topics/secret/messages"); code == http.StatusOK {
		t.Errorf("viewer browsed secret: %d\n%s", code, body)
	}
	if code, body := c.get("/topics/shared/messages"); code != http.StatusOK {
		t.Errorf("viewer could not browse shared: %d\n%s", code, body)
	}
	tok := c.token("/topics")
	code, _, body := c.post("/topics", form("csrf", tok, "name", "viewer-made"))
	if code != http.StatusForbidden || !strings.Contains(body, "AUTHORIZATION_FAILED") {
		t.Errorf("viewer created a topic, or the refusal does not say why: %d\n%s", code, body)
	}
	code, _, body = c.post("/topics/shared/delete", form("csrf", tok, "confirm", "shared"))
	if code != http.StatusForbidden || !strings.Contains(body, "AUTHORIZATION_FAILED") {
		t.Errorf("viewer deleted shared, or the refusal does not say why: %d\n%s", code, body)
	}
	if strings.Contains(list+body, "viewer-secret") {
		t.Error("a page shows the console's password")
	}

	t.Run("login", func(t *testing.T) { testLogin(t, fmt.Sprintf("127.0.0.1:%d", sasl), b.Addr()) })
}
