package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/console"
)

// TestConsoleLoginNeedsTLS: the console serves plain HTTP, so --login
// beyond loopback is refused unless a TLS proxy is in front, and then its
// cookies are Secure (review 8).
func TestConsoleLoginNeedsTLS(t *testing.T) {
	t.Parallel()
	cfg := console.Config{Seeds: []string{"127.0.0.1:1"}, SampleEvery: -1, Login: &console.Login{Mechanism: "SCRAM-SHA-512"}}
	if _, err := startConsole("0.0.0.0:0", cfg); err == nil || !strings.Contains(err.Error(), "--behind-tls-proxy") {
		t.Fatalf("--login on 0.0.0.0 over plain HTTP: err %v, want a refusal naming --behind-tls-proxy", err)
	}
	cfg.BehindTLSProxy = true
	rc, err := startConsole("0.0.0.0:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	u := strings.Replace(rc.URL, "0.0.0.0", "127.0.0.1", 1)
	hc := &http.Client{Timeout: 20 * time.Second}
	resp, err := hc.Get(u + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(resp.Cookies()) == 0 {
		t.Fatalf("GET /login: %d, no cookie", resp.StatusCode)
	}
	for _, c := range resp.Cookies() {
		if !c.Secure {
			t.Errorf("cookie %s behind a TLS proxy is not Secure", c.Name)
		}
	}
	// On loopback, --login needs no proxy.
	cfg.BehindTLSProxy = false
	rc2, err := startConsole("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatalf("--login on loopback: %v", err)
	}
	rc2.Close()
}
