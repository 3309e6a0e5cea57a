package server

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/config"
)

// BrokerRegistration, BrokerHeartbeat and AllocateProducerIds are how the
// brokers of a cluster talk to the active controller (KRaft's APIs, on the
// brokers' own listener here, since every node of a quorum is also a
// broker). They are not listed in ApiVersions: clients have no use for them.

func (s *Server) handleBrokerRegistration(c *conn, req *kmsg.BrokerRegistrationRequest) (*kmsg.BrokerRegistrationResponse, error) {
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.BrokerEpoch = -1
	if req.ClusterID != s.clusterID {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp, nil
	}
	b := cluster.Broker{ID: req.BrokerID}
	if req.Rack != nil {
		b.Rack = *req.Rack
	}
	for _, l := range req.Listeners {
		b.Listeners = append(b.Listeners, config.Listener{Name: l.Name, Host: l.Host, Port: int(l.Port), Protocol: protocolName(l.SecurityProtocol)})
	}
	epoch, err := s.ctrl.Register(b)
	if err != nil {
		resp.ErrorCode = kafkaCode(err)
		return resp, nil
	}
	resp.BrokerEpoch = epoch
	return resp, nil
}

func (s *Server) handleBrokerHeartbeat(c *conn, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	if err := s.ctrl.Heartbeat(req.BrokerID); err != nil {
		resp.ErrorCode = kafkaCode(err)
		return resp, nil
	}
	resp.IsCaughtUp = true
	return resp, nil
}

func (s *Server) handleAllocateProducerIDs(c *conn, req *kmsg.AllocateProducerIDsRequest) (*kmsg.AllocateProducerIDsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	if !s.ctrl.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	first, err := s.ctrl.AllocateProducerIDs(cluster.ProducerIDBlockSize)
	if err != nil {
		resp.ErrorCode = kafkaCode(err)
		return resp, nil
	}
	resp.ProducerIDStart, resp.ProducerIDLen = first, cluster.ProducerIDBlockSize
	return resp, nil
}

// security protocol ids of BrokerRegistration's listeners.
var securityProtocols = map[int16]string{0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}

func protocolName(id int16) string {
	if n, ok := securityProtocols[id]; ok {
		return n
	}
	return "PLAINTEXT"
}

func protocolID(name string) int16 {
	for id, n := range securityProtocols {
		if n == name {
			return id
		}
	}
	return 0
}

// keepMembership registers this broker with the active controller and
// heartbeats to it until the server stops: the controller fences a broker
// whose heartbeats stop, and moves its partitions' leadership away.
func (s *Server) keepMembership(self cluster.Broker, registered bool) {
	defer s.wg.Done()
	interval := time.Duration(s.cfg.Int("broker.heartbeat.interval.ms")) * time.Millisecond
	for {
		var err error
		if !registered {
			err = s.register(self)
			registered = err == nil
		} else if err = s.heartbeat(); errors.Is(err, kerr.BrokerIDNotRegistered) {
			registered = false
		}
		wait := interval
		if err != nil {
			s.logger.Debug("controller membership", "err", err)
			wait = 200 * time.Millisecond
		}
		select {
		case <-s.stopping:
			return
		case <-time.After(wait):
		}
	}
}

func (s *Server) register(self cluster.Broker) error {
	if s.ctrl.IsActive() {
		_, err := s.ctrl.Register(self)
		return err
	}
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(0)
	req.BrokerID, req.ClusterID = s.nodeID, s.clusterID
	if self.Rack != "" {
		req.Rack = &self.Rack
	}
	for _, l := range self.Listeners {
		rl := kmsg.NewBrokerRegistrationRequestListener()
		rl.Name, rl.Host, rl.Port, rl.SecurityProtocol = l.Name, l.Host, uint16(l.Port), protocolID(l.Protocol)
		req.Listeners = append(req.Listeners, rl)
	}
	resp, err := s.toController(context.Background(), req)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.(*kmsg.BrokerRegistrationResponse).ErrorCode)
}

func (s *Server) heartbeat() error {
	if s.ctrl.IsActive() {
		return s.ctrl.Heartbeat(s.nodeID)
	}
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(0)
	req.BrokerID, req.BrokerEpoch = s.nodeID, -1
	resp, err := s.toController(context.Background(), req)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode)
}
