package server

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/cluster"
)

// DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554):
// SCRAM users are metadata records, decided by the active controller.

func init() {
	// A broker forwards Alter to the active controller (see
	// handleAlterUserScramCredentials), on its controller listener.
	controllerAPIs[kmsg.AlterUserSCRAMCredentials.Int16()] = true
}

func (s *Server) handleDescribeUserScramCredentials(c *conn, req *kmsg.DescribeUserSCRAMCredentialsRequest) (*kmsg.DescribeUserSCRAMCredentialsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	img := s.ctrl.Image()
	users := img.ScramUsers()
	explicit := req.Users != nil && len(req.Users) > 0
	count := map[string]int{}
	if explicit {
		users = users[:0:0]
		for _, u := range req.Users {
			if count[u.Name]++; count[u.Name] == 1 {
				users = append(users, u.Name)
			}
		}
	}
	for _, u := range users {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u
		switch {
		case count[u] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = strPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + u)
		case len(img.Scram[u]) == 0:
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = strPtr("Attempt to describe a user credential that does not exist: " + u)
		}
		for _, m := range []auth.ScramMechanism{auth.ScramSHA256, auth.ScramSHA512} {
			if cred, ok := img.ScramCredential(u, m); ok && r.ErrorCode == 0 {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = m.Type, cred.Iterations
				r.CredentialInfos = append(r.CredentialInfos, ci)
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

// scramVisible is how long an Alter answer waits for the change to reach
// this broker's metadata.
const scramVisible = 10 * time.Second

func (s *Server) handleAlterUserScramCredentials(c *conn, req *kmsg.AlterUserSCRAMCredentialsRequest) (*kmsg.AlterUserSCRAMCredentialsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var changes []cluster.ScramChange
	errs := map[string]error{}
	var order []string
	note := func(user string) {
		if _, seen := errs[user]; !seen {
			errs[user] = nil
			order = append(order, user)
		}
	}
	for _, d := range req.Deletions {
		note(d.Name)
		m, ok := auth.ScramMechanismByType(d.Mechanism)
		if !ok {
			errs[d.Name] = &apiError{code: kerr.UnsupportedSaslMechanism, msg: fmt.Sprintf("unknown SCRAM mechanism %d", d.Mechanism)}
			continue
		}
		changes = append(changes, cluster.ScramChange{User: d.Name, Mechanism: m, Delete: true})
	}
	for _, u := range req.Upsertions {
		note(u.Name)
		m, ok := auth.ScramMechanismByType(u.Mechanism)
		if !ok {
			errs[u.Name] = &apiError{code: kerr.UnsupportedSaslMechanism, msg: fmt.Sprintf("unknown SCRAM mechanism %d", u.Mechanism)}
			continue
		}
		changes = append(changes, cluster.ScramChange{User: u.Name, Mechanism: m, Salt: u.Salt, SaltedPassword: u.SaltedPassword, Iterations: u.Iterations})
	}
	var kept []cluster.ScramChange
	for _, ch := range changes {
		if errs[ch.User] == nil {
			kept = append(kept, ch)
		}
	}
	if s.ctrl.Quorum() && !s.ctrl.IsActive() && !s.controllerListeners[c.listener] {
		return s.forwardScram(c, req, kept)
	}
	if len(kept) > 0 {
		cerrs, offset, err := s.ctrl.AlterScram(kept)
		for _, ch := range kept {
			switch {
			case err != nil:
				errs[ch.User] = err
			case cerrs[ch.User] != nil:
				errs[ch.User] = cerrs[ch.User]
			}
		}
		if err == nil && offset >= 0 {
			if werr := s.ctrl.WaitApplied(offset, scramVisible); werr != nil {
				c.logger.Warn("SCRAM credentials committed but not yet applied here", "err", werr)
			}
			s.awaitBrokers(c, offset)
		}
	}
	for _, u := range order {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = u
		if err := errs[u]; err != nil {
			r.ErrorCode, r.ErrorMessage = kafkaCode(err), adminMessage(err)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

// forwardScram sends an Alter to the active controller and answers once
// this broker's metadata holds what the controller accepted, so that the
// client's next connection here authenticates with the new credential.
func (s *Server) forwardScram(c *conn, req *kmsg.AlterUserSCRAMCredentialsRequest, changes []cluster.ScramChange) (*kmsg.AlterUserSCRAMCredentialsResponse, error) {
	r, err := s.toController(context.Background(), req)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		seen := map[string]bool{}
		for _, d := range req.Deletions {
			seen[d.Name] = true
		}
		for _, u := range req.Upsertions {
			seen[u.Name] = true
		}
		for u := range seen {
			rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			rr.User, rr.ErrorCode, rr.ErrorMessage = u, kerr.NotController.Code, strPtr("the active controller is not reachable: "+err.Error())
			resp.Results = append(resp.Results, rr)
		}
		return resp, nil
	}
	resp := r.(*kmsg.AlterUserSCRAMCredentialsResponse)
	s.metrics.forwarded.WithLabelValues(kmsg.NameForKey(req.Key())).Inc()
	ok := map[string]bool{}
	for _, rr := range resp.Results {
		ok[rr.User] = rr.ErrorCode == 0
	}
	deadline := time.Now().Add(scramVisible)
	for time.Now().Before(deadline) && !scramApplied(s.ctrl.Image(), changes, ok) {
		time.Sleep(10 * time.Millisecond)
	}
	return resp, nil
}

// scramApplied is whether img shows the accepted changes.
func scramApplied(img *cluster.Image, changes []cluster.ScramChange, ok map[string]bool) bool {
	for _, ch := range changes {
		if !ok[ch.User] {
			continue
		}
		cred, exists := img.ScramCredential(ch.User, ch.Mechanism)
		if ch.Delete {
			if exists {
				return false
			}
			continue
		}
		if !exists || !bytes.Equal(cred.Salt, ch.Salt) || cred.Iterations != ch.Iterations {
			return false
		}
	}
	return true
}

// addBootstrapScram creates the --add-scram users, once in the cluster's
// life (Image.ScramBootstrapped): a restart does not bring back a user
// deleted since. Only the active controller can; a controller that is not
// keeps trying until the marker is in its metadata, so whichever
// controller is active applies them.
func (s *Server) addBootstrapScram() {
	defer s.wg.Done()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.ctrl.Image().ScramBootstrapped {
			s.logger.Info("bootstrap SCRAM users were applied before, once in the cluster's life: --add-scram ignored")
			return
		}
		if !s.ctrl.Quorum() || s.ctrl.IsActive() {
			errs, _, err := s.ctrl.AlterScram(s.bootstrapScram)
			if err == nil {
				for u, e := range errs {
					if e != nil {
						s.logger.Error("bootstrap SCRAM user refused", "user", u, "err", e)
					}
				}
				s.logger.Info("bootstrap SCRAM users in place", "users", len(s.bootstrapScram))
				return
			}
			s.logger.Debug("creating bootstrap SCRAM users", "err", err)
		}
		select {
		case <-s.stopping:
			return
		case <-tick.C:
		}
	}
}

// awaitBrokers waits, on the active controller of a cluster, until every
// live broker has reported in a heartbeat that its metadata reached
// offset, so that a SCRAM user exists on every broker when the Alter call
// returns (what users of Kafka miss, and KIP-900 works around at format
// time). A broker that does not report within two heartbeats and a second
// is logged and not waited for: it is slow or about to be fenced, and
// learns the credential when it catches up.
func (s *Server) awaitBrokers(c *conn, offset int64) {
	if !s.ctrl.Quorum() {
		return
	}
	interval := time.Duration(s.cfg.Int("broker.heartbeat.interval.ms")) * time.Millisecond
	deadline := time.Now().Add(2*interval + time.Second)
	for {
		var behind []int32
		for _, b := range s.ctrl.Image().LiveBrokers() {
			if b.ID == s.nodeID {
				continue // its own image was waited for
			}
			if v, ok := s.metaOffsets.Load(b.ID); !ok || v.(int64) < offset {
				behind = append(behind, b.ID)
			}
		}
		if len(behind) == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.logger.Warn("SCRAM credentials committed; brokers have not reported them applied yet", "brokers", behind, "offset", offset)
			return
		}
		select {
		case <-s.stopping:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
