package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/config"
)

// Who a connection is (docs/security.md). Each listener has a security
// protocol: PLAINTEXT and SSL connections are authenticated once accepted
// (ANONYMOUS, or the client certificate's principal on SSL); SASL_PLAINTEXT
// and SASL_SSL connections are served ApiVersions, SaslHandshake and
// SaslAuthenticate only, in frames of at most
// sasl.server.max.receive.size, until SaslAuthenticate succeeds.
//
// The principal is conn.principal, set before the first request an
// authorizer would judge and never changed afterwards; handlers read it
// with c.Principal().

// listenerSecurity is one listener's security settings, built at start.
type listenerSecurity struct {
	name     string
	protocol string
	tls      *auth.ServerTLS // SSL, SASL_SSL
	mapper   *auth.PrincipalMapper
	// mechanisms are sasl.enabled.mechanisms of a SASL listener.
	mechanisms []string
	plainUsers auth.Users
	oauth      *auth.OAuthValidator
	// maxReauth is connections.max.reauth.ms by mechanism: 0 lets
	// sessions live as long as their credential.
	maxReauth map[string]time.Duration
}

// tlsHandshakeTimeout bounds a TLS handshake, which runs on the
// connection's goroutine so that a slow client never holds up accept.
const tlsHandshakeTimeout = 10 * time.Second

// securityHandlers are the authentication APIs, served on every listener.
// SaslHandshake v0 (tokens without Kafka framing afterwards) is not
// served: every current client sends v1.
func (s *Server) securityHandlers() map[int16]handler {
	return map[int16]handler{
		kmsg.SASLHandshake.Int16():                {min: 1, max: 1, fn: typed(s.handleSaslHandshake)},
		kmsg.SASLAuthenticate.Int16():             {min: 0, max: 2, fn: typed(s.handleSaslAuthenticate)},
		kmsg.DescribeUserSCRAMCredentials.Int16(): {min: 0, max: 0, fn: typed(s.handleDescribeUserScramCredentials)},
		kmsg.AlterUserSCRAMCredentials.Int16():    {min: 0, max: 0, fn: typed(s.handleAlterUserScramCredentials)},
	}
}

// setupSecurity reads every listener's security settings; a keystore that
// does not load or JAAS users that do not parse stop the start.
func (s *Server) setupSecurity() error {
	ls, err := s.cfg.Listeners()
	if err != nil {
		return err
	}
	s.security = map[string]*listenerSecurity{}
	s.saslMaxReceive = int32(s.cfg.Int("sasl.server.max.receive.size"))
	s.failedAuthDelay = time.Duration(s.cfg.Int("connection.failed.authentication.delay.ms")) * time.Millisecond
	if _, err := rand.Read(s.scramFakeKey[:]); err != nil {
		return err
	}
	for _, l := range ls {
		sec := &listenerSecurity{name: l.Name, protocol: l.Protocol}
		get := func(name string) string { return s.cfg.ListenerString(l.Name, name) }
		if l.TLS() {
			sec.tls, err = auth.NewServerTLS(auth.TLSSettings{
				Listener:    l.Name,
				Keystore:    get("ssl.keystore.location"),
				KeyPassword: get("ssl.key.password"),
				Truststore:  get("ssl.truststore.location"),
				ClientAuth:  get("ssl.client.auth"),
				Protocols:   s.cfg.ListenerList(l.Name, "ssl.enabled.protocols"),
				Logger:      s.logger,
			})
			if err != nil {
				return fmt.Errorf("broker/server: %w", err)
			}
			if sec.mapper, err = auth.ParseMappingRules(get("ssl.principal.mapping.rules")); err != nil {
				return fmt.Errorf("broker/server: listener %s: %w", l.Name, err)
			}
		}
		if l.SASL() {
			sec.mechanisms = s.cfg.ListenerList(l.Name, "sasl.enabled.mechanisms")
			if slices.Contains(sec.mechanisms, auth.PLAIN) {
				if sec.plainUsers, err = auth.ParsePlainJAAS(get("plain.sasl.jaas.config")); err != nil {
					return fmt.Errorf("broker/server: listener.name.%s.plain.sasl.jaas.config: %w", strings.ToLower(l.Name), err)
				}
			}
			if slices.Contains(sec.mechanisms, auth.OAUTHBEARER) {
				if sec.oauth, err = s.oauthValidator(l.Name); err != nil {
					return fmt.Errorf("broker/server: listener %s: %w", l.Name, err)
				}
				if !l.TLS() && !loopback(l.Host) {
					// A bearer token is as good as a password to whoever
					// reads it off the wire, until it expires.
					s.logger.Warn("listener "+l.Name+" takes OAUTHBEARER tokens without TLS: anyone on the network path can read a token and use it until it expires; use SASL_SSL",
						"listener", l.Name)
				}
			}
			sec.maxReauth = map[string]time.Duration{}
			for _, m := range sec.mechanisms {
				ms, _ := strconv.ParseInt(s.cfg.ListenerMechanismString(l.Name, m, "connections.max.reauth.ms"), 10, 64)
				sec.maxReauth[m] = time.Duration(ms) * time.Millisecond
			}
		}
		s.security[l.Name] = sec
		if l.Protocol == "PLAINTEXT" && s.controllerNames[l.Name] && s.cfg.IsSet("controller.quorum.voters") && !loopback(l.Host) {
			s.logger.Warn("controller listener "+l.Name+" is PLAINTEXT on the network: anyone who reaches "+l.Addr()+" can register brokers, join Raft, change SCRAM users and quotas, and create and delete ACLs (nothing there is judged by the authorizer); secure it or firewall it (docs/security.md, \"Securing the cluster's own traffic\")", "listener", l.Name)
		}
		if s.openListener(l.Protocol, l.Name, l.Host) {
			s.logger.Warn("listener "+l.Name+" accepts unauthenticated PLAINTEXT connections from the network: anyone who reaches "+l.Addr()+
				" can read, write and delete every topic (no authorizer, or User:ANONYMOUS in super.users); use SSL, SASL_SSL or a firewall (docs/security.md)", "listener", l.Name)
		}
	}
	return nil
}

// oauthValidator reads a listener's sasl.oauthbearer.* settings, each of
// which may be given for the listener and mechanism, the listener, or the
// broker, and loads the JWKS.
func (s *Server) oauthValidator(listener string) (*auth.OAuthValidator, error) {
	get := func(name string) string { return s.cfg.ListenerMechanismString(listener, "oauthbearer", name) }
	num := func(name string) int64 { n, _ := strconv.ParseInt(get(name), 10, 64); return n }
	return auth.NewOAuthValidator(auth.OAuthSettings{
		JWKSURL:   get("sasl.oauthbearer.jwks.endpoint.url"),
		Refresh:   time.Duration(num("sasl.oauthbearer.jwks.endpoint.refresh.ms")) * time.Millisecond,
		Audience:  config.SplitList(get("sasl.oauthbearer.expected.audience")),
		Issuer:    get("sasl.oauthbearer.expected.issuer"),
		SubClaim:  get("sasl.oauthbearer.sub.claim.name"),
		ClockSkew: time.Duration(num("sasl.oauthbearer.clock.skew.seconds")) * time.Second,
		Logger:    s.logger.With("listener", listener),
	})
}

// loopback is whether a listener host binds the loopback interface only.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// secure wraps an accepted connection for its listener: TLS on SSL and
// SASL_SSL listeners (the handshake itself happens in authenticate, on the
// connection's goroutine).
func (s *Server) secure(listener string, nc net.Conn) net.Conn {
	if sec := s.security[listener]; sec != nil && sec.tls != nil {
		return tls.Server(nc, sec.tls.Config())
	}
	return nc
}

// authenticate runs what a connection must do before its first request:
// the TLS handshake, and the principal of its client certificate. A
// failure is logged with the listener and closes the connection.
func (c *conn) authenticate() error {
	c.principal = auth.Anonymous
	sec := c.s.security[c.listener]
	if sec == nil {
		return nil
	}
	c.saslPending = strings.HasPrefix(sec.protocol, "SASL_")
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.s.authFailures.WithLabelValues(c.listener, "tls").Inc()
		c.logger.Info("TLS handshake failed", "err", err)
		return errClose
	}
	if sec.protocol != "SSL" {
		return nil // SASL_SSL: SASL names the principal
	}
	p, err := auth.CertPrincipal(tc.ConnectionState(), sec.mapper)
	if err != nil && !errors.Is(err, auth.ErrNoClientCert) {
		c.s.authFailures.WithLabelValues(c.listener, "tls").Inc()
		c.logger.Info("client certificate maps to no principal; closing", "err", err)
		return errClose
	}
	c.principal = p
	return nil
}

// Principal is who the connection authenticated as: ANONYMOUS on PLAINTEXT
// and on SSL without a client certificate, the certificate's mapped name
// on SSL, the SASL user on SASL listeners. It is what an authorizer judges.
func (c *conn) Principal() auth.Principal { return c.principal }

// preAuthAllowed are the APIs a SASL connection may send before it has
// authenticated, as in Kafka.
var preAuthAllowed = map[int16]bool{
	kmsg.ApiVersions.Int16():      true,
	kmsg.SASLHandshake.Int16():    true,
	kmsg.SASLAuthenticate.Int16(): true,
}

// checkPreAuth closes a SASL connection that sends anything else before
// authenticating: most often a client configured for PLAINTEXT or SSL
// pointed at a SASL listener, which the log line says.
func (c *conn) checkPreAuth(key int16) error {
	if c.exchange != nil && key != kmsg.SASLAuthenticate.Int16() {
		// As Kafka's authenticator: after SaslHandshake only
		// SaslAuthenticate. A re-authentication begun and never finished
		// would otherwise keep an expired session served as its old
		// principal.
		c.s.authFailures.WithLabelValues(c.listener, "sasl").Inc()
		c.logger.Info("request other than SaslAuthenticate after SaslHandshake; closing the connection",
			"principal", c.principal.String(), "api", kmsg.NameForKey(key), "client_id", clip(c.clientID))
		return errClose
	}
	if !c.saslPending && !c.sessionExpiry.IsZero() && key != kmsg.SASLHandshake.Int16() && key != kmsg.SASLAuthenticate.Int16() &&
		!time.Now().Before(c.sessionExpiry) {
		// KIP-368, as Kafka's SocketServer: a session that has expired
		// may only re-authenticate; anything else closes the connection,
		// and the client reconnects and logs in.
		c.s.authFailures.WithLabelValues(c.listener, "session_expired").Inc()
		c.logger.Info("SASL session expired without re-authentication; closing the connection",
			"principal", c.principal.String(), "api", kmsg.NameForKey(key), "client_id", clip(c.clientID))
		return errClose
	}
	if !c.saslPending || preAuthAllowed[key] {
		return nil
	}
	c.s.authFailures.WithLabelValues(c.listener, "unauthenticated_request").Inc()
	c.logger.Warn(fmt.Sprintf("%s before SASL authentication on listener %s (%s); closing the connection: the client must use security.protocol=%s",
		kmsg.NameForKey(key), c.listener, c.s.security[c.listener].protocol, c.s.security[c.listener].protocol), "client_id", clip(c.clientID))
	return errClose
}

func newAuthMetrics(reg prometheus.Registerer) *prometheus.CounterVec {
	m := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tributary_broker_authentication_failures_total",
		Help: "Connections that failed to authenticate, by listener and why: tls (handshake or certificate), sasl (wrong credentials or a malformed exchange), mechanism (not enabled), sasl_on_plaintext (SASL tried on a listener without it), unauthenticated_request (a request before SASL), unauthenticated_peer (a peer's API or Raft from a connection that did not authenticate, on a secured listener), session_expired (a request after the SASL session ended, KIP-368) (Kafka failed-authentication-total)."},
		[]string{"listener", "reason"})
	reg.MustRegister(m)
	return m
}

// clipLen is how much of a string a stranger chose (a mechanism name, a
// client id, a user name in a reason) is logged before authentication:
// enough to recognise it, not enough to fill the log.
const clipLen = 100

func clip(s string) string {
	if len(s) <= clipLen {
		return s
	}
	return s[:clipLen] + fmt.Sprintf("...(%d bytes)", len(s))
}

// frameLimit is the largest frame the connection may send now.
func (c *conn) frameLimit() int32 {
	if c.saslPending {
		return min(c.s.maxRequestBytes, c.s.saslMaxReceive)
	}
	return c.s.maxRequestBytes
}
