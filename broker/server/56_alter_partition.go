package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/replica"
	"github.com/tributary-io/tributary/broker/tier"
)

// Replication between brokers: the transport the partition manager uses
// to fetch from leaders and change ISRs, the AlterPartition API leaders
// send to the active controller, and the check that a request claiming a
// replica id comes from a broker.

func (s *Server) replicaTransport() replica.Transport {
	tr := replica.Transport{
		Addr: func(id int32) (string, error) {
			b, ok := s.ctrl.Image().Brokers[id]
			if !ok {
				return "", errors.New("broker/server: leader is not registered")
			}
			return s.interBrokerAddr(b)
		},
		Secret:   func() string { return s.ctrl.Image().Secret },
		AlterISR: s.alterISR,
		MaxWait:  time.Duration(s.cfg.Int("replica.fetch.wait.max.ms")) * time.Millisecond,
		MaxBytes: int32(s.cfg.Int("replica.fetch.max.bytes")),
		Dial:     s.dialReplica,
	}
	// Without remote storage here the follower fetches as before KIP-405
	// (v12), and its leader serves it the remote range.
	if s.tier != nil {
		tr.RemoteState = func(p *replica.Partition, localStart int64) (replica.RemoteState, error) {
			st, err := s.tier.AuxState(p.TP, p.TopicID.String(), localStart)
			if errors.Is(err, tier.ErrNoProducerState) {
				err = fmt.Errorf("%w: %v", replica.ErrNoRemoteState, err)
			}
			return replica.RemoteState{Next: st.Next, Epochs: st.Epochs, Snapshot: st.Snapshot}, err
		}
	}
	return tr
}

// alterISR commits an ISR change through the active controller, counting
// the shrinks and expansions of the ISRs led here.
func (s *Server) alterISR(ch cluster.ISRChange) error {
	before := -1
	if t, ok := s.ctrl.Image().ByID[ch.TopicID]; ok && int(ch.Partition) < len(t.Partitions) {
		before = len(t.Partitions[ch.Partition].ISR)
	}
	err := s.sendISRChange(ch)
	switch {
	case err != nil || before < 0:
	case len(ch.ISR) < before:
		s.metrics.isrShrinks.Inc()
	case len(ch.ISR) > before:
		s.metrics.isrExpands.Inc()
	}
	return err
}

func (s *Server) sendISRChange(ch cluster.ISRChange) error {
	if s.ctrl.IsActive() {
		_, err := s.ctrl.AlterPartition(ch)
		return err
	}
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = s.nodeID, s.epoch.Load()
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = ch.TopicID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = ch.Partition, ch.LeaderEpoch, ch.PartitionEpoch
	for _, r := range ch.ISR {
		st := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		st.BrokerID, st.BrokerEpoch = r, -1
		rp.NewEpochISR = append(rp.NewEpochISR, st)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := s.toController(context.Background(), req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.AlterPartitionResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return err
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Server) handleAlterPartition(c *conn, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	if !s.ctrl.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	// Only the leader's current incarnation may change its ISRs (KIP-380).
	if err := s.ctrl.CheckBrokerEpoch(req.BrokerID, req.BrokerEpoch); err != nil {
		resp.ErrorCode = kafkaCode(err)
		return resp, nil
	}
	img := s.ctrl.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.TopidID, st.Topic = rt.TopicID, rt.Topic
		for _, rp := range rt.Partitions {
			ch := cluster.ISRChange{TopicID: rt.TopicID, Partition: rp.Partition, Leader: req.BrokerID,
				LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch, ISR: rp.NewISR}
			// A member named with a broker epoch (v3, KIP-903) must be that
			// incarnation of it; -1 skips the check.
			var ineligible error
			for _, r := range rp.NewEpochISR {
				ch.ISR = append(ch.ISR, r.BrokerID)
				if b, ok := img.Brokers[r.BrokerID]; r.BrokerEpoch != -1 && (!ok || b.Epoch != r.BrokerEpoch) {
					ineligible = kerr.IneligibleReplica
				}
			}
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = rp.Partition
			p, err := cluster.Partition{}, ineligible
			if err == nil {
				p, err = s.ctrl.AlterPartition(ch)
			}
			if err != nil {
				sp.ErrorCode = kafkaCode(err)
			} else {
				sp.LeaderID, sp.LeaderEpoch, sp.ISR, sp.PartitionEpoch = p.Leader, p.LeaderEpoch, p.ISR, p.PartitionEpoch
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// fromBroker reports whether a request carries the cluster's inter-broker
// secret, which only brokers know (see replica.SecretTag).
func (s *Server) fromBroker(tags kmsg.Tags) bool {
	secret := s.ctrl.Image().Secret
	if secret == "" {
		return false
	}
	ok := false
	tags.Each(func(key uint32, val []byte) {
		if key == replica.SecretTag && subtle.ConstantTimeCompare(val, []byte(secret)) == 1 {
			ok = true
		}
	})
	return ok
}
