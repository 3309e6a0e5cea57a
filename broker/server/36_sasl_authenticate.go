package server

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/auth"
)

// handleSaslAuthenticate carries one step of the exchange SaslHandshake
// chose. A failure is answered with SASL_AUTHENTICATION_FAILED and a
// message the client shows (never whether the user exists), logged with
// the reason, and the connection closed once the answer is sent, as Kafka
// does.
func (s *Server) handleSaslAuthenticate(c *conn, req *kmsg.SASLAuthenticateRequest) (*kmsg.SASLAuthenticateResponse, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if c.exchange == nil {
		msg := "SaslAuthenticate without a SaslHandshake first"
		if !c.saslPending {
			msg = "listener " + c.listener + " takes no SASL authentication now"
		}
		resp.ErrorCode, resp.ErrorMessage = kerr.IllegalSaslState.Code, &msg
		c.closeAfter = true
		return resp, nil
	}
	out, err := c.exchange.Step(req.SASLAuthBytes)
	if err != nil {
		var ae *auth.AuthError
		msg := "Authentication failed: malformed " + c.mechanism + " message"
		reason := clip(err.Error())
		if errors.As(err, &ae) {
			msg, reason = ae.Message, ae.Reason
		}
		s.authFailures.WithLabelValues(c.listener, "sasl").Inc()
		c.logger.Info("SASL authentication failed", "mechanism", c.mechanism, "reason", reason, "client_id", clip(c.clientID))
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, &msg
		c.closeAfter = true
		// Kafka's connection.failed.authentication.delay.ms: each guess
		// costs the guesser this long, on this connection's goroutine only.
		select {
		case <-time.After(s.failedAuthDelay):
		case <-s.stopping:
		}
		return resp, nil
	}
	resp.SASLAuthBytes = out
	if c.exchange.Done() {
		p := c.exchange.Principal()
		if !c.saslPending && p != c.principal {
			// KIP-368: a re-authentication may renew the session, never
			// change who the connection is.
			msg := "Cannot change principals during re-authentication from " + c.principal.String() + ": " + p.String()
			s.authFailures.WithLabelValues(c.listener, "sasl").Inc()
			c.logger.Info("SASL re-authentication as another principal refused", "was", c.principal.String(), "principal", p.String(), "client_id", clip(c.clientID))
			resp.ErrorCode, resp.ErrorMessage, resp.SASLAuthBytes = kerr.SaslAuthenticationFailed.Code, &msg, nil
			c.closeAfter = true
			return resp, nil
		}
		lifetime := s.sessionLifetime(c, c.exchange)
		c.sessionExpiry = time.Time{}
		if lifetime > 0 {
			c.sessionExpiry = time.Now().Add(lifetime)
		}
		if req.Version >= 1 {
			resp.SessionLifetimeMillis = lifetime.Milliseconds()
		}
		reauth := !c.saslPending
		c.principal = p
		c.saslPending, c.exchange = false, nil
		c.logger.Debug("authenticated", "principal", c.principal.String(), "mechanism", c.mechanism, "reauthentication", reauth, "session_lifetime", lifetime)
	}
	return resp, nil
}

// sessionLifetime is how long the session just authenticated may live, as
// Kafka computes it: connections.max.reauth.ms, or the credential's
// expiry (an OAUTHBEARER token's exp) when sooner; 0 is unlimited. A
// credential already expired gives the smallest positive lifetime, so
// that the next request closes the connection.
func (s *Server) sessionLifetime(c *conn, ex auth.Exchange) time.Duration {
	limit := time.Duration(0)
	if sec := s.security[c.listener]; sec != nil {
		limit = sec.maxReauth[c.mechanism]
	}
	if e, ok := ex.(interface{ Expires() time.Time }); ok {
		left := time.Until(e.Expires())
		if left < time.Millisecond {
			left = time.Millisecond
		}
		if limit == 0 || left < limit {
			return left
		}
	}
	return limit
}
