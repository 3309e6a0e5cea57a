package server

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/auth"
)

// handleSaslHandshake picks the connection's SASL mechanism (KIP-152: the
// exchange then goes through SaslAuthenticate).
//
// On a listener without SASL Kafka answers ILLEGAL_SASL_STATE, which users
// find opaque; Tributary answers UNSUPPORTED_SASL_MECHANISM with no
// mechanisms, which clients print as "enabled mechanisms are []", and logs
// which listener the client should not have used SASL on.
func (s *Server) handleSaslHandshake(c *conn, req *kmsg.SASLHandshakeRequest) (*kmsg.SASLHandshakeResponse, error) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	sec := s.security[c.listener]
	if sec == nil || sec.mechanisms == nil {
		proto := "PLAINTEXT"
		if sec != nil {
			proto = sec.protocol
		}
		s.authFailures.WithLabelValues(c.listener, "sasl_on_"+strings.ToLower(proto)).Inc()
		c.logger.Warn("SASL handshake on listener "+c.listener+", which is "+proto+" and takes no SASL: the client should use security.protocol="+proto+" here, or connect to a SASL listener",
			"mechanism", clip(req.Mechanism), "client_id", clip(c.clientID))
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		resp.SupportedMechanisms = []string{}
		c.closeAfter = true
		return resp, nil
	}
	resp.SupportedMechanisms = sec.mechanisms
	switch {
	case c.exchange != nil, !c.saslPending && c.mechanism == "":
		resp.ErrorCode = kerr.IllegalSaslState.Code
		c.closeAfter = true
	case !c.saslPending && req.Mechanism != c.mechanism:
		// KIP-368: a re-authentication keeps its mechanism.
		s.authFailures.WithLabelValues(c.listener, "mechanism").Inc()
		c.logger.Info("re-authentication with another SASL mechanism refused", "mechanism", clip(req.Mechanism), "was", c.mechanism, "client_id", clip(c.clientID))
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		resp.SupportedMechanisms = []string{c.mechanism}
		c.closeAfter = true
	case !slices.Contains(sec.mechanisms, req.Mechanism):
		s.authFailures.WithLabelValues(c.listener, "mechanism").Inc()
		c.logger.Info("SASL mechanism not enabled on this listener", "mechanism", clip(req.Mechanism), "enabled", sec.mechanisms, "client_id", clip(c.clientID))
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.closeAfter = true
	case req.Mechanism == auth.PLAIN:
		c.exchange, c.mechanism = auth.NewPlain(sec.plainUsers), req.Mechanism
	case req.Mechanism == auth.OAUTHBEARER:
		c.exchange, c.mechanism = auth.NewOAuth(sec.oauth), req.Mechanism
	case !s.metadataCaughtUp.Load():
		c.logger.Info("SCRAM login before this broker's metadata has caught up; closing so that the client retries", "client_id", clip(c.clientID))
		return nil, errClose
	default:
		m, _ := auth.ScramMechanismByName(req.Mechanism)
		c.exchange, c.mechanism = auth.NewScram(m, s.scramLookup, s.scramFakeSaltKey()), req.Mechanism
	}
	return resp, nil
}

// scramFakeSaltKey is what unknown users' salts are made from: the
// cluster's secret, the same on every broker, or until the metadata has
// one, a random key of this broker.
func (s *Server) scramFakeSaltKey() []byte {
	if secret := s.ctrl.Image().Secret; secret != "" {
		return []byte("scram-unknown-user\x00" + secret)
	}
	return s.scramFakeKey[:]
}

// scramLookup reads credentials from the metadata this broker has applied.
func (s *Server) scramLookup(user string, m auth.ScramMechanism) (auth.ScramCredential, bool) {
	return s.ctrl.Image().ScramCredential(user, m)
}
