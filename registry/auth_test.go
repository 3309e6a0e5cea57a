package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/formats/srclient"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestSecuredRegistry: the registry inside a broker whose authorizer
// lets only User:registry at _schemas, so the registry works only as a
// SASL/SCRAM client of the broker (schema.registry.kafkastore.*); and
// basic auth on its API with the broker's users: a SCRAM credential and
// a PLAIN user of the SASL listener. Confluent's Node client and
// franz-go's sr, given the credentials, do their whole round trip; no
// credentials or a wrong password get Confluent's 401. Under the broker's
// authorizer a user may read but writes need WRITE on _schemas (or ALTER
// on the cluster): bob, with no ACL, gets 403 (40301); alice, granted
// WRITE on _schemas, registers. Repeated failed logins get 429.
func TestSecuredRegistry(t *testing.T) {
	t.Parallel()
	plainPort, saslPort := testbroker.FreePort(t), testbroker.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", testbroker.FreePort(t))
	testbroker.StartConfig(t, testbroker.Config{
		Dir: t.TempDir(), Port: plainPort,
		Listeners: fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d", plainPort, saslPort),
		Props: []string{
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users=User:registry",
			"listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-256,PLAIN",
			`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="bob-secret";`,
			"schema.registry.listeners=" + url,
			"schema.registry.authentication.method=BASIC",
			"schema.registry.kafkastore.security.protocol=SASL_PLAINTEXT",
			"schema.registry.kafkastore.sasl.mechanism=SCRAM-SHA-256",
			`schema.registry.kafkastore.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="registry" password="registry-secret";`,
		},
		Args: []string{"--add-scram", "SCRAM-SHA-256=[name=registry,password=registry-secret]"},
	})
	get := func(user, pass string) (int, map[string]any, http.Header) {
		req, _ := http.NewRequest("GET", url+"/subjects", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, nil
		}
		defer res.Body.Close()
		var body map[string]any
		json.NewDecoder(res.Body).Decode(&body)
		return res.StatusCode, body, res.Header
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if code, _, _ := get("registry", "registry-secret"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			code, body, _ := get("registry", "registry-secret")
			t.Fatalf("registry not ready through its SASL login: %d %v", code, body)
		}
	}
	for _, c := range [][2]string{{"", ""}, {"registry", "wrong"}, {"alice", "registry-secret"}, {"nobody", "x"}} {
		code, body, h := get(c[0], c[1])
		if code != 401 || body["error_code"] != 401.0 || h.Get("WWW-Authenticate") == "" {
			t.Errorf("user %q password %q: %d %v %v, want 401 with a challenge", c[0], c[1], code, body, h)
		}
	}
	if code, _, _ := get("alice", "alice-secret"); code != 200 {
		t.Errorf("PLAIN user alice: %d, want 200", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Writes go through the broker's authorizer.
	admin, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", saslPort)),
		kgo.SASL(scram.Auth{User: "registry", Pass: "registry-secret"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	grant := kadm.NewACLs().Allow("User:alice").Topics("_schemas").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := kadm.NewClient(admin).CreateACLs(ctx, grant); err != nil || res[0].Err != nil {
		t.Fatalf("grant alice WRITE on _schemas: %v %v", err, res)
	}
	register := func(user, pass, subject string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", url+"/subjects/"+subject+"/versions", strings.NewReader(`{"schema":"\"string\""}`))
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		req.SetBasicAuth(user, pass)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer res.Body.Close()
		var body map[string]any
		json.NewDecoder(res.Body).Decode(&body)
		return res.StatusCode, body
	}
	if code, body, _ := get("bob", "bob-secret"); code != 200 {
		t.Errorf("bob reads: %d %v, want 200", code, body)
	}
	if code, body := register("bob", "bob-secret", "bob-value"); code != 403 || body["error_code"] != 40301.0 || !strings.Contains(fmt.Sprint(body["message"]), "User:bob") {
		t.Errorf("bob registers without an ACL: %d %v, want 403 with 40301 naming User:bob", code, body)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body := register("alice", "alice-secret", "alice-value")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice registers with WRITE on _schemas: %d %v, want 200", code, body)
		}
	}

	cl, err := sr.NewClient(sr.URLs(url), sr.BasicAuth("registry", "registry-secret"))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.CreateSchema(ctx, "secured-value", record(`{"name":"a","type":"string"}`))
	if err != nil || ss.Version != 1 {
		t.Fatalf("register with basic auth: %v %v", ss, err)
	}
	// Tributary's own clients (the tracker's and the loader's srclient,
	// `tributary schema` through sr) take the credentials in the URL.
	withUser := strings.Replace(url, "http://", "http://registry:registry-secret@", 1)
	if s, err := srclient.New(withUser).Latest(ctx, "secured-value"); err != nil || s.Version != 1 {
		t.Errorf("srclient with user:password@ in the URL: %+v %v", s, err)
	}
	if out, err := exec.Command(testbroker.Binary(t), "schema", "get", "secured-value", "--registry", withUser).CombinedOutput(); err != nil {
		t.Errorf("tributary schema get with user:password@ in --registry: %v\n%s", err, out)
	}
	anon, _ := sr.NewClient(sr.URLs(url))
	if _, err := anon.CreateSchema(ctx, "secured-value", record(`{"name":"b","type":"string"}`)); err == nil {
		t.Fatal("registered without credentials")
	}

	// `tributary registry` on its own has no user store: it checks a
	// password by a SASL login to the cluster with it.
	url2 := fmt.Sprintf("http://127.0.0.1:%d", testbroker.FreePort(t))
	cmd := exec.Command(testbroker.Binary(t), "registry", "-b", fmt.Sprintf("127.0.0.1:%d", saslPort), "--listen", strings.TrimPrefix(url2, "http://"),
		"--authentication-method", "BASIC", "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=SCRAM-SHA-256",
		"-X", "sasl.username=registry", "-X", "sasl.password=registry-secret")
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("tributary registry:\n%s", logs.String())
		}
	}()
	get2 := func(user, pass string) int {
		req, _ := http.NewRequest("GET", url2+"/subjects/secured-value/versions", nil)
		req.SetBasicAuth(user, pass)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	for deadline := time.Now().Add(30 * time.Second); get2("registry", "registry-secret") != 200; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("tributary registry: no 200 for the SCRAM user: %d", get2("registry", "registry-secret"))
		}
	}
	if code := get2("registry", "wrong"); code != 401 {
		t.Errorf("tributary registry, wrong password: %d, want 401", code)
	}

	// Confluent's Node client, whose whole round trip runs here (with
	// basic auth) rather than against a second, open broker.
	nodeClient(t, url, "alice:alice-secret")

	// A guesser is slowed down: after maxFailures failed checks from one
	// address, 429 without a check.
	throttled := false
	for i := 0; i < 40 && !throttled; i++ {
		code, body, h := get("bob", fmt.Sprintf("guess-%d", i))
		throttled = code == 429 && body["error_code"] == 42901.0 && h.Get("Retry-After") != ""
	}
	if !throttled {
		t.Error("40 wrong passwords from one address: never 429 (42901) with Retry-After")
	}
}
