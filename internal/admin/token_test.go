package admin

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Off loopback the admin endpoint takes the bearer token on every path but
// the probes (and /metrics when open); on loopback nothing changes; the
// token is never logged.
func TestAdminTokenOffLoopback(t *testing.T) {
	t.Parallel()
	const token = "s3cret-admin-token"
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte(token+"\n"), 0o600)
	fromFile, err := ReadToken("", file)
	if err != nil || fromFile != token {
		t.Fatalf("ReadToken from a file: %q, %v", fromFile, err)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	var level slog.LevelVar
	start := func(addr string, a Access) string {
		s, err := Listen(addr, NewRegistry(), func() error { return nil }, logger, WithLogLevel(&level), WithAccess(a))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		_, port, _ := net.SplitHostPort(s.Addr())
		return "http://127.0.0.1:" + port
	}
	call := func(url, bearer string) int {
		req, _ := http.NewRequest("GET", url, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	guarded := start("0.0.0.0:0", Access{Token: fromFile})
	open := start("0.0.0.0:0", Access{Token: token, MetricsOpen: true})
	noToken := start("0.0.0.0:0", Access{})
	local := start("127.0.0.1:0", Access{})
	for _, c := range []struct {
		url, bearer string
		want        int
	}{
		{guarded + "/healthz", "", 200},
		{guarded + "/readyz", "", 200},
		{guarded + "/metrics", "", 401},
		{guarded + "/loglevel", "", 401},
		{guarded + "/loglevel", "wrong", 401},
		{guarded + "/loglevel", token, 200},
		{guarded + "/metrics", token, 200},
		{open + "/metrics", "", 200},
		{open + "/loglevel", "", 401},
		{noToken + "/healthz", "", 200},
		{noToken + "/metrics", "", 403},
		{noToken + "/loglevel", token, 403},
		{local + "/metrics", "", 200},
		{local + "/loglevel", "", 200},
	} {
		if got := call(c.url, c.bearer); got != c.want {
			t.Errorf("GET %s with token %q: %d, want %d", c.url, c.bearer, got, c.want)
		}
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("the admin token is in the log:\n%s", logs.String())
	}
}
