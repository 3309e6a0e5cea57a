package kafkacli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Java client's properties file, continuation lines included, gives the
// same credentials as librdkafka's names given with -X; what cannot work
// is refused before connecting.
func TestClientProps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "client.properties")
	os.WriteFile(file, []byte(`# a Java client's file
security.protocol=SASL_PLAINTEXT
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="alice" \
    password="s3cr=t";
request.timeout.ms: 30000
`), 0o600)
	p, err := LoadClientProps(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	mech, user, pass, err := p.credentials()
	if mech != "SCRAM-SHA-512" || user != "alice" || pass != "s3cr=t" || err != nil {
		t.Fatalf("credentials %q %q %q %v", mech, user, pass, err)
	}
	if tc, _ := p.TLSConfig(); tc != nil {
		t.Error("SASL_PLAINTEXT has a TLS config")
	}
	x, err := LoadClientProps(file, []string{"sasl.jaas.config=", "sasl.mechanisms=PLAIN", "sasl.username=bob", "sasl.password=pw", "security.protocol=sasl_ssl"})
	if err != nil {
		t.Fatal(err)
	}
	if mech, user, _, _ := x.credentials(); mech != "SCRAM-SHA-512" || user != "bob" {
		// sasl.mechanism from the file wins over librdkafka's plural.
		t.Errorf("-X over the file: %s %s", mech, user)
	}
	if tc, err := x.TLSConfig(); tc == nil || err != nil {
		t.Errorf("SASL_SSL: %v %v", tc, err)
	}
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"security.protocol=TLS"}, "want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"},
		{[]string{"security.protocol=SASL_SSL"}, "needs sasl.mechanism"},
		{[]string{"security.protocol=SASL_SSL", "sasl.mechanism=GSSAPI"}, "sasl.mechanism=GSSAPI"},
		{[]string{"security.protocol=SASL_SSL", "sasl.mechanism=PLAIN"}, "needs a user"},
		{[]string{"security.protocol=SSL", "ssl.truststore.location=/nonexistent"}, "ssl.truststore.location"},
		{[]string{"security.protocol=SSL", "ssl.keystore.type=JKS"}, "only PEM"},
		{[]string{"novalue"}, "want key=value"},
	} {
		p, err := LoadClientProps("", c.sets)
		if err == nil {
			err = p.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.sets, err, c.want)
		}
	}
}

// A load worker started by the jobs scheduler gets the scheduler's client
// properties through its environment, whole (a JAAS value with spaces and
// quotes included).
func TestChildEnvCarriesProps(t *testing.T) {
	want := ClientProps{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
		"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="etl" password="p w\"d";`}
	if err := SetClientProps(want); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { SetClientProps(nil) })
	env := ChildEnv()
	if len(env) != 1 || !strings.HasPrefix(env[0], ChildEnvVar+"=") {
		t.Fatalf("ChildEnv: %q", env)
	}
	t.Setenv(ChildEnvVar, strings.TrimPrefix(env[0], ChildEnvVar+"="))
	got, err := PropsFromEnv()
	if err != nil || len(got) != len(want) {
		t.Fatalf("PropsFromEnv: %v, %v", got, err)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
}
