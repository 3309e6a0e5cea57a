package server

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/config"
)

// The brokers' internal APIs are served on controller listeners only: a
// client listener closes the connection, as Kafka's broker listeners do,
// and keeps serving everyone else. A Raft connection (first byte 0xFF)
// reads as a negative frame size there and is closed too.
func TestInternalAPIsCloseClientConnections(t *testing.T) {
	s := startBroker(t, nil)
	addr := s.Addr("PLAINTEXT")
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.WantShutdown = s.nodeID, -1, true
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID = 4242, s.ClusterID()
	pid := kmsg.NewPtrAllocateProducerIDsRequest()
	pid.BrokerID = s.nodeID
	ap := kmsg.NewPtrAlterPartitionRequest()
	ap.BrokerID = s.nodeID
	for _, tc := range []struct {
		req     kmsg.Request
		version int16
	}{{hb, 0}, {hb, 1}, {reg, 0}, {reg, 4}, {pid, 0}, {ap, 2}, {ap, 3}} {
		if resp, err := roundTrip(t, addr, frame(tc.req, tc.version, nil)); err == nil {
			t.Errorf("%s v%d on a client listener was answered (%d bytes); want the connection closed", kmsg.NameForKey(tc.req.Key()), tc.version, len(resp))
		}
	}
	raft := append([]byte{0xFF, 0}, make([]byte, 64)...)
	if resp, err := roundTrip(t, addr, raft); err == nil {
		t.Errorf("a Raft connection to a client listener was answered (%d bytes)", len(resp))
	}
	if b := s.ctrl.Image().Brokers[s.nodeID]; b.Fenced {
		t.Error("the broker was fenced by a client's heartbeat")
	}
	if _, ok := s.ctrl.Image().Brokers[4242]; ok {
		t.Error("a client registered broker 4242")
	}
	apiVersionsWork(t, addr)
}

// A broker-only node receives the metadata log on a controller listener,
// since no client listener accepts Raft: without one it refuses to start,
// naming the setting.
func TestBrokerOnlyNodeNeedsAControllerListener(t *testing.T) {
	cfg, err := config.ParseBroker(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(),
		"process.roles": "broker", "controller.listener.names": "CONTROLLER", "controller.quorum.voters": "1@127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	err = New(cfg, Options{Logger: slog.New(slog.DiscardHandler)}).Start()
	if err == nil || !strings.Contains(err.Error(), "controller.listener.names (CONTROLLER)") {
		t.Errorf("broker-only node without a controller listener: start error %v, want one naming controller.listener.names", err)
	}
}
