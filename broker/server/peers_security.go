package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/internal/kwire"
)

// Peers authenticate each other (docs/security.md, "Securing the cluster's
// own traffic"). A node's own connections use the security of the
// listener they dial: the controller listener (controller.listener.names)
// for registration, heartbeats, ISR changes, forwarded requests and Raft,
// the inter-broker listener for replica fetches; config.PeerClient says
// how. On the receiving side, a secured listener serves the peers' APIs
// only to an authenticated connection (conn.peer):
//
//   - a controller listener authenticates every connection before its
//     first request other than ApiVersions and the SASL ones (SASL
//     listeners close it otherwise, SSL ones require a client
//     certificate), and a Raft connection on a secured controller listener
//     is a Kafka connection that authenticated and then sent raftMagic:
//     the server hands it to Raft only then (raftUpgrade);
//   - a replica Fetch on a secured listener needs an authenticated
//     principal: an anonymous one gets CLUSTER_AUTHORIZATION_FAILED.
//
// PLAINTEXT listeners authenticate nobody and keep serving peers as
// before, for clusters on a network only their nodes reach.

// peerSecurity are this node's logins to its peers.
type peerSecurity struct {
	controller  kwire.Security
	interBroker kwire.Security

	mu     sync.Mutex
	logged map[string]time.Time // per kind of peer, the last failure logged
}

// setupPeers builds the logins from the controller and inter-broker
// listeners' settings (checked by the config already).
func (s *Server) setupPeers() error {
	s.peers = &peerSecurity{logged: map[string]time.Time{}}
	var err error
	if pc, e := s.cfg.ControllerClient(); e == nil {
		if s.peers.controller, err = s.peerLogin(pc); err != nil {
			return err
		}
	}
	if s.broker {
		if pc, e := s.cfg.InterBrokerClient(); e == nil {
			if s.peers.interBroker, err = s.peerLogin(pc); err != nil {
				return err
			}
		}
	}
	if s.raftConns != nil && (s.peers.controller.TLS != nil || s.peers.controller.SASL != nil) {
		sec := s.peers.controller
		id := fmt.Sprintf("tributary-raft-%d", s.nodeID)
		s.raftConns.Secure = func(nc net.Conn, addr string, deadline time.Time) (net.Conn, error) {
			nc, err := kwire.Secure(nc, addr, id, sec, deadline)
			if err != nil {
				s.peerAuthFailed("raft", addr, err)
			}
			return nc, err
		}
	}
	return nil
}

// peerLogin is the kwire.Security of a PeerClient: the listener's own
// TLS files both ways, and its SASL user.
func (s *Server) peerLogin(pc config.PeerClient) (kwire.Security, error) {
	var sec kwire.Security
	if pc.Listener.TLS() {
		ls := s.security[pc.Listener.Name]
		if ls == nil || ls.tls == nil {
			return sec, fmt.Errorf("broker/server: listener %s has no TLS settings to dial peers with", pc.Listener.Name)
		}
		st := ls.tls
		sec.TLS = func(host string) *tls.Config { return st.ClientConfig(host, pc.VerifyHost) }
	}
	if pc.Listener.SASL() {
		var m sasl.Mechanism
		switch pc.Mechanism {
		case auth.PLAIN:
			m = plain.Auth{User: pc.Username, Pass: pc.Password}.AsMechanism()
		case "SCRAM-SHA-256":
			m = scram.Auth{User: pc.Username, Pass: pc.Password}.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			m = scram.Auth{User: pc.Username, Pass: pc.Password}.AsSha512Mechanism()
		default:
			return sec, fmt.Errorf("broker/server: listener %s: SASL mechanism %s cannot log in to peers", pc.Listener.Name, pc.Mechanism)
		}
		sec.SASL = m
	}
	return sec, nil
}

// peerAuthFailed logs that a peer refused this node's credentials, at most
// once every 10 s per kind of connection: the callers retry every few
// hundred milliseconds, and one clear line is what the operator needs.
func (s *Server) peerAuthFailed(kind, addr string, err error) {
	if !refusedCredentials(err) {
		return
	}
	p := s.peers
	p.mu.Lock()
	if time.Since(p.logged[kind]) < 10*time.Second {
		p.mu.Unlock()
		return
	}
	p.logged[kind] = time.Now()
	p.mu.Unlock()
	var hint string
	switch kind {
	case "replica fetch":
		hint = "check sasl.mechanism.inter.broker.protocol and the username and password of the inter-broker listener's listener.name.<l>.<mechanism>.sasl.jaas.config (a SCRAM user must exist: tributary broker --add-scram), or its certificates"
	default:
		hint = "check sasl.mechanism.controller.protocol and the username and password of the controller listener's listener.name.<l>.plain.sasl.jaas.config (the controllers must list the same user), or its certificates"
	}
	s.logger.Error("a peer refused this node's credentials: "+hint, "connection", kind, "peer", addr, "err", err)
}

// refusedCredentials is whether err says a peer refused this node's
// login: a failed SASL exchange or TLS handshake, or, under TLS 1.3, where
// the server judges the client certificate after the client's handshake
// is done, the alert that arrives on the first request.
func refusedCredentials(err error) bool {
	var op *net.OpError // crypto/tls reports a peer's alert so
	return errors.Is(err, kwire.ErrAuthentication) || errors.As(err, &op) && op.Op == "remote error"
}

// dialController connects to a controller listener as this node.
func (s *Server) dialController(ctx context.Context, addr string) (*kwire.Conn, error) {
	conn, err := kwire.DialSecure(ctx, addr, fmt.Sprintf("tributary-broker-%d", s.nodeID), s.peers.controller)
	if err != nil {
		s.peerAuthFailed("controller", addr, err)
	}
	return conn, err
}

// dialReplica connects to a leader's inter-broker listener as this broker.
func (s *Server) dialReplica(ctx context.Context, addr, clientID string) (*kwire.Conn, error) {
	conn, err := kwire.DialSecure(ctx, addr, clientID, s.peers.interBroker)
	if err != nil {
		s.peerAuthFailed("replica fetch", addr, err)
	}
	return conn, err
}

// peer is whether the connection may send what only peers send: on a
// listener that authenticates (anything but PLAINTEXT), an authenticated
// principal.
func (c *conn) peer() bool {
	sec := c.s.security[c.listener]
	if sec == nil || sec.protocol == "PLAINTEXT" {
		return true
	}
	if c.saslPending || c.principal == auth.Anonymous {
		return false
	}
	// With an authorizer the peer's principal also needs CLUSTER_ACTION on
	// the cluster, as Kafka's inter-broker APIs do (super.users usually
	// names the brokers' own principal). Asked of the authorizer itself:
	// allowed() judges nothing on controller listeners, and this is what
	// keeps a stranger with a valid login off them.
	if c.s.authorizer == nil {
		return true
	}
	select {
	case <-c.s.serving: // s.ctrl, and so the ACLs, exist
	default:
		// Before the metadata is loaded there are no ACLs to judge by:
		// only super users, as Kafka's early-start listeners (KIP-801).
		return slices.Contains(c.s.authorizer.SuperUsers, c.principal.String())
	}
	return c.s.authorizer.Authorize(c.s.ctrl.Image().Acls, acl.Request{Principal: c.principal.String(), Host: c.host()},
		opClusterAction, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

// refusePeer logs an unauthenticated connection's attempt at a peer's API,
// rate-limited like peerAuthFailed on the receiving side.
func (c *conn) refusePeer(what string) {
	c.s.authFailures.WithLabelValues(c.listener, "unauthenticated_peer").Inc()
	p := c.s.peers
	p.mu.Lock()
	key := "refused " + c.listener + " " + what
	if time.Since(p.logged[key]) < 10*time.Second {
		p.mu.Unlock()
		return
	}
	p.logged[key] = time.Now()
	p.mu.Unlock()
	c.logger.Warn(what+" from a connection that did not authenticate as a peer, on a secured listener; refused: peers must log in, and with an authorizer be super users or have CLUSTER_ACTION (docs/security.md)",
		"principal", c.principal.String(), "client_id", clip(c.clientID))
}

// errRaft says the connection's next byte is raftMagic.
var errRaft = errors.New("broker/server: Raft connection")

// raftCapable is whether Raft may arrive on c after authentication: a
// secured controller listener of a node in a quorum. PLAINTEXT controller
// listeners hand Raft over at accept (cluster.RaftConns.Split).
func (c *conn) raftCapable() bool {
	if c.s.raftConns == nil || !c.s.controllerListeners[c.listener] {
		return false
	}
	sec := c.s.security[c.listener]
	return sec != nil && sec.protocol != "PLAINTEXT"
}

// raftUpgrade hands an authenticated connection that switched to Raft to
// the quorum's transport; it reports whether it did (the connection is
// then Raft's, not to be closed here).
func (c *conn) raftUpgrade() bool {
	if !c.peer() {
		c.refusePeer("a Raft connection")
		return false
	}
	c.nc.SetDeadline(time.Time{})
	c.s.raftConns.HandOff(&bufferedConn{Conn: c.nc, r: c.r})
	return true
}

// bufferedConn reads what the Kafka connection's reader already holds
// before the socket.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// peerLoginAPI is whether a controller listener takes key before its
// checks: the SASL login every secured peer connection starts with, and
// the ApiVersions a Java client sends before it.
func (c *conn) peerLoginAPI(key int16) bool {
	if sec := c.s.security[c.listener]; sec == nil || sec.mechanisms == nil {
		return false // no SASL here: a PLAINTEXT broker-only node's takes Raft alone
	}
	return key == kmsg.SASLHandshake.Int16() || key == kmsg.SASLAuthenticate.Int16() ||
		key == kmsg.ApiVersions.Int16() && c.saslPending
}

func init() {
	// Kafka's controllers list the SASL APIs too; on a listener without
	// SASL they answer that it takes none (17_sasl_handshake.go).
	controllerAPIs[kmsg.SASLHandshake.Int16()] = true
	controllerAPIs[kmsg.SASLAuthenticate.Int16()] = true
}

// isReplicaFetch is whether a Fetch comes from a follower.
func isReplicaFetch(req *kmsg.FetchRequest) bool {
	id := req.ReplicaID
	if req.Version >= 15 {
		id = req.ReplicaState.ID
	}
	return id >= 0
}

// acceptRaftEarly starts accepting on the secured controller listeners
// before the quorum opens: Raft arrives there through the Kafka protocol
// (a login, then raftMagic), and the voters must reach each other to elect
// the controller the rest of the start waits for. Requests other than the
// login wait until the server serves (awaitServing). It returns the
// listeners it started.
func (s *Server) acceptRaftEarly() map[string]bool {
	started := map[string]bool{}
	if s.raftConns == nil {
		return started
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, ln := range s.listeners {
		if sec := s.security[name]; s.controllerListeners[name] && sec != nil && sec.protocol != "PLAINTEXT" {
			started[name] = true
			s.wg.Add(1)
			go s.accept(name, ln)
		}
	}
	return started
}

// awaitServing holds a request that arrived on a listener accepting early
// until the server serves; false if it stops first.
func (c *conn) awaitServing() bool {
	select {
	case <-c.s.serving:
		return true
	case <-c.s.stopping:
		return false
	}
}
