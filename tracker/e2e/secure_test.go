package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/devcerts"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestTrackerHTTPSToSecuredBroker runs the tracker binary serving HTTPS and
// delivering to a SASL_SSL broker with SCRAM, every setting from its
// config file (the client properties as client.property), and reads the
// event back; --check-config on that file shows no secret.
func TestTrackerHTTPSToSecuredBroker(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the broker and the tracker")
	}
	dir := t.TempDir()
	ca, err := devcerts.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Server("localhost", []string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keystore, caFile := filepath.Join(dir, "server.pem"), filepath.Join(dir, "ca.pem")
	os.WriteFile(keystore, srv.Keystore, 0o600)
	os.WriteFile(caFile, ca.PEM, 0o644)
	plainPort, saslPort := testbroker.FreePort(t), testbroker.FreePort(t)
	saslAddr := fmt.Sprintf("127.0.0.1:%d", saslPort)
	b := testbroker.StartConfig(t, testbroker.Config{
		Dir: filepath.Join(dir, "broker"), Port: plainPort,
		Listeners: fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SASL_SSL://%s", plainPort, saslAddr),
		Props:     []string{"ssl.keystore.location=" + keystore, "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512"},
		Args:      []string{"--add-scram", "SCRAM-SHA-512=[name=tracker,password=tracker-secret]"},
	})

	addr := freeAddr(t)
	cfgFile := filepath.Join(dir, "tracker.yaml")
	os.WriteFile(cfgFile, []byte(fmt.Sprintf(`listen: %s
bootstrap: %s
topic: secured-events
write.key: [wk-secure]
spool.dir: %s
admin.listen: ""
ssl.keystore.location: %s
client.property:
  - security.protocol=SASL_SSL
  - sasl.mechanism=SCRAM-SHA-512
  - sasl.username=tracker
  - sasl.password=tracker-secret
  - ssl.truststore.location=%s
`, addr, saslAddr, filepath.Join(dir, "spool"), keystore, caFile)), 0o600)

	out, err := exec.Command(testbroker.Binary(t), "tracker", "--config", cfgFile, "--check-config").CombinedOutput()
	if err != nil || strings.Contains(string(out), "tracker-secret") {
		t.Fatalf("tracker --check-config: %v, output shows the password or fails:\n%s", err, out)
	}

	var log bytes.Buffer
	var logMu sync.Mutex
	cmd := exec.Command(testbroker.Binary(t), "tracker", "--config", cfgFile)
	cmd.Stdout, cmd.Stderr = lockedWriter{&log, &logMu}, lockedWriter{&log, &logMu}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	trackerLog := func() string { logMu.Lock(); defer logMu.Unlock(); return log.String() }
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("tracker log:\n%s", trackerLog())
		}
	})

	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	var res *http.Response
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequest("POST", "https://"+addr+"/v1/track", strings.NewReader(`{"userId":"u-tls","event":"Secured","messageId":"m-tls"}`))
		req.SetBasicAuth("wk-secure", "")
		if res, err = hc.Do(req); err == nil {
			break
		}
		select {
		case <-exited:
			t.Fatalf("tracker exited:\n%s", trackerLog())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no HTTPS answer from the tracker within 30 s: %v", err)
		}
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.TLS == nil {
		t.Fatalf("POST over HTTPS: %s (TLS %v)", res.Status, res.TLS != nil)
	}
	// Plain HTTP to the HTTPS port is no way in.
	if r, err := (&http.Client{Timeout: 5 * time.Second}).Post("http://"+addr+"/v1/track", "application/json", strings.NewReader(`{}`)); err == nil {
		r.Body.Close()
		if r.StatusCode == 200 {
			t.Errorf("plain HTTP to the HTTPS listener answered 200")
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("secured-events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("the event did not reach the broker through SASL_SSL within 60 s")
		}
		var ev map[string]any
		found := false
		fs.EachRecord(func(r *kgo.Record) {
			if json.Unmarshal(r.Value, &ev) == nil && ev["messageId"] == "m-tls" {
				found = true
			}
		})
		if found {
			break
		}
	}
	if !strings.Contains(trackerLog(), "scheme=https") {
		t.Errorf("the tracker did not log that it serves https")
	}
}
