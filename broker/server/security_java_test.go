package server_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// javaSecurity runs Kafka's own tools (the Java client 4.4) against the
// secured broker: kafka-configs creates a SCRAM-SHA-512 user, the console
// producer and a consumer group use it over SASL_SSL, a client certificate
// is accepted over SSL, and a wrong password is Kafka's usual
// SaslAuthenticationException, at once.
func javaSecurity(t *testing.T, s *securedBroker) {
	k := testbroker.FindJDK(t)
	cp := k.Classpath()
	dir := t.TempDir()
	run := func(t *testing.T, stdin string, class string, args ...string) (string, string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		began := time.Now()
		cmd := exec.CommandContext(ctx, k.Java, append(append(k.JVMArgs(cp), class), args...)...)
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		t.Logf("%s %s: %v (err %v)", class[strings.LastIndex(class, ".")+1:], args[len(args)-1], time.Since(began).Round(time.Millisecond), err)
		return out.String(), errb.String(), err
	}
	props := func(name string, lines ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	scram := func(pass string) string {
		return props("scram-"+pass+".properties",
			"security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="dave" password="`+pass+`";`,
			"ssl.truststore.type=PEM", "ssl.truststore.location="+s.caFile)
	}

	out, stderr, err := run(t, "", "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", s.plain,
		"--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=dave-secret]", "--entity-type", "users", "--entity-name", "dave")
	if err != nil || !strings.Contains(out, "Completed updating config for user dave") {
		t.Fatalf("kafka-configs --add-config SCRAM-SHA-512: %v\n%s\n%s", err, out, stderr)
	}

	good := scram("dave-secret")
	t.Run("sasl_ssl scram-sha-512 producer and group", func(t *testing.T) {
		t.Parallel()
		const topic = "java-scram"
		if _, stderr, err := run(t, "", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", s.saslSSL, "--command-config", good,
			"--create", "--topic", topic, "--partitions", "2"); err != nil {
			t.Fatalf("kafka-topics --create over SASL_SSL: %v\n%s", err, stderr)
		}
		if _, stderr, err := run(t, "a\nb\nc\n", "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", s.saslSSL,
			"--command-config", good, "--topic", topic); err != nil {
			t.Fatalf("console producer: %v\n%s", err, stderr)
		}
		out, stderr, err := run(t, "", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", s.saslSSL,
			"--command-config", good, "--topic", topic, "--group", "java-group", "--from-beginning", "--max-messages", "3", "--timeout-ms", "30000")
		if err != nil {
			t.Fatalf("console consumer: %v\n%s", err, stderr)
		}
		if got := strings.Fields(out); len(got) != 3 {
			t.Errorf("consumed %q, want a, b and c", got)
		}
	})
	t.Run("ssl client certificate", func(t *testing.T) {
		t.Parallel()
		mtls := props("mtls.properties", "security.protocol=SSL", "ssl.truststore.type=PEM", "ssl.truststore.location="+s.caFile,
			"ssl.keystore.type=PEM", "ssl.keystore.location="+s.clientKeystore)
		if _, stderr, err := run(t, "", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", s.ssl, "--command-config", mtls,
			"--create", "--topic", "java-mtls"); err != nil {
			t.Fatalf("kafka-topics over SSL with a client certificate: %v\n%s", err, stderr)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		began := time.Now()
		_, stderr, err := run(t, "", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", s.saslSSL, "--command-config", scram("wrong"), "--list")
		if err == nil || !strings.Contains(stderr, "SaslAuthenticationException") || !strings.Contains(stderr, "invalid credentials") {
			t.Errorf("kafka-topics with a wrong password: %v\n%s", err, stderr)
		}
		if took := time.Since(began); took > 30*time.Second {
			t.Errorf("refused after %v", took)
		}
	})
}

// rdkafkaSecurity runs librdkafka (Python confluent-kafka) over SASL_SSL
// with PLAIN and both SCRAMs, and with wrong passwords
// (testdata/security_rdkafka.py).
func rdkafkaSecurity(t *testing.T, s *securedBroker) {
	py := testbroker.Python(t, "confluent_kafka")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	script := filepath.Join(testbroker.RepoRoot(), "broker", "server", "testdata", "security_rdkafka.py")
	began := time.Now()
	out, err := exec.CommandContext(ctx, py, script, s.saslSSL, s.caFile).CombinedOutput()
	t.Logf("security_rdkafka.py: %v\n%s", time.Since(began).Round(time.Millisecond), out)
	if err != nil || !strings.Contains(string(out), "SECURITY OK") {
		t.Fatalf("librdkafka: %v", err)
	}
}
