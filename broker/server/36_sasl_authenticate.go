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
		c.principal = c.exchange.Principal()
		c.saslPending, c.exchange = false, nil
		c.logger.Debug("authenticated", "principal", c.principal.String(), "mechanism", c.mechanism)
	}
	return resp, nil
}
