package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// run drives a client mechanism (franz-go's own) against a server
// exchange, as SaslAuthenticate round trips would.
func run(t *testing.T, client sasl.Mechanism, server Exchange) error {
	t.Helper()
	sess, msg, err := client.Authenticate(context.Background(), "broker:9092")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		out, err := server.Step(msg)
		if err != nil {
			return err
		}
		done, next, err := sess.Challenge(out)
		if err != nil {
			return err
		}
		if done {
			if !server.Done() {
				t.Fatal("the client is done, the server is not")
			}
			return nil
		}
		msg = next
	}
	t.Fatal("the exchange did not end")
	return nil
}

func TestScramAgainstFranzGo(t *testing.T) {
	t.Parallel()
	creds := map[string]ScramCredential{}
	for _, m := range []ScramMechanism{ScramSHA256, ScramSHA512} {
		salt := []byte("0123456789abcdef")
		creds[m.Name+"/alice"] = m.Credential(m.SaltPassword("alice-secret", salt, 4096), salt, 4096)
	}
	lookup := func(user string, m ScramMechanism) (ScramCredential, bool) {
		c, ok := creds[m.Name+"/"+user]
		return c, ok
	}
	key := []byte("fake-salt-key")
	for _, c := range []struct {
		name   string
		client sasl.Mechanism
		m      ScramMechanism
		ok     bool
	}{
		{"sha256", scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(), ScramSHA256, true},
		{"sha512", scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(), ScramSHA512, true},
		{"wrong password", scram.Auth{User: "alice", Pass: "nope"}.AsSha512Mechanism(), ScramSHA512, false},
		{"unknown user", scram.Auth{User: "mallory", Pass: "x"}.AsSha256Mechanism(), ScramSHA256, false},
		{"authzid of another user", scram.Auth{User: "alice", Pass: "alice-secret", Zid: "admin"}.AsSha256Mechanism(), ScramSHA256, false},
	} {
		err := run(t, c.client, NewScram(c.m, lookup, key))
		if c.ok != (err == nil) {
			t.Errorf("%s: %v", c.name, err)
		}
		var ae *AuthError
		if err != nil && !errors.As(err, &ae) {
			t.Errorf("%s: %v is not an AuthError", c.name, err)
		}
	}
	// An unknown user's salt is stable, so that asking twice does not
	// tell a made-up user from a real one.
	first := func(user string) string {
		out, err := NewScram(ScramSHA256, lookup, key).Step([]byte("n,,n=" + user + ",r=abc"))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(out), ",s=")
		return rest
	}
	if first("mallory") != first("mallory") {
		t.Error("an unknown user gets a different salt each time")
	}
	// As long as a real user's (--add-scram's 24 bytes), with 4096
	// iterations.
	if salt, iter, _ := strings.Cut(first("mallory"), ",i="); len(salt) != 32 || iter != "4096" {
		t.Errorf("an unknown user's salt %q (base64), iterations %s", salt, iter)
	}
}

func TestPlain(t *testing.T) {
	t.Parallel()
	users, err := ParsePlainJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret"
		user_admin="admin-secret" user_alice="al\"ice" user_bob='b"b';`)
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 3 || users["alice"] != `al"ice` || users["bob"] != `b"b` {
		t.Fatalf("users %v", users)
	}
	if err := run(t, plain.Auth{User: "alice", Pass: `al"ice`}.AsMechanism(), NewPlain(users)); err != nil {
		t.Error(err)
	}
	err = run(t, plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism(), NewPlain(users))
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Message != "Authentication failed: Invalid username or password" {
		t.Errorf("wrong password: %v", err)
	}
	for _, bad := range []string{
		`PlainLoginModule required user_a="b"`,
		`PlainLoginModule user_a="b";`,
		`PlainLoginModule required user_a="b;`,
		`PlainLoginModule required username="x";`,
	} {
		if _, err := ParsePlainJAAS(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestPrincipalMappingRules(t *testing.T) {
	t.Parallel()
	m, err := ParseMappingRules(`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=([^,]*),O=(.*)$/$1@$2/, DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Kafka-Client,OU=ServiceUsers,O=Example": "kafka-client",
		"CN=alice,O=Example":                        "alice@Example",
		"CN=bob,C=US":                               "CN=bob,C=US",
	} {
		if got, err := m.Map(dn); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", dn, got, err, want)
		}
	}
	only, _ := ParseMappingRules(`RULE:^CN=(a.*)$/$1/U`)
	if _, err := only.Map("CN=bob"); err == nil {
		t.Error("a name no rule matches mapped")
	}
	for _, bad := range []string{"RULE:abc", "RULE:a/b", "NOPE", "DEFAULT DEFAULT"} {
		if _, err := ParseMappingRules(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// The DN of a client certificate reads as Kafka prints it, most specific
// first.
func TestDN(t *testing.T) {
	t.Parallel()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotAfter: time.Now().Add(time.Hour),
		Subject: pkix.Name{CommonName: "alice", Organization: []string{"Example"}, Country: []string{"US"}}}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	cert, _ := x509.ParseCertificate(der)
	if got := DN(cert); got != "CN=alice,O=Example,C=US" {
		t.Errorf("DN %q", got)
	}
	// Subjects encoded by Java's X500Principal, and what its getName()
	// prints for them (Java 17): two OUs and DCs in their order, DC and
	// UID by name, SERIALNUMBER and EMAILADDRESS as OIDs, a multi-valued
	// RDN, and every special character escaped.
	for raw, want := range map[string]string{
		"MIG+MQswCQYDVQQGEwJGUjEMMAoGA1UECBMDSURGMQ4wDAYDVQQHEwVQYXJpczEQMA4GA1UECRMHTWFpbiBTdDESMBAGCgmSJomT8ixkAQETAmExMRMwEQYKCZImiZPyLGQBGRYDY29tMRcwFQYKCZImiZPyLGQBGRYHZXhhbXBsZTEQMA4GA1UEChMHRXhhbXBsZTENMAsGA1UECxMEZGF0YTEMMAoGA1UECxMDZW5nMQ4wDAYDVQQDEwVhbGljZQ==": "CN=alice,OU=eng,OU=data,O=Example,DC=example,DC=com,UID=a1,STREET=Main St,L=Paris,ST=IDF,C=FR",
		"MGYxFDASBgkqhkiG9w0BCQEWBWFAYi5jMQswCQYDVQQFEwI0MjEOMAwGA1UECgwFI2xlYWQxHDAIBgNVBAsTAXgwEAYKCZImiZPyLGQBARMCdTcxEzARBgNVBAMMCmE9YiNjLCBkK2U=":                                                                                                                         `CN=a\=b\#c\, d\+e,OU=x+UID=u7,O=\#lead,2.5.4.5=#13023432,1.2.840.113549.1.9.1=#16056140622e63`,
	} {
		tmpl.RawSubject, _ = base64.StdEncoding.DecodeString(raw)
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := x509.ParseCertificate(der)
		if got := DN(cert); got != want {
			t.Errorf("DN\n%s, Java prints\n%s", got, want)
		}
	}
}

// A replacement reads as in Java: $1_svc is group 1 then "_svc", not a
// group named "1_svc" as Go's Expand would read it; $12 with one group is
// group 1 then "2"; \$ is a dollar.
func TestMappingReplacementGroups(t *testing.T) {
	t.Parallel()
	m, err := ParseMappingRules(`RULE:^CN=([^,]*),OU=(.*)$/$1_svc-$2$12\$x/`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Map("CN=kafka,OU=eng"); err != nil || got != "kafka_svc-engkafka2$x" {
		t.Errorf("%q %v, want kafka_svc-engkafka2$x", got, err)
	}
}

// FuzzScram feeds arbitrary client messages to both steps of a SCRAM
// exchange and to PLAIN: an error, never a panic, and never a success
// without the password.
func FuzzScram(f *testing.F) {
	salt := []byte("0123456789abcdef")
	cred := ScramSHA256.Credential(ScramSHA256.SaltPassword("pw", salt, 4096), salt, 4096)
	lookup := func(user string, m ScramMechanism) (ScramCredential, bool) { return cred, user == "alice" }
	f.Add([]byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Add([]byte("y,a=alice,n=alice,r=x,ext=1"), []byte("c=eSxhPWFsaWNlLA==,r=,p="))
	f.Add([]byte("p=tls-unique,,n=alice,r=abc"), []byte(""))
	f.Add([]byte("n,,n=al=2Cice,r="), []byte(",p=,p="))
	f.Add([]byte("\x00alice\x00pw"), []byte("n,,n==,r=a"))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		x := NewScram(ScramSHA256, lookup, []byte("k"))
		if _, err := x.Step(first); err == nil {
			if _, err := x.Step(final); err == nil {
				t.Fatalf("authenticated without the password: %q %q", first, final)
			}
		}
		if x.Done() {
			t.Fatal("done after a failure")
		}
		p := NewPlain(Users{"alice": "pw"})
		if _, err := p.Step(first); err == nil && string(first) != "\x00alice\x00pw" && string(first) != "alice\x00alice\x00pw" {
			t.Fatalf("PLAIN accepted %q", first)
		}
	})
}

// FuzzConfigParsers feeds arbitrary JAAS configs and mapping rules, which
// come from operators' files: an error, never a panic, and a rule set that
// parses maps names without panicking.
func FuzzConfigParsers(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b\"c" user_d=e;`, `RULE:^CN=(.*?),OU=x$/$1/L,DEFAULT`)
	f.Add(`x required a="`, `RULE:\/a\/b/c/U, RULE:(/$1/`)
	f.Add(`x optional =;`, `DEFAULT,`)
	f.Fuzz(func(t *testing.T, jaas, rules string) {
		if users, err := ParsePlainJAAS(jaas); err == nil && len(users) == 0 {
			t.Fatal("no users and no error")
		}
		if m, err := ParseMappingRules(rules); err == nil {
			m.Map("CN=alice,O=Example")
			m.Map(jaas)
		}
	})
}

// What a stranger sends before logging in reaches the log only cut short.
func TestAuthFailureReasonIsShort(t *testing.T) {
	t.Parallel()
	user := strings.Repeat("m", 100_000)
	_, err := NewPlain(Users{"alice": "pw"}).Step([]byte("\x00" + user + "\x00pw"))
	var ae *AuthError
	if !errors.As(err, &ae) || len(ae.Reason) > 200 {
		t.Fatalf("reason of %d bytes: %.300v", len(ae.Reason), err)
	}
}
