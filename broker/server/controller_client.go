package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
)

// errNoController is returned while no controller is active or reachable.
var errNoController = errors.New("broker/server: no active controller is reachable")

// toController sends a request to the active controller over the Kafka
// protocol, on its controller listener, and decodes the answer. It is how
// a broker that is not the active controller registers, heartbeats, changes
// ISRs, creates the topics it needs, allocates producer ids and forwards
// admin requests: a connection per request, since these are rare.
func (s *Server) toController(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	id := s.ctrl.Image().ControllerID
	addr, ok := s.ctrl.VoterAddr(id)
	if id < 0 || id == s.nodeID || !ok {
		// This node's own image may lag its Raft state for a moment; never
		// send to ourselves what we were not able to do.
		return nil, errNoController
	}
	return s.sendTo(ctx, id, addr, req)
}

// sendTo sends one request to the controller listener of voter id.
func (s *Server) sendTo(ctx context.Context, id int32, addr string, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := s.dialController(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("broker/server: controller %d at %s: %w", id, addr, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	resp, err := conn.RoundTrip(req, time.Until(deadline))
	if err != nil {
		s.peerAuthFailed("controller", addr, err)
		return nil, fmt.Errorf("broker/server: controller %d: %w", id, err)
	}
	return resp, nil
}

// interBrokerAddr is where brokers reach b: its inter.broker.listener.name
// listener, else the one named like this node's first listener.
func (s *Server) interBrokerAddr(b cluster.Broker) (string, error) {
	want := s.cfg.String("inter.broker.listener.name")
	if want == "" {
		if own, ok := s.ctrl.Image().Brokers[s.nodeID]; ok && len(own.Listeners) > 0 {
			want = own.Listeners[0].Name
		} else if ls, err := s.cfg.AdvertisedListeners(); err == nil && len(ls) > 0 {
			want = ls[0].Name
		}
	}
	for _, l := range b.Listeners {
		if l.Name == want {
			return net.JoinHostPort(l.Host, fmt.Sprint(l.Port)), nil
		}
	}
	return "", fmt.Errorf("broker/server: broker %d has no %s listener", b.ID, want)
}
