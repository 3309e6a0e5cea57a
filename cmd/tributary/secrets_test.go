package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --check-config prints what is set but never a secret: the admin token,
// key passwords, JAAS users, the client properties' password.
func TestCheckConfigHidesSecrets(t *testing.T) {
	dir := t.TempDir()
	broker := filepath.Join(dir, "broker.yaml")
	os.WriteFile(broker, []byte(`listeners: PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094
log.dirs: `+dir+`
admin.token: tok-SECRET-1
ssl.key.password: key-SECRET-2
listener.name.sasl_plaintext.sasl.enabled.mechanisms: PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config: 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="jaas-SECRET-3";'
`), 0o600)
	out, errOut, err := execute(t, newRootCommand(), "broker", "--config", broker, "--check-config")
	if err != nil || !strings.Contains(out, "broker configuration ok") || !strings.Contains(out, "ssl.key.password=(hidden)") {
		t.Fatalf("broker --check-config: %v\n%s%s", err, out, errOut)
	}
	tracker := filepath.Join(dir, "tracker.yaml")
	os.WriteFile(tracker, []byte(`write.key: [wk-SECRET-4]
admin.token: tok-SECRET-1
ssl.key.password: key-SECRET-2
client.property: [sasl.password=cli-SECRET-5]
`), 0o600)
	tout, terrOut, err := execute(t, newRootCommand(), "tracker", "--config", tracker, "--check-config")
	if err != nil || !strings.Contains(tout, "tracker configuration ok") {
		t.Fatalf("tracker --check-config: %v\n%s%s", err, tout, terrOut)
	}
	if all := out + errOut + tout + terrOut; strings.Contains(all, "SECRET") {
		t.Errorf("--check-config shows a secret:\n%s", all)
	}
}
