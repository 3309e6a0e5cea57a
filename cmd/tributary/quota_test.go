package main

import (
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// The quota commands against a real broker: what set stores, list shows
// (filtered, strict), delete removes, and the broker's refusals, reported
// with Kafka's messages.
func TestQuotaCommands(t *testing.T) {
	t.Parallel()
	addr := testbroker.Start(t).Addr()
	run := func(args ...string) string {
		t.Helper()
		return mustRunCLI(t, "", append(append([]string{"quota"}, args...), "--bootstrap", addr)...)
	}
	fail := func(want []string, args ...string) {
		t.Helper()
		wantCLIError(t, "", want, append(append([]string{"quota"}, args...), "--bootstrap", addr)...)
	}
	if got := run("list"); strings.TrimSpace(got) != "no quotas" {
		t.Errorf("list on a new broker: %q", got)
	}
	run("set", "--user", "alice", "producer_byte_rate=1048576", "consumer_byte_rate=2097152")
	run("set", "--user", "alice", "--client-id", "app", "request_percentage=12.5")
	run("set", "--default-client-id", "producer_byte_rate=10485760")
	run("set", "--ip", "10.0.0.7", "connection_creation_rate=20")
	run("set", "--dry-run", "--user", "bob", "producer_byte_rate=5")

	want := `ENTITY                     QUOTA                     VALUE
client-id=<default>        producer_byte_rate        10485760
ip=10.0.0.7                connection_creation_rate  20
user=alice                 consumer_byte_rate        2097152
user=alice                 producer_byte_rate        1048576
user=alice, client-id=app  request_percentage        12.5
`
	if got := run("list"); got != want {
		t.Errorf("list:\n%s\nwant:\n%s", got, want)
	}
	if got := run("list", "--user", "alice", "--strict"); strings.Count(got, "user=alice") != 2 || strings.Contains(got, "client-id=app") {
		t.Errorf("list --user alice --strict:\n%s", got)
	}
	if got := run("list", "--user", "alice"); !strings.Contains(got, "client-id=app") {
		t.Errorf("list --user alice leaves out alice's client quotas:\n%s", got)
	}
	fail([]string{"INVALID_REQUEST", "Invalid configuration key bogus_rate"}, "set", "--user", "bob", "bogus_rate=1")
	fail([]string{"INVALID_REQUEST", "Quota producer_byte_rate must be greater than 0"}, "set", "--user", "bob", "producer_byte_rate=-5")
	fail([]string{"INVALID_REQUEST", "Invalid configuration key producer_byte_rate"}, "set", "--ip", "10.0.0.7", "producer_byte_rate=5")
	fail([]string{"--user and --default-user"}, "set", "--user", "a", "--default-user", "producer_byte_rate=5")
	fail([]string{"name the entity"}, "set", "producer_byte_rate=5")
	fail([]string{"user=bob has no quotas"}, "delete", "--user", "bob")

	run("delete", "--user", "alice", "producer_byte_rate")
	run("delete", "--user", "alice", "--client-id", "app")
	run("delete", "--default-client-id")
	run("delete", "--ip", "10.0.0.7")
	want = `ENTITY      QUOTA               VALUE
user=alice  consumer_byte_rate  2097152
`
	if got := run("list"); got != want {
		t.Errorf("list after deletes:\n%s\nwant:\n%s", got, want)
	}
}
