package main_test

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// Two nodes on one host, neither given --admin-listen (docs/cluster.md's
// split-roles example): each derives its admin port from its first
// listener's (+552) and both start. A node whose admin address is taken
// stops with an error that names the flag to set.
func TestBrokersOnOneHostDeriveTheirAdminPorts(t *testing.T) {
	var brokers []*testbroker.Broker
	for range 2 {
		port := testbroker.FreePort(t)
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+552)); err != nil {
			t.Skipf("port %d, the admin port to derive, is taken on this machine: %v", port+552, err)
		} else {
			ln.Close()
		}
		b := testbroker.StartConfig(t, testbroker.Config{Dir: t.TempDir(), Port: port, NoAdminListen: true})
		if got, want := b.AdminAddr(), fmt.Sprintf("127.0.0.1:%d", port+552); got != want {
			t.Errorf("broker on %d: admin endpoint at %s, want %s", port, got, want)
		}
		brokers = append(brokers, b)
	}
	for _, b := range brokers {
		resp, err := http.Get("http://" + b.AdminAddr() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s/healthz: %s", b.AdminAddr(), resp.Status)
		}
	}

	taken := brokers[0].AdminAddr()
	out, err := exec.Command(testbroker.Binary(t), "broker", "--log-dirs", t.TempDir(),
		"--listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", testbroker.FreePort(t)), "--admin-listen", taken).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "set --admin-listen to a free address") {
		t.Errorf("a broker on a taken admin address %s: %v, want an exit naming --admin-listen:\n%s", taken, err, out)
	}
}
