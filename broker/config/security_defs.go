package config

import (
	"fmt"
	"strings"
)

// listenerDefs are the security properties that a listener may override
// with Kafka's prefix, listener.name.<listener>.<property> (lower-case
// listener name, as Kafka writes it); the unprefixed form is the broker
// default. Mechanism-scoped SASL settings take the mechanism too:
// listener.name.sasl_ssl.plain.sasl.jaas.config.
var listenerDefs = defs(
	Def{Name: "ssl.keystore.type", Type: String, Default: "PEM", Check: oneOf("PEM"),
		Doc: "The format of ssl.keystore.location. Tributary reads PEM only (Kafka's default is JKS): a file holding the private key and the certificate chain, leaf first."},
	Def{Name: "ssl.keystore.location", Type: String, NoDefault: true,
		Doc: "The PEM file of the listener's private key (PKCS#8, PKCS#1 or SEC 1; encrypted PKCS#8 with ssl.key.password) and certificate chain. Re-read when it changes: new connections get the new certificate without a restart."},
	Def{Name: "ssl.keystore.certificate.chain", Type: Password, NoDefault: true, Sensitive: true,
		Doc: "Not supported: put the chain in the file at ssl.keystore.location."},
	Def{Name: "ssl.key.password", Type: Password, NoDefault: true, Sensitive: true,
		Doc: "The password of an encrypted PKCS#8 private key (-----BEGIN ENCRYPTED PRIVATE KEY-----, PBES2 with PBKDF2 and AES-CBC, what openssl pkcs8 -topk8 -v2 aes-256-cbc writes)."},
	Def{Name: "ssl.keystore.password", Type: Password, NoDefault: true, Sensitive: true,
		Doc: "Accepted for Kafka's PEM keystores, where it is unused; see ssl.key.password."},
	Def{Name: "ssl.truststore.type", Type: String, Default: "PEM", Check: oneOf("PEM"),
		Doc: "The format of ssl.truststore.location: PEM certificates (Kafka's default is JKS)."},
	Def{Name: "ssl.truststore.location", Type: String, NoDefault: true,
		Doc: "PEM CA certificates that client certificates must chain to when ssl.client.auth is requested or required, and, on the controller and inter-broker listeners, that a peer's certificate must chain to when this node connects to it (the system's CAs without one). Re-read when it changes."},
	Def{Name: "ssl.truststore.password", Type: Password, NoDefault: true, Sensitive: true,
		Doc: "Accepted for Kafka's PEM truststores, where it is unused."},
	Def{Name: "ssl.enabled.protocols", Type: List, Default: "TLSv1.2,TLSv1.3", Check: listOf("TLSv1.2", "TLSv1.3"),
		Doc: "The TLS versions a listener accepts."},
	Def{Name: "ssl.protocol", Type: String, Default: "TLSv1.3", Check: oneOf("TLS", "TLSv1.2", "TLSv1.3"),
		Doc: "Accepted for compatibility; ssl.enabled.protocols decides."},
	Def{Name: "ssl.cipher.suites", Type: List, Default: "",
		Doc: "Accepted; Go's TLS 1.2 defaults (ECDHE with AES-GCM or ChaCha20-Poly1305) apply, and TLS 1.3 suites are not configurable."},
	Def{Name: "ssl.client.auth", Type: String, Default: "none", Check: oneOf("none", "requested", "required"),
		Doc: "Whether the listener asks clients for a certificate: none, requested (verified against the truststore when given) or required. A verified certificate names the principal (ssl.principal.mapping.rules)."},
	Def{Name: "ssl.principal.mapping.rules", Type: String, Default: "DEFAULT",
		Doc: "Kafka's rules mapping a client certificate's distinguished name (RFC 2253, e.g. CN=alice,O=Example) to a principal name: RULE:pattern/replacement/[LU], ..., DEFAULT (the whole name). The first matching rule wins."},
	Def{Name: "ssl.endpoint.identification.algorithm", Type: String, Default: "https",
		Doc: "On the controller and inter-broker listeners, what this broker checks of a peer's certificate when it connects to it: https, that the certificate names the host it dialled; empty, the chain only (any other value counts as https). A broker does not check its clients' host names."},
	Def{Name: "sasl.enabled.mechanisms", Type: List, Default: "SCRAM-SHA-256,SCRAM-SHA-512",
		Check: listOf("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"),
		Doc:   "The SASL mechanisms a SASL_PLAINTEXT or SASL_SSL listener offers. Kafka's default is GSSAPI, which Tributary does not offer; PLAIN needs users in plain.sasl.jaas.config, OAUTHBEARER a JWKS in sasl.oauthbearer.jwks.endpoint.url."},
	Def{Name: "connections.max.reauth.ms", Type: Long, Default: "0", Check: atLeast(0),
		Doc: "The longest a SASL session lives before the client must re-authenticate on its connection (KIP-368; SaslAuthenticate v1+ tells the client). A connection whose session has expired is closed at its next request. 0: sessions do not expire, except OAUTHBEARER ones, which end when their token expires."},
)

// oauthDefs are the OAUTHBEARER validation settings (KIP-768). Like
// Kafka, they may also be set for one listener and mechanism:
// listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.expected.audience.
var oauthDefs = defs(
	Def{Name: "sasl.oauthbearer.jwks.endpoint.url", Type: String, NoDefault: true,
		Doc: "Where the keys that sign OAUTHBEARER tokens are: the identity provider's JWKS (https:// or http://), or a file:// holding one. Read at start (the broker does not start without it), every sasl.oauthbearer.jwks.endpoint.refresh.ms, and when a token names a key the set lacks (at most every 10 s)."},
	Def{Name: "sasl.oauthbearer.jwks.endpoint.refresh.ms", Type: Long, Default: "3600000", Check: atLeast(1000),
		Doc: "How often the JWKS is read again."},
	Def{Name: "sasl.oauthbearer.expected.audience", Type: List, Default: "",
		Doc: "When set, a token's aud claim must name one of these."},
	Def{Name: "sasl.oauthbearer.expected.issuer", Type: String, NoDefault: true,
		Doc: "When set, a token's iss claim must be this."},
	Def{Name: "sasl.oauthbearer.sub.claim.name", Type: String, Default: "sub",
		Doc: "The claim that names the principal (User:<value>)."},
	Def{Name: "sasl.oauthbearer.scope.claim.name", Type: String, Default: "scope",
		Doc: "Accepted for Kafka's configs; scopes are not checked."},
	Def{Name: "sasl.oauthbearer.clock.skew.seconds", Type: Int, Default: "30", Check: atLeast(0),
		Doc: "How far the broker's clock may be from the token issuer's when exp and nbf are checked."},
)

// listenerOnlyDefs exist only with the listener prefix, as in Kafka: a
// JAAS config names the listener and mechanism it is for.
var listenerOnlyDefs = defs(
	Def{Name: "plain.sasl.jaas.config", Type: Password, NoDefault: true, Sensitive: true,
		Doc: "The PLAIN users, in Kafka's form: org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\" user_bob=\"bob-secret\"; (the username and password options are the broker's own identity when it logs in to a peer's controller or inter-broker listener with PLAIN). Usually per listener: listener.name.sasl_ssl.plain.sasl.jaas.config."},
	Def{Name: "scram-sha-256.sasl.jaas.config", Type: Password, NoDefault: true, Sensitive: true,
		Doc: "SCRAM users live in the metadata log (AlterUserScramCredentials, tributary broker --add-scram); on the inter-broker listener, the username and password options are what this broker logs in with when sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256."},
	Def{Name: "scram-sha-512.sasl.jaas.config", Type: Password, NoDefault: true, Sensitive: true,
		Doc: "SCRAM users live in the metadata log (AlterUserScramCredentials, tributary broker --add-scram); on the inter-broker listener, the username and password options are what this broker logs in with when sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512."},
	Def{Name: "oauthbearer.sasl.jaas.config", Type: Password, NoDefault: true, Sensitive: true,
		Doc: "Accepted for Kafka's configs (OAuthBearerLoginModule required;); the validation settings are sasl.oauthbearer.*."},
	Def{Name: "oauthbearer.sasl.server.callback.handler.class", Type: String, NoDefault: true,
		Doc: "Accepted for Kafka's configs: Tributary always validates OAUTHBEARER tokens as Kafka's OAuthBearerValidatorCallbackHandler does, against sasl.oauthbearer.jwks.endpoint.url."},
)

// securityDefs are broker-wide only.
var securityDefs = []Def{
	{Name: "connection.failed.authentication.delay.ms", Type: Int, Default: "100", Check: atLeast(0),
		Doc: "How long a failed authentication (SASL) waits before its answer and the close, so that guessing passwords is slow; 0 answers at once."},
	{Name: "sasl.server.max.receive.size", Type: Int, Default: "524288", Check: atLeast(64),
		Doc: "The largest frame a connection may send before it has authenticated (SASL listeners); a larger one closes it."},
	{Name: "sasl.mechanism.inter.broker.protocol", Type: String, Default: "GSSAPI",
		Doc: "The SASL mechanism this broker logs in with on a SASL inter-broker listener (replica fetches): PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, with the user and password of listener.name.<listener>.<mechanism>.sasl.jaas.config (username=, password=). Kafka's default, GSSAPI, is not offered."},
	{Name: "sasl.mechanism.controller.protocol", Type: String, Default: "GSSAPI",
		Doc: "The SASL mechanism nodes log in with on a SASL controller listener (registration, heartbeats, forwarding, Raft): PLAIN, with the user and password of listener.name.<controller listener>.plain.sasl.jaas.config (username=, password=). SCRAM is refused there, as in Kafka: its credentials travel in the metadata log, which a controller does not have before it has authenticated its peers."},
	{Name: "security.inter.broker.protocol", Type: String, Default: "PLAINTEXT", Check: oneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
		Doc: "Accepted for Kafka's configs; set inter.broker.listener.name (without it brokers reach each other at the first advertised listener)."},
}

func init() {
	// Kafka's documented form for re-authentication is per listener
	// and mechanism: listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms.
	for _, m := range []string{"plain", "scram-sha-256", "scram-sha-512", "oauthbearer"} {
		d := listenerDefs["connections.max.reauth.ms"]
		d.Name = m + ".connections.max.reauth.ms"
		listenerOnlyDefs[d.Name] = d
	}
	for name, d := range oauthDefs {
		listenerDefs[name] = d
		d.Name = "oauthbearer." + name
		listenerOnlyDefs[d.Name] = d
	}
	for _, d := range listenerDefs {
		if _, dup := BrokerDefs[d.Name]; dup {
			panic("config: " + d.Name + " defined twice")
		}
		BrokerDefs[d.Name] = d
	}
	for _, d := range securityDefs {
		if _, dup := BrokerDefs[d.Name]; dup {
			panic("config: " + d.Name + " defined twice")
		}
		BrokerDefs[d.Name] = d
	}
}

// listenerProperty resolves a listener.name.<l>.<property> name to the
// definition of its property; ok is false for a name without the prefix.
func listenerProperty(name string) (def Def, err error, ok bool) {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return Def{}, nil, false
	}
	l, prop, found := strings.Cut(rest, ".")
	if !found || l == "" {
		return Def{}, fmt.Errorf("%s is not listener.name.<listener>.<property>", name), true
	}
	if l != strings.ToLower(l) {
		// Kafka matches the lower-case form only; an upper-case one
		// would silently do nothing there.
		return Def{}, fmt.Errorf("%s: write the listener name in lower case, listener.name.%s.%s, as Kafka reads it", name, strings.ToLower(l), prop), true
	}
	d, known := listenerDefs[prop]
	if !known {
		d, known = listenerOnlyDefs[prop]
	}
	if !known {
		return Def{}, fmt.Errorf("%s: %s cannot be set per listener (the listener.name. prefix takes ssl.* and sasl properties)", name, prop), true
	}
	d.Name = name
	return d, nil, true
}

// ListenerString is a security property of one listener: its
// listener.name.<listener>.<name> override when set, else the broker-wide
// value or default.
func (b *Broker) ListenerString(listener, name string) string {
	if v, ok := b.set["listener.name."+strings.ToLower(listener)+"."+name]; ok {
		return v
	}
	return b.String(name)
}

// ListenerMechanismString is a SASL mechanism's setting on one listener:
// listener.name.<l>.<mechanism>.<name>, else ListenerString, as Kafka's
// callback handlers read their configs.
func (b *Broker) ListenerMechanismString(listener, mechanism, name string) string {
	if v, ok := b.set["listener.name."+strings.ToLower(listener)+"."+strings.ToLower(mechanism)+"."+name]; ok {
		return v
	}
	return b.ListenerString(listener, name)
}

// ListenerIsSet is whether a listener has name, either as its own override
// or broker-wide.
func (b *Broker) ListenerIsSet(listener, name string) bool {
	_, own := b.set["listener.name."+strings.ToLower(listener)+"."+name]
	return own || b.IsSet(name)
}

// ListenerList is ListenerString split as a list.
func (b *Broker) ListenerList(listener, name string) []string {
	return SplitList(b.ListenerString(listener, name))
}

// securityChecks refuses what the listeners cannot honour: a TLS listener
// without a keystore, a SASL listener without a usable mechanism, and a
// controller or inter-broker listener on which peers could not
// authenticate each other (peerChecks).
func (b *Broker) securityChecks() []string {
	ls, err := b.Listeners()
	if err != nil {
		return nil // reported by crossChecks
	}
	var errs []string
	names := map[string]bool{}
	for _, l := range ls {
		names[strings.ToLower(l.Name)] = true
	}
	for name := range b.set {
		if rest, ok := strings.CutPrefix(name, "listener.name."); ok {
			if l, _, _ := strings.Cut(rest, "."); !names[l] {
				errs = append(errs, fmt.Sprintf("%s names no listener of listeners (%s)", name, strings.Join(b.List("listeners"), ",")))
			}
		}
	}
	errs = append(errs, b.peerChecks(ls)...)
	for _, l := range ls {
		if l.Protocol == "PLAINTEXT" {
			continue
		}
		if l.TLS() && !b.ListenerIsSet(l.Name, "ssl.keystore.location") {
			errs = append(errs, fmt.Sprintf("listener %s is %s and needs listener.name.%s.ssl.keystore.location (or ssl.keystore.location): the PEM file of its key and certificate", l.Name, l.Protocol, strings.ToLower(l.Name)))
		}
		if l.SASL() {
			mechs := b.ListenerList(l.Name, "sasl.enabled.mechanisms")
			if len(mechs) == 0 {
				errs = append(errs, fmt.Sprintf("listener %s is %s but listener.name.%s.sasl.enabled.mechanisms is empty", l.Name, l.Protocol, strings.ToLower(l.Name)))
			}
			for _, m := range mechs {
				if m == "PLAIN" && !b.ListenerIsSet(l.Name, "plain.sasl.jaas.config") {
					errs = append(errs, fmt.Sprintf("listener %s enables PLAIN but has no users: set listener.name.%s.plain.sasl.jaas.config", l.Name, strings.ToLower(l.Name)))
				}
				if m == "OAUTHBEARER" && b.ListenerMechanismString(l.Name, "oauthbearer", "sasl.oauthbearer.jwks.endpoint.url") == "" {
					errs = append(errs, fmt.Sprintf("listener %s enables OAUTHBEARER but has no keys to check tokens with: set sasl.oauthbearer.jwks.endpoint.url (or listener.name.%s.oauthbearer.sasl.oauthbearer.jwks.endpoint.url)", l.Name, strings.ToLower(l.Name)))
				}
			}
		}
	}
	return errs
}

// TLS is whether the listener's protocol is SSL or SASL_SSL.
func (l Listener) TLS() bool { return l.Protocol == "SSL" || l.Protocol == "SASL_SSL" }

// SASL is whether the listener's protocol is SASL_PLAINTEXT or SASL_SSL.
func (l Listener) SASL() bool { return l.Protocol == "SASL_PLAINTEXT" || l.Protocol == "SASL_SSL" }
