package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/config"
)

// BrokerRegistration, BrokerHeartbeat and AllocateProducerIds are how the
// brokers of a cluster talk to the active controller: KRaft's APIs, on the
// controller listener. They are not listed to clients, who have no use for
// them.

func (s *Server) handleBrokerRegistration(c *conn, req *kmsg.BrokerRegistrationRequest) (*kmsg.BrokerRegistrationResponse, error) {
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.BrokerEpoch = -1
	if req.ClusterID != s.clusterID {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp, nil
	}
	r := cluster.Registration{Broker: cluster.Broker{ID: req.BrokerID, Incarnation: uuidString(req.IncarnationID)},
		// PreviousBrokerEpoch (v3+) is -1 after an unclean shutdown (KIP-966).
		Unclean: req.Version >= 3 && req.PreviousBrokerEpoch < 0}
	if req.Rack != nil {
		r.Broker.Rack = *req.Rack
	}
	for _, l := range req.Listeners {
		cl := config.Listener{Name: l.Name, Host: l.Host, Port: int(l.Port), Protocol: protocolName(l.SecurityProtocol)}
		if s.isControllerListener(l.Name) {
			// A broker-only node's Raft listener: where the metadata log
			// goes, never a listener for clients.
			if r.RaftAddr == "" {
				r.RaftAddr = cl.Addr()
			}
			continue
		}
		r.Broker.Listeners = append(r.Broker.Listeners, cl)
	}
	for _, d := range req.LogDirs {
		r.Broker.LogDirs = append(r.Broker.LogDirs, uuidString(d))
	}
	epoch, err := s.ctrl.Register(r)
	if err != nil {
		resp.ErrorCode = kafkaCode(err)
		return resp, nil
	}
	resp.BrokerEpoch = epoch
	return resp, nil
}

func (s *Server) handleBrokerHeartbeat(c *conn, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	if err := s.reportOffline(req); err != nil {
		resp.ErrorCode = kafkaCode(err)
		return resp, nil
	}
	shutDown, err := s.ctrl.Heartbeat(req.BrokerID, req.BrokerEpoch, req.WantFence, req.WantShutdown)
	if err != nil {
		resp.ErrorCode = kafkaCode(err)
		return resp, nil
	}
	s.metaOffsets.Store(req.BrokerID, req.CurrentMetadataOffset)
	resp.IsCaughtUp, resp.ShouldShutdown = true, shutDown
	return resp, nil
}

func (s *Server) handleAllocateProducerIDs(c *conn, req *kmsg.AllocateProducerIDsRequest) (*kmsg.AllocateProducerIDsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	if !s.ctrl.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	// Producer ids are for the brokers of the cluster, each in its current
	// incarnation (KIP-380).
	if err := s.ctrl.CheckBrokerEpoch(req.BrokerID, req.BrokerEpoch); err != nil {
		resp.ErrorCode = kafkaCode(err)
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
// whose heartbeats stop, and moves its partitions' leadership away. A
// heartbeat refused for its epoch (the registration is gone, or another
// incarnation holds it) registers again.
func (s *Server) keepMembership(self cluster.Broker, registered bool) {
	defer s.wg.Done()
	interval := time.Duration(s.cfg.Int("broker.heartbeat.interval.ms")) * time.Millisecond
	var refused time.Time
	for {
		var err error
		if !registered {
			err = s.register(self)
			registered = err == nil
		} else if err = s.heartbeat(false); errors.Is(err, kerr.StaleBrokerEpoch) || errors.Is(err, kerr.BrokerIDNotRegistered) {
			s.logger.Warn("the controller refused this broker's epoch; registering again", "node_id", s.nodeID, "broker_epoch", s.epoch.Load(), "err", err)
			registered = false
		}
		wait := interval
		if err != nil {
			if errors.Is(err, kerr.DuplicateBrokerRegistration) && time.Since(refused) > time.Minute {
				s.logDuplicate()
				refused = time.Now()
			}
			s.logger.Debug("controller membership", "err", err)
			if !errors.Is(err, kerr.DuplicateBrokerRegistration) {
				wait = 200 * time.Millisecond
			}
		}
		select {
		case <-s.stopping:
			return
		case <-time.After(wait):
		}
	}
}

// logDuplicate says what to do when the controller refuses this node's
// registration because another live node has its node.id.
func (s *Server) logDuplicate() {
	s.logger.Error("the controller refused this broker: another live broker is registered with node.id "+
		fmt.Sprint(s.nodeID)+" (DUPLICATE_BROKER_REGISTRATION); give this node its own node.id, or stop the other one",
		"node_id", s.nodeID, "log_dirs", s.cfg.LogDirs())
}

// register registers this broker with the active controller, waits until
// its own metadata has caught up to the registration, and then heartbeats
// to be unfenced: a broker takes partitions only with the metadata that
// assigns them.
func (s *Server) register(self cluster.Broker) error {
	var epoch int64
	if s.ctrl.IsActive() {
		var err error
		if epoch, err = s.ctrl.Register(cluster.Registration{Broker: self, Unclean: !s.cleanStart()}); err != nil {
			return err
		}
	} else {
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.SetVersion(3)
		req.BrokerID, req.ClusterID, req.IncarnationID = s.nodeID, s.clusterID, s.incarnation
		req.LogDirs = s.logDirIDs
		// Kafka sends the epoch it saved at its last clean shutdown;
		// Tributary keeps no epoch across restarts, and 0 says "clean".
		req.PreviousBrokerEpoch = 0
		if !s.cleanStart() {
			req.PreviousBrokerEpoch = -1
		}
		if self.Rack != "" {
			req.Rack = &self.Rack
		}
		listeners := self.Listeners
		if s.raftListener != nil {
			// The controller takes it for where to send the metadata log,
			// and advertises it to nobody.
			listeners = append(slices.Clone(listeners), *s.raftListener)
		}
		for _, l := range listeners {
			rl := kmsg.NewBrokerRegistrationRequestListener()
			rl.Name, rl.Host, rl.Port, rl.SecurityProtocol = l.Name, l.Host, uint16(l.Port), protocolID(l.Protocol)
			req.Listeners = append(req.Listeners, rl)
		}
		resp, err := s.registerRemote(req)
		if err != nil {
			return err
		}
		epoch = resp.BrokerEpoch
	}
	if s.epoch.Swap(epoch) != epoch {
		s.logger.Info("registered with the controller", "node_id", s.nodeID, "broker_epoch", epoch)
	}
	s.registered.Store(true)
	if err := s.ctrl.WaitApplied(epoch, 30*time.Second); err != nil {
		return err
	}
	return s.heartbeat(false)
}

// registerRemote sends a registration to the active controller. A broker
// that has not joined the quorum yet does not know which voter that is, and
// asks each in turn.
func (s *Server) registerRemote(req *kmsg.BrokerRegistrationRequest) (*kmsg.BrokerRegistrationResponse, error) {
	ctx := context.Background()
	resp, err := s.toController(ctx, req)
	if errors.Is(err, errNoController) {
		for _, v := range s.ctrl.Voters() {
			if v.ID == s.nodeID {
				continue
			}
			if resp, err = s.sendTo(ctx, v.ID, v.Addr, req); err != nil {
				continue
			}
			if code := resp.(*kmsg.BrokerRegistrationResponse).ErrorCode; code != kerr.NotController.Code {
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.BrokerRegistrationResponse)
	return r, kerr.ErrorForCode(r.ErrorCode)
}

// cleanStart is whether every log dir was stopped cleanly last time, as far
// as registrations go: only the first one after the start says otherwise.
func (s *Server) cleanStart() bool {
	if s.registered.Load() {
		return true
	}
	for _, d := range s.dirs {
		if !d.CleanStart() {
			return false
		}
	}
	return true
}

func (s *Server) heartbeat(wantShutdown bool) error {
	if s.ctrl.IsActive() {
		if dirs, _, replicas := s.offlineReport(); len(dirs) > 0 {
			if err := s.ctrl.ReportOfflineDirs(s.nodeID, s.epoch.Load(), dirs, replicas); err != nil {
				return err
			}
		}
		_, err := s.ctrl.Heartbeat(s.nodeID, s.epoch.Load(), false, wantShutdown)
		return err
	}
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(0)
	req.BrokerID, req.BrokerEpoch, req.WantShutdown = s.nodeID, s.epoch.Load(), wantShutdown
	s.addOfflineReport(req) // v1 when a log dir failed
	req.CurrentMetadataOffset = s.ctrl.Image().Offset
	// A controller that stopped answering (paused, partitioned) must not
	// hold the heartbeats up past the session: the next one is elected
	// meanwhile and would fence this broker.
	session := time.Duration(s.cfg.Int("broker.session.timeout.ms")) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), session/3)
	defer cancel()
	resp, err := s.toController(ctx, req)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode)
}

// controlledShutdown asks the active controller to move this broker's
// leaderships away before it stops, so that clients fail over at once
// rather than after the session timeout. It gives up after a few seconds:
// a broker whose controller is gone still stops.
func (s *Server) controlledShutdown() {
	if s.ctrl == nil || !s.ctrl.Quorum() || !s.broker || !s.registered.Load() || !s.cfg.Bool("controlled.shutdown.enable") {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		err := s.heartbeat(true)
		if err == nil {
			break
		}
		s.logger.Debug("controlled shutdown", "err", err)
		time.Sleep(100 * time.Millisecond)
	}
	// Wait until this node's image shows the moves, so that the clients
	// it answers until it stops are sent to the new leaders.
	for time.Now().Before(deadline) && s.leadsAny() {
		time.Sleep(20 * time.Millisecond)
	}
	s.logger.Info("controlled shutdown done", "still_leading", s.leadsAny())
}

// leadsAny is whether this node leads a partition that has another ISR
// member to lead it.
func (s *Server) leadsAny() bool {
	for _, t := range s.ctrl.Image().Topics {
		for _, p := range t.Partitions {
			if p.Leader == s.nodeID && len(p.ISR) > 1 {
				return true
			}
		}
	}
	return false
}

// handleUnregisterBroker removes a broker that is gone for good (kafka-cluster
// unregister); brokers forward it to the active controller.
func (s *Server) handleUnregisterBroker(c *conn, req *kmsg.UnregisterBrokerRequest) (*kmsg.UnregisterBrokerResponse, error) {
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if err := s.ctrl.Unregister(req.BrokerID); err != nil {
		resp.ErrorCode = kafkaCode(err)
		msg := err.Error()
		if e, ok := cluster.IsError(err); ok {
			msg = e.Message
		}
		resp.ErrorMessage = &msg
	}
	return resp, nil
}

// uuidString is a Kafka UUID (an incarnation or directory id) in the
// base64 form Kafka prints.
func uuidString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }
