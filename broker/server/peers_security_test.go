package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/internal/devcerts"
	"github.com/tributary-io/tributary/internal/kwire"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// securedPeerProps secure a node's every listener: the client and
// inter-broker listener SASL_SSL with SCRAM-SHA-512 (this node logs in to
// its peers as "broker" with brokerPass), the controller listener SASL_SSL
// with PLAIN (users "controller" with ctlPass as its own login).
func securedPeerProps(keystore, truststore, ctlPass, brokerPass string) []string {
	return []string{
		"listener.security.protocol.map=CONTROLLER:SASL_SSL,SASL_SSL:SASL_SSL",
		"inter.broker.listener.name=SASL_SSL",
		"ssl.keystore.location=" + keystore,
		"ssl.truststore.location=" + truststore,
		"listener.name.controller.sasl.enabled.mechanisms=PLAIN",
		"sasl.mechanism.controller.protocol=PLAIN",
		`listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" password="` + ctlPass + `" user_controller="ctl-secret";`,
		"listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
		`listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="` + brokerPass + `";`,
	}
}

// TestSecuredPeers: three nodes with TLS on every listener, PLAIN between
// the controllers and SCRAM-SHA-512 between the brokers (its user created
// at the first start with --add-scram, KIP-900). Under an acks=all
// producer the partition's leader is killed with kill -9 and restarted
// (twice; six times with TRIBUTARY_TEST_LONG), at once or after the
// cluster failed over without it: every restart logs in again and is
// replicated back into the ISR over SCRAM, and no acknowledged record is
// lost. A
// fourth node with a wrong password cannot join and exits saying why,
// while the cluster keeps acknowledging; the controller listener closes
// every request, Raft included, from a connection that did not log in.
func TestSecuredPeers(t *testing.T) {
	t.Parallel()
	testbroker.Binary(t) // built before the clock starts
	start := time.Now()
	dir := t.TempDir()
	ca, err := devcerts.NewCA("peers CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Server("broker", []string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keystore, truststore := filepath.Join(dir, "broker.pem"), filepath.Join(dir, "ca.pem")
	os.WriteFile(keystore, leaf.Keystore, 0o600)
	os.WriteFile(truststore, ca.PEM, 0o644)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	users := []string{"--add-scram", "SCRAM-SHA-512=[name=broker,password=broker-secret]", "--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret]"}
	secure := func(cfg *testbroker.Config, ctlPass, brokerPass string) {
		cfg.Listeners = strings.Replace(cfg.Listeners, "PLAINTEXT://", "SASL_SSL://", 1)
		cfg.Props = append(cfg.Props, securedPeerProps(keystore, truststore, ctlPass, brokerPass)...)
	}
	c := testcluster.StartCustom(t, 3, func(n *testcluster.Node, cfg *testbroker.Config) {
		secure(cfg, "ctl-secret", "broker-secret")
		cfg.Args = users
	}, "group.initial.rebalance.delay.ms=0")
	t.Logf("secured cluster started after %v", time.Since(start))
	admin := scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism()
	c.ClientOpts = []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: pool}), kgo.SASL(admin)}
	c.Peer = kwire.Security{TLS: func(host string) *tls.Config { return &tls.Config{RootCAs: pool, ServerName: host} }, SASL: admin}

	// The bootstrap users exist once the first controller applied them.
	ctx := context.Background()
	adm := c.Admin()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := adm.ListBrokers(cctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bootstrap admin user does not log in: %v", err)
		}
	}
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "q"); err != nil {
		t.Fatal(err)
	}
	c.Leaders("q", 15*time.Second)
	waitFullISR(t, adm, "q", 30*time.Second)
	t.Logf("replicated over SCRAM after %v", time.Since(start))

	t.Run("controller listener refuses strangers", func(t *testing.T) {
		checkControllerRefuses(t, c.Node(c.Controller(10*time.Second)).ControllerAddr, pool)
	})

	w := testcluster.StartWorkload(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: "q", Rate: 500, Key: "hot", ClientOpts: c.ClientOpts})
	if _, ok := w.AwaitAck(time.Now(), 20*time.Second); !ok {
		t.Fatal("nothing acknowledged over the secured cluster")
	}

	// The intruder runs beside the kills: it must fail on its own while
	// the cluster goes on.
	intruder := make(chan string, 1)
	go func() {
		cfg := c.BrokerOnlyConfig(4)
		secure(&cfg, "wrong-secret", "wrong-secret")
		cfg.Props = append(cfg.Props, "initial.broker.registration.timeout.ms=3000")
		intruder <- runToExit(t, cfg, 60*time.Second)
	}()

	kills := 2
	if os.Getenv("TRIBUTARY_TEST_LONG") != "" {
		kills = 6
	}
	for i := range kills {
		leader := c.Leaders("q", 15*time.Second)[0]
		began := time.Now()
		c.Node(leader).Kill()
		// Every other kill, the cluster fails over without the node
		// (its session runs out) before it comes back; the others
		// restart it at once, as a supervisor would, and its new
		// incarnation fences the old one's leadership.
		failover := i%2 == 1
		if !failover {
			c.Node(leader).Restart()
		}
		next := c.Leaders("q", 20*time.Second)[0]
		if _, ok := w.AwaitAck(time.Now(), 20*time.Second); !ok {
			t.Fatalf("kill %d: nothing acknowledged after leader %d died", i+1, leader)
		}
		t.Logf("kill %d: leader %d → %d (failed over first: %v), acknowledging after %v", i+1, leader, next, failover, time.Since(began))
		if failover {
			c.Node(leader).Restart()
		}
		waitFullISR(t, adm, "q", 30*time.Second)
		t.Logf("kill %d: broker %d back in the ISR after %v", i+1, leader, time.Since(began))
	}

	log := <-intruder
	for _, want := range []string{"a peer refused this node's credentials", "cannot join the cluster"} {
		if !strings.Contains(log, want) {
			t.Errorf("the node with a wrong password does not log %q:\n%s", want, lastLogLines(log, 30))
		}
	}
	if bs, err := adm.ListBrokers(ctx); err != nil || len(bs) != 3 {
		t.Errorf("brokers after the intruder: %v, %v; want 1-3", bs.NodeIDs(), err)
	}
	if _, ok := w.AwaitAck(time.Now(), 10*time.Second); !ok {
		t.Error("nothing acknowledged after the intruder")
	}
	s := c.Score("q", w.Stop())
	s.Check(t, 500)
	t.Logf("%s; took %v", s, time.Since(start))
}

// waitFullISR waits until every partition of topic has all its replicas
// in sync.
func waitFullISR(t *testing.T, adm *kadm.Client, topic string, timeout time.Duration) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m, err := adm.Metadata(ctx, topic)
		cancel()
		if err != nil {
			last = err.Error()
			continue
		}
		full := true
		for _, p := range m.Topics[topic].Partitions {
			full = full && len(p.ISR) == len(p.Replicas) && len(p.Replicas) > 0
			last = fmt.Sprintf("replicas %v ISR %v", p.Replicas, p.ISR)
		}
		if full && len(m.Topics[topic].Partitions) > 0 {
			return
		}
	}
	t.Fatalf("%s: ISR not full after %v (%s)", topic, timeout, last)
}

// runToExit runs a node that is expected to stop on its own, and returns
// its log.
func runToExit(t *testing.T, cfg testbroker.Config, timeout time.Duration) string {
	args := []string{"broker", "--log-dirs", cfg.Dir, "--listeners", cfg.Listeners, "--admin-listen", "127.0.0.1:0"}
	for _, p := range cfg.Props {
		args = append(args, "--set", p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, testbroker.Binary(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String() + "\n(still running after " + timeout.String() + "; killed)"
	}
	if err == nil {
		return out.String() + "\n(exited with status 0)"
	}
	return out.String()
}

func lastLogLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// checkControllerRefuses speaks to a secured controller listener as a
// stranger would: in plain TCP, over TLS without logging in (a Kafka
// request, an AlterUserScramCredentials, a Raft connection), and with a
// wrong password. None is served.
func checkControllerRefuses(t *testing.T, addr string, pool *x509.CertPool) {
	tlsDial := func() net.Conn {
		nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return nc
	}
	frame := func(req kmsg.Request) []byte { return kwire.AppendRequest(nil, req, 1, "stranger") }
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID = 9
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	alter.Deletions = append(alter.Deletions, kmsg.AlterUserSCRAMCredentialsRequestDeletion{Name: "admin", Mechanism: 2})
	// A Raft AppendEntries would follow the magic byte; the server must
	// not even read it.
	raftOpen := append([]byte{0xFF, 0}, bytes.Repeat([]byte{1}, 64)...)
	for _, c := range []struct {
		name string
		send []byte
	}{
		{"BrokerRegistration without a login", frame(reg)},
		{"AlterUserScramCredentials without a login", frame(alter)},
		{"Raft without a login", raftOpen},
	} {
		nc := tlsDial()
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		nc.Write(c.send)
		if n, err := io.ReadFull(nc, make([]byte, 4)); err == nil || isTimeout(err) {
			t.Errorf("%s: the controller listener answered (%d bytes, %v) instead of closing", c.name, n, err)
		}
	}
	// Plain TCP on a TLS listener: no TLS, no request.
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	nc.Write(frame(kmsg.NewPtrApiVersionsRequest()))
	if b, err := io.ReadAll(nc); isTimeout(err) || len(b) >= 8 && bytes.Equal(b[4:8], []byte{0, 0, 0, 1}) {
		t.Errorf("plain TCP to the TLS controller listener: %d bytes, %v", len(b), err)
	}
	// A wrong controller password is SASL_AUTHENTICATION_FAILED.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = kwire.DialSecure(ctx, addr, "stranger", kwire.Security{
		TLS:  func(host string) *tls.Config { return &tls.Config{RootCAs: pool, ServerName: host} },
		SASL: plain.Auth{User: "controller", Pass: "guess"}.AsMechanism()})
	if !errors.Is(err, kwire.ErrAuthentication) || !strings.Contains(err.Error(), kerr.SaslAuthenticationFailed.Message) {
		t.Errorf("a wrong controller password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestSecuredPeersSplitMTLS: three controllers and two broker-only nodes
// that authenticate each other with certificates alone (SSL, client
// certificates required on the controller listener, requested on the
// inter-broker one): Raft reaches the broker-only nodes over mutual TLS,
// replication between them works, and a client without a certificate may
// consume but neither fetch as a replica nor reach the controller
// listener.
func TestSecuredPeersSplitMTLS(t *testing.T) {
	t.Parallel()
	testbroker.Binary(t)
	start := time.Now()
	dir := t.TempDir()
	ca, err := devcerts.NewCA("mtls CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Server("node", []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client("admin", "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// A certificate from the nodes' CA whose principal is neither a super
	// user nor allowed CLUSTER_ACTION.
	intruder, err := ca.Client("intruder", "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keystore, truststore := filepath.Join(dir, "node.pem"), filepath.Join(dir, "ca.pem")
	os.WriteFile(keystore, leaf.Keystore, 0o600)
	os.WriteFile(truststore, ca.PEM, 0o644)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	c := testcluster.StartSplitCustom(t, 3, 2, func(n *testcluster.Node, cfg *testbroker.Config) {
		cfg.Listeners = strings.Replace(cfg.Listeners, "PLAINTEXT://", "SSL://", 1)
		cfg.Props = append(cfg.Props,
			"listener.security.protocol.map=CONTROLLER:SSL,SSL:SSL",
			"inter.broker.listener.name=SSL",
			"ssl.keystore.location="+keystore,
			"ssl.truststore.location="+truststore,
			"listener.name.controller.ssl.client.auth=required",
			// Clients may come without a certificate; brokers show theirs.
			"ssl.client.auth=requested",
			// The peers' principal needs CLUSTER_ACTION on the controller
			// listener too: the nodes are super users.
			"authorizer.class.name="+config.StandardAuthorizer,
			"super.users=User:CN=node;User:CN=admin",
			"allow.everyone.if.no.acl.found=true")
	})
	t.Logf("started after %v", time.Since(start))
	cert, err := tls.X509KeyPair(client.CertPEM, client.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	clientTLS := func(host string) *tls.Config {
		return &tls.Config{RootCAs: pool, ServerName: host, Certificates: []tls.Certificate{cert}}
	}
	c.ClientOpts = []kgo.Opt{kgo.DialTLSConfig(clientTLS(""))}
	c.Peer = kwire.Security{TLS: clientTLS}
	c.Controller(15 * time.Second)
	adm := c.Admin()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "m"); err != nil {
		t.Fatal(err)
	}
	c.Leaders("m", 15*time.Second)
	waitFullISR(t, adm, "m", 30*time.Second)
	w := testcluster.StartWorkload(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: "m", Records: 500, ClientOpts: c.ClientOpts})
	c.Score("m", w.Wait(t)).Check(t, 500)

	// Without a certificate a client is served as User:ANONYMOUS, but
	// may not fetch as a replica; on the controller listener its TLS
	// handshake is refused.
	anon := func(host string) *tls.Config { return &tls.Config{RootCAs: pool, ServerName: host} }
	if got := testcluster.ReadTopic(t, c.Bootstrap(), "m", 60*time.Second, kgo.DialTLSConfig(anon(""))); len(got) != 500 {
		t.Errorf("an anonymous consumer read %d records, want 500", len(got))
	}
	leader := c.Leaders("m", 10*time.Second)[0]
	conn, err := kwire.DialSecure(ctx, c.Node(leader).Addr(), "stranger", kwire.Security{TLS: anon})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.ReplicaID, fetch.MaxBytes = 5, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "m"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	resp, err := conn.RoundTrip(fetch, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.FetchResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("an anonymous replica Fetch: error %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	// The broker logs before it answers, but its stderr reaches the test
	// through a pipe and a copying goroutine: give the line a moment.
	logged := func() bool {
		return strings.Contains(c.Node(leader).Log(), "a replica Fetch from a connection that did not authenticate")
	}
	for deadline := time.Now().Add(30 * time.Second); !logged() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if !logged() {
		t.Error("the leader does not log the anonymous replica Fetch")
	}
	ctlConn, err := kwire.DialSecure(ctx, c.Node(1).ControllerAddr, "stranger", kwire.Security{TLS: anon})
	if err == nil {
		_, err = ctlConn.RoundTrip(kmsg.NewPtrApiVersionsRequest(), 10*time.Second)
		ctlConn.Close()
	}
	if err == nil {
		t.Error("the controller listener served a client without a certificate")
	}

	// With the cluster named by an ACL (so that no one gets it for want
	// of ACLs), a valid certificate without CLUSTER_ACTION is no peer on
	// the controller listener, although nothing else is judged there.
	create := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral
	cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:CN=admin", "*", kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeAllow
	create.Creations = append(create.Creations, cr)
	admCl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...)}, c.ClientOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	if cresp, err := create.RequestWith(ctx, admCl); err != nil || cresp.Results[0].ErrorCode != 0 {
		t.Fatalf("CreateAcls: %+v %v", cresp, err)
	}
	icert, err := tls.X509KeyPair(intruder.CertPEM, intruder.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	intruderTLS := func(host string) *tls.Config {
		return &tls.Config{RootCAs: pool, ServerName: host, Certificates: []tls.Certificate{icert}}
	}
	ctlConn, err = kwire.DialSecure(ctx, c.Node(1).ControllerAddr, "intruder", kwire.Security{TLS: intruderTLS})
	if err != nil {
		t.Fatal(err)
	}
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch = 4, 1
	_, err = ctlConn.RoundTrip(hb, 10*time.Second)
	ctlConn.Close()
	if err == nil {
		t.Error("the controller listener answered a BrokerHeartbeat from a certificate without CLUSTER_ACTION")
	}
	t.Logf("took %v", time.Since(start))
}
