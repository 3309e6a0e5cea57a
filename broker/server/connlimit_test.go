package server

import (
	"testing"

	"github.com/tributary-io/tributary/broker/config"
)

// A flood of clients at the limits leaves the controller listener and the
// inter-broker listener's place in max.connections alone.
func TestConnLimitsSpareControllerAndReplicationListeners(t *testing.T) {
	cfg, err := config.ParseBroker(map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,REPLICATION://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.listener.names":      "CONTROLLER",
		"inter.broker.listener.name":     "REPLICATION",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"max.connections":                "2",
		"max.connections.per.ip":         "3",
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := newConnLimits(cfg)
	if err != nil {
		t.Fatal(err)
	}
	admit := func(listener, ip, wantRefused string) func() {
		t.Helper()
		done, refused := l.admit(listener, ip)
		if refused != wantRefused {
			t.Fatalf("%s from %s: refused %q, want %q", listener, ip, refused, wantRefused)
		}
		return done
	}
	first := admit("PLAINTEXT", "10.0.0.1", "")
	admit("PLAINTEXT", "10.0.0.2", "")
	admit("PLAINTEXT", "10.0.0.3", refusedMax)
	// Replication is not counted in max.connections, but is per IP.
	admit("REPLICATION", "10.0.0.1", "")
	admit("REPLICATION", "10.0.0.1", "")
	admit("REPLICATION", "10.0.0.1", refusedPerIP)
	// The controller listener is not counted at all.
	for range 10 {
		admit("CONTROLLER", "10.0.0.1", "")
	}
	// Closing a replication connection makes no room in max.connections;
	// closing a client's does.
	admit("REPLICATION", "10.0.0.9", "")()
	admit("PLAINTEXT", "10.0.0.3", refusedMax)
	first()
	admit("PLAINTEXT", "10.0.0.3", "")

	// Dynamic configs (KIP-226) apply from the next accept.
	admit("PLAINTEXT", "10.0.0.4", refusedMax)
	cfg.SetDynamic(nil, map[string]string{"max.connections": "3"})
	admit("PLAINTEXT", "10.0.0.4", "")
	cfg.SetDynamic(map[string]string{"max.connections.per.ip": "1"}, map[string]string{"max.connections": "4"})
	admit("PLAINTEXT", "10.0.0.2", refusedPerIP)
	admit("PLAINTEXT", "10.0.0.5", "")
}
