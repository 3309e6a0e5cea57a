package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// The user commands against a broker with a SCRAM listener: a created user
// logs in with each mechanism it was given, list shows them, the CLI's
// refusals name the bad value, and a deleted user can no longer log in.
func TestUserCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port, saslPort := testbroker.FreePort(t), testbroker.FreePort(t)
	plain, saslAddr := fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", saslPort)
	testbroker.StartConfig(t, testbroker.Config{
		Dir: dir, Port: port,
		Listeners: fmt.Sprintf("PLAINTEXT://%s,SASL_PLAINTEXT://%s", plain, saslAddr),
		Props:     []string{"listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512"},
	})
	run := func(stdin string, args ...string) string {
		t.Helper()
		return mustRunCLI(t, stdin, append(append([]string{"user"}, args...), "--bootstrap", plain)...)
	}
	fail := func(stdin string, want []string, args ...string) {
		t.Helper()
		wantCLIError(t, stdin, want, append(append([]string{"user"}, args...), "--bootstrap", plain)...)
	}
	login := func(m sasl.Mechanism) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(saslAddr), kgo.SASL(m))
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	pwFile := filepath.Join(dir, "alice.pw")
	os.WriteFile(pwFile, []byte("alice, secret=]\n"), 0o600)

	if got := strings.TrimSpace(run("", "list")); got != "no SCRAM users" {
		t.Errorf("list on a new broker: %q", got)
	}
	run("", "create", "alice", "--mechanism", "SCRAM-SHA-256", "--mechanism", "scram-sha-512", "--iterations", "8192", "--password-file", pwFile)
	run("bob-secret\n", "create", "bob", "--password-stdin")
	want := `USER   MECHANISM      ITERATIONS
alice  SCRAM-SHA-256  8192
alice  SCRAM-SHA-512  8192
bob    SCRAM-SHA-512  4096
`
	if got := run("", "list"); got != want {
		t.Errorf("list:\n%s\nwant:\n%s", got, want)
	}
	if got := run("", "list", "bob"); strings.Contains(got, "alice") || !strings.Contains(got, "bob") {
		t.Errorf("list bob:\n%s", got)
	}
	alice := scram.Auth{User: "alice", Pass: "alice, secret=]"}
	bob := scram.Auth{User: "bob", Pass: "bob-secret"}
	for name, m := range map[string]sasl.Mechanism{"alice sha-256": alice.AsSha256Mechanism(), "alice sha-512": alice.AsSha512Mechanism(), "bob sha-512": bob.AsSha512Mechanism()} {
		if err := login(m); err != nil {
			t.Errorf("%s cannot log in: %v", name, err)
		}
	}

	fail("", []string{`--mechanism "SCRAM-SHA-1"`}, "create", "carol", "--mechanism", "SCRAM-SHA-1", "--password-stdin")
	fail("", []string{"iterations 100", "4096 to 16384"}, "create", "carol", "--iterations", "100", "--password-stdin")
	fail("\n", []string{"password is empty"}, "create", "carol", "--password-stdin")
	fail("", []string{"--password-file FILE or --password-stdin"}, "create", "carol")
	fail("", []string{"user carol: no such SCRAM user"}, "list", "carol")
	fail("", []string{"user carol: no such SCRAM user"}, "delete", "carol")

	run("", "delete", "alice", "--mechanism", "SCRAM-SHA-256")
	if err := login(alice.AsSha256Mechanism()); err == nil {
		t.Error("alice logs in with SCRAM-SHA-256 after its deletion")
	}
	if err := login(alice.AsSha512Mechanism()); err != nil {
		t.Errorf("alice's SCRAM-SHA-512 went with SCRAM-SHA-256: %v", err)
	}
	run("", "delete", "alice")
	run("", "delete", "bob")
	if err := login(alice.AsSha512Mechanism()); err == nil {
		t.Error("a deleted user logs in")
	}
	if got := strings.TrimSpace(run("", "list")); got != "no SCRAM users" {
		t.Errorf("list after deletes: %q", got)
	}
}
