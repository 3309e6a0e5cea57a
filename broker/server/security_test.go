package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/internal/devcerts"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// securedBroker is one broker with a listener of each security protocol:
// PLAINTEXT (for setup), SSL asking for client certificates, SASL_SSL with
// PLAIN and both SCRAMs, and SASL_PLAINTEXT with SCRAM-SHA-256 only.
type securedBroker struct {
	b                              *testbroker.Broker
	plain, ssl, saslSSL, saslPlain string
	ca                             *devcerts.CA
	caPool                         *x509.CertPool
	keystore                       string
	client                         tls.Certificate
	// clientKeystore is the client certificate's key and chain, as
	// Kafka's PEM keystores read it; caFile the CA's certificate.
	clientKeystore, caFile string
}

func startSecured(t *testing.T) *securedBroker {
	t.Helper()
	dir := t.TempDir()
	ca, err := devcerts.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Server("broker", []string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := ca.Client("alice", "Example", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keystore, truststore := filepath.Join(dir, "broker.pem"), filepath.Join(dir, "ca.pem")
	os.WriteFile(keystore, srv.Keystore, 0o600)
	os.WriteFile(truststore, ca.PEM, 0o644)
	ports := [4]int{}
	for i := range ports {
		ports[i] = testbroker.FreePort(t)
	}
	s := &securedBroker{ca: ca, caPool: x509.NewCertPool(), keystore: keystore,
		plain: fmt.Sprintf("127.0.0.1:%d", ports[0]), ssl: fmt.Sprintf("127.0.0.1:%d", ports[1]),
		saslSSL: fmt.Sprintf("127.0.0.1:%d", ports[2]), saslPlain: fmt.Sprintf("127.0.0.1:%d", ports[3])}
	s.caPool.AddCert(ca.Cert)
	s.caFile, s.clientKeystore = truststore, filepath.Join(dir, "client.pem")
	os.WriteFile(s.clientKeystore, cli.Keystore, 0o600)
	s.caFile, s.clientKeystore = truststore, filepath.Join(dir, "client.pem")
	os.WriteFile(s.clientKeystore, cli.Keystore, 0o600)
	s.client, err = tls.X509KeyPair(cli.CertPEM, cli.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	bootstrapUsers := filepath.Join(dir, "bootstrap-users")
	os.WriteFile(bootstrapUsers, []byte("# erin\nSCRAM-SHA-512=[name=erin,password=erin-secret,iterations=8192]\n"), 0o600)
	s.b = testbroker.StartConfig(t, testbroker.Config{
		Dir: dir, Port: ports[0],
		Listeners: fmt.Sprintf("PLAINTEXT://%s,SSL://%s,SASL_SSL://%s,SASL_PLAINTEXT://%s", s.plain, s.ssl, s.saslSSL, s.saslPlain),
		Props: []string{
			"ssl.keystore.location=" + keystore,
			"ssl.truststore.location=" + truststore,
			"listener.name.ssl.ssl.client.auth=required",
			"listener.name.ssl.ssl.principal.mapping.rules=RULE:^CN=([^,]*),O=Example$/$1/",
			"listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
			`listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_carol="carol-secret";`,
			"listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-256",
			"sasl.server.max.receive.size=1024",
			// Groups of the client tests form at once.
			"group.initial.rebalance.delay.ms=0",
		},
		// erin exists from the first start (KIP-900), with both
		// mechanisms, one of them from a file (--add-scram @FILE).
		Args: []string{"--add-scram", "SCRAM-SHA-256=[name=erin,password=erin-secret]", "--add-scram", "@" + bootstrapUsers},
	})
	return s
}

func (s *securedBroker) tlsConfig() *tls.Config {
	return &tls.Config{RootCAs: s.caPool, ServerName: "127.0.0.1"}
}

// roundTrip produces one record and reads it back through a client with
// opts, which proves the connection authenticated and is served.
func roundTrip(t *testing.T, addr, topic string, opts ...kgo.Opt) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RetryTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v-" + topic)}).FirstErr(); err != nil {
		return err
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return err
		}
		for _, r := range fs.Records() {
			if string(r.Value) == "v-"+topic {
				return nil
			}
		}
	}
}

// TestSecurityListeners runs real clients (franz-go) against each listener
// of one broker: what authenticates, what is refused, and how quickly.
func TestSecurityListeners(t *testing.T) {
	t.Parallel()
	start := time.Now()
	s := startSecured(t)
	t.Logf("broker started after %v", time.Since(start))
	ctx := context.Background()

	// SCRAM users are created over the PLAINTEXT listener, as an operator
	// would before closing it: alice with both mechanisms.
	admin, err := kgo.NewClient(kgo.SeedBrokers(s.plain))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	alter, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"},
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := alter["alice"].Err; err != nil {
		t.Fatalf("alice: %v", err)
	}
	// franz-go refuses too few iterations itself; the broker must too.
	bob := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	bob.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "bob", Mechanism: 1, Iterations: 100, Salt: []byte("s"), SaltedPassword: []byte("p")}}
	if resp, err := bob.RequestWith(ctx, admin); err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.UnacceptableCredential.Code {
		t.Errorf("bob with 100 iterations: %+v %v, want UNACCEPTABLE_CREDENTIAL", resp, err)
	}
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := described["alice"]; len(d.CredInfos) != 2 || len(described) != 2 || len(described["erin"].CredInfos) != 2 {
		t.Errorf("described %+v, want alice and erin (--add-scram) with two mechanisms each", described)
	}
	if d, _ := adm.DescribeUserSCRAMs(ctx, "nobody"); !errors.Is(d["nobody"].Err, kerr.ResourceNotFound) {
		t.Errorf("describing an unknown user: %+v", d)
	}

	t.Run("authenticated", func(t *testing.T) {
		for _, c := range []struct {
			name string
			addr string
			opts []kgo.Opt
		}{
			{"scram-sha-256 over TLS", s.saslSSL, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig()), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())}},
			{"scram-sha-512 over TLS", s.saslSSL, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig()), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())}},
			{"plain over TLS", s.saslSSL, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig()), kgo.SASL(plain.Auth{User: "carol", Pass: "carol-secret"}.AsMechanism())}},
			{"bootstrap user", s.saslSSL, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig()), kgo.SASL(scram.Auth{User: "erin", Pass: "erin-secret"}.AsSha512Mechanism())}},
			{"scram-sha-256 without TLS", s.saslPlain, []kgo.Opt{kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())}},
			{"client certificate", s.ssl, []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: s.caPool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{s.client}})}},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				topic := strings.NewReplacer(" ", "-").Replace(c.name)
				if err := roundTrip(t, c.addr, topic, c.opts...); err != nil {
					t.Fatal(err)
				}
			})
		}
	})

	// Fetch answers larger than the copy threshold go out with
	// sendfile(2) on PLAINTEXT; under TLS they must be copied through the
	// TLS stream instead, byte-exact.
	t.Run("large fetch over TLS", func(t *testing.T) {
		opts := []kgo.Opt{kgo.SeedBrokers(s.saslSSL), kgo.DialTLSConfig(s.tlsConfig()),
			kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		p, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.ProducerBatchCompression(kgo.NoCompression()))...)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		const n = 2000
		value := func(i int) []byte { return []byte(fmt.Sprintf("%04d-%s", i, strings.Repeat("x", 1020))) }
		var rs []*kgo.Record
		for i := range n {
			rs = append(rs, &kgo.Record{Topic: "tls-large", Value: value(i)})
		}
		if err := p.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		c, err := kgo.NewClient(append(opts, kgo.ConsumeTopics("tls-large"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMinBytes(1<<20), kgo.FetchMaxWait(500*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := 0
		for got < n {
			fs := c.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("after %d records: %v", got, err)
			}
			for _, r := range fs.Records() {
				if !bytes.Equal(r.Value, value(int(r.Offset))) {
					t.Fatalf("record %d differs", r.Offset)
				}
				got++
			}
		}
	})

	// Each refusal is the client's usual error, quickly: no client waits
	// for a timeout.
	t.Run("refused", func(t *testing.T) {
		otherCA, _ := devcerts.NewCA("other", time.Hour)
		stranger, _ := otherCA.Client("alice", "Example", time.Hour)
		strangerCert, _ := tls.X509KeyPair(stranger.CertPEM, stranger.KeyPEM)
		for _, c := range []struct {
			name string
			addr string
			opts []kgo.Opt
			want func(error) bool
		}{
			{"wrong scram password", s.saslSSL, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig()), kgo.SASL(scram.Auth{User: "alice", Pass: "nope"}.AsSha512Mechanism())},
				func(err error) bool { return errors.Is(err, kerr.SaslAuthenticationFailed) }},
			{"unknown scram user", s.saslSSL, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig()), kgo.SASL(scram.Auth{User: "mallory", Pass: "x"}.AsSha256Mechanism())},
				func(err error) bool { return errors.Is(err, kerr.SaslAuthenticationFailed) }},
			{"wrong plain password", s.saslSSL, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig()), kgo.SASL(plain.Auth{User: "carol", Pass: "nope"}.AsMechanism())},
				func(err error) bool { return errors.Is(err, kerr.SaslAuthenticationFailed) }},
			{"mechanism not enabled", s.saslPlain, []kgo.Opt{kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())},
				func(err error) bool { return errors.Is(err, kerr.UnsupportedSaslMechanism) }},
			{"sasl on a plaintext listener", s.plain, []kgo.Opt{kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())},
				func(err error) bool { return errors.Is(err, kerr.UnsupportedSaslMechanism) }},
			{"untrusted broker certificate", s.saslSSL, []kgo.Opt{kgo.DialTLSConfig(&tls.Config{ServerName: "127.0.0.1"}), kgo.SASL(plain.Auth{User: "carol", Pass: "carol-secret"}.AsMechanism())},
				func(err error) bool { var ue x509.UnknownAuthorityError; return errors.As(err, &ue) }},
			{"no client certificate", s.ssl, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig())},
				func(err error) bool { return err != nil }},
			{"client certificate of another CA", s.ssl, []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: s.caPool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{strangerCert}})},
				func(err error) bool { return err != nil }},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				began := time.Now()
				cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addr), kgo.RequestRetries(0)}, c.opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				// A refusal that waited for the deadline would take all
				// of it; the bound below is half, with room for a loaded
				// machine.
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				_, err = kadm.NewClient(cl).ListTopics(ctx)
				if !c.want(err) {
					t.Fatalf("error %v", err)
				}
				if took := time.Since(began); took > 30*time.Second {
					t.Errorf("refused after %v", took)
				} else if errors.Is(err, kerr.SaslAuthenticationFailed) && took < 100*time.Millisecond {
					t.Errorf("a wrong password refused after %v, before connection.failed.authentication.delay.ms=100", took)
				}
			})
		}
	})

	// What a client gets when it speaks the wrong protocol to a SASL
	// listener: the connection closes at its first request, or its first
	// oversized frame, and the log names the listener.
	t.Run("unauthenticated connections", func(t *testing.T) {
		nc, err := net.Dial("tcp", s.saslPlain)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		// A Metadata v1 request with no topics before any SASL.
		req := []byte{0, 3, 0, 1, 0, 0, 0, 7, 0, 1, 'x', 0, 0, 0, 0}
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(req)))
		nc.Write(append(frame, req...))
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := nc.Read(make([]byte, 16)); !errors.Is(err, io.EOF) {
			t.Errorf("read %d bytes, %v; want the connection closed", n, err)
		}
		waitLog(t, s.b, "Metadata before SASL authentication on listener SASL_PLAINTEXT")
		nc2, err := net.Dial("tcp", s.saslPlain)
		if err != nil {
			t.Fatal(err)
		}
		defer nc2.Close()
		nc2.Write(binary.BigEndian.AppendUint32(nil, 2048))
		nc2.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := nc2.Read(make([]byte, 16)); !errors.Is(err, io.EOF) {
			t.Errorf("a 2 KiB frame before authentication: read %d bytes, %v; want the connection closed", n, err)
		}
	})

	// A new certificate written over the keystore is served to the next
	// connections without a restart.
	t.Run("certificate reload", func(t *testing.T) {
		next, err := s.ca.Server("broker-renewed", []string{"127.0.0.1"}, 2*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tmp := s.keystore + ".tmp"
		os.WriteFile(tmp, next.Keystore, 0o600)
		if err := os.Rename(tmp, s.keystore); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			tc, err := tls.Dial("tcp", s.saslSSL, s.tlsConfig())
			if err != nil {
				t.Fatal(err)
			}
			cn := tc.ConnectionState().PeerCertificates[0].Subject.CommonName
			tc.Close()
			if cn == "broker-renewed" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("still served %s 10 s after the keystore changed", cn)
			}
			time.Sleep(100 * time.Millisecond)
		}
		waitLog(t, s.b, "reloaded TLS certificate")
	})
	// The CLI takes Kafka's client properties: -X, or a --command-config
	// file as Kafka's tools take it.
	t.Run("cli", func(t *testing.T) {
		dir := t.TempDir()
		ca := filepath.Join(dir, "ca.pem")
		os.WriteFile(ca, s.ca.PEM, 0o644)
		props := filepath.Join(dir, "client.properties")
		os.WriteFile(props, []byte("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
			"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n  username=\"alice\" password=\"alice-secret\";\n"+
			"ssl.truststore.type=PEM\nssl.truststore.location="+ca+"\n"), 0o644)
		for _, c := range []struct {
			name string
			args []string
			ok   bool
		}{
			{"command-config", []string{"--command-config", props}, true},
			{"-X", []string{"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=PLAIN", "-X", "sasl.username=carol", "-X", "sasl.password=carol-secret", "-X", "ssl.ca.location=" + ca}, true},
			{"wrong password", []string{"--command-config", props, "-X", "sasl.username=alice", "-X", "sasl.jaas.config=", "-X", "sasl.password=nope"}, false},
		} {
			t.Run(c.name, func(t *testing.T) {
				args := append([]string{"topic", "create", "cli-" + strings.ReplaceAll(c.name, " ", "-"), "-b", s.saslSSL}, c.args...)
				out, err := exec.Command(testbroker.Binary(t), args...).CombinedOutput()
				if c.ok != (err == nil) {
					t.Fatalf("%v: %v\n%s", args, err, out)
				}
				if !c.ok && !strings.Contains(string(out), "SASL") {
					t.Errorf("the refusal does not say SASL:\n%s", out)
				}
				if !c.ok {
					return
				}
				// describe asks for topic ids with a request of its own,
				// which must go through TLS and SASL too.
				args[1] = "describe"
				out, err = exec.Command(testbroker.Binary(t), args...).CombinedOutput()
				if err != nil || !regexp.MustCompile(`(?m)^ID +[A-Za-z0-9_-]{22}$`).Match(out) {
					t.Errorf("%v: %v; want the topic's id:\n%s", args, err, out)
				}
			})
		}
	})
	t.Run("clients", func(t *testing.T) {
		t.Run("java", func(t *testing.T) { t.Parallel(); javaSecurity(t, s) })
		t.Run("librdkafka", func(t *testing.T) { t.Parallel(); rdkafkaSecurity(t, s) })
		t.Run("sarama", func(t *testing.T) { t.Parallel(); saramaSecurity(t, s) })
	})

	// Credentials are metadata: a restarted broker still has them, and its
	// listeners come back secured.
	// A bootstrap credential deleted stays deleted: --add-scram, given
	// again at the restart, is applied once in the cluster's life.
	t.Run("restart", func(t *testing.T) {
		adm, err := kgo.NewClient(kgo.SeedBrokers(s.plain))
		if err != nil {
			t.Fatal(err)
		}
		res, err := kadm.NewClient(adm).AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "erin", Mechanism: kadm.ScramSha256}}, nil)
		adm.Close()
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
		s.b.Stop()
		s.b.Restart()
		if err := roundTrip(t, s.saslSSL, "after-restart", kgo.DialTLSConfig(s.tlsConfig()),
			kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())); err != nil {
			t.Fatal(err)
		}
		if err := roundTrip(t, s.saslSSL, "after-restart", kgo.DialTLSConfig(s.tlsConfig()),
			kgo.SASL(scram.Auth{User: "erin", Pass: "erin-secret"}.AsSha512Mechanism())); err != nil {
			t.Fatalf("erin's SCRAM-SHA-512 bootstrap credential: %v", err)
		}
		// The bootstrap users are applied by a goroutine after the
		// start: give it the time it takes to be sure it did nothing.
		waitLog(t, s.b, "bootstrap SCRAM users")
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.saslSSL), kgo.RequestRetries(0), kgo.DialTLSConfig(s.tlsConfig()),
			kgo.SASL(scram.Auth{User: "erin", Pass: "erin-secret"}.AsSha256Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if _, err = kadm.NewClient(cl).ListTopics(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("erin's deleted SCRAM-SHA-256 credential after a restart with --add-scram: %v", err)
		}
	})
	t.Logf("took %v", time.Since(start))
}

// waitLog waits for a line in the broker's log, which reaches the test
// after the event it reports.
func waitLog(t *testing.T, b *testbroker.Broker, line string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(b.Log(), line); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the broker did not log %q", line)
			return
		}
	}
}

var _ sasl.Mechanism = plain.Auth{}.AsMechanism()
