package config

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/tributary-io/tributary/broker/auth"
)

// Peers authenticate each other on the listeners they share: a node's own
// connections to the controller listeners (registration, heartbeats,
// forwarding, Raft) and to the inter-broker listener (replica fetches) use
// that listener's security protocol, its keystore as client certificate
// and truststore to verify the peer, and on SASL the mechanism Kafka names
// (sasl.mechanism.controller.protocol, sasl.mechanism.inter.broker.protocol)
// with the username and password of the listener's JAAS config, as Kafka's
// brokers do.

// PeerClient is how this node connects to peers on one listener.
type PeerClient struct {
	Listener Listener
	// Mechanism, Username and Password are the SASL login, on SASL
	// listeners.
	Mechanism, Username, Password string
	// VerifyHost is ssl.endpoint.identification.algorithm=https.
	VerifyHost bool
}

// ControllerListener is the controller listener this node dials peers on:
// the first of controller.listener.names, as Kafka's brokers dial it
// (every node of a cluster declares it the same way).
func (b *Broker) ControllerListener() (Listener, bool) {
	names := b.List("controller.listener.names")
	if len(names) == 0 {
		return Listener{}, false
	}
	return b.listenerNamed(strings.ToUpper(names[0]))
}

// InterBrokerListener is the listener brokers replicate over:
// inter.broker.listener.name, else the first advertised listener.
func (b *Broker) InterBrokerListener() (Listener, bool) {
	if n := b.String("inter.broker.listener.name"); n != "" {
		return b.listenerNamed(strings.ToUpper(n))
	}
	adv, err := b.AdvertisedListeners()
	if err != nil || len(adv) == 0 {
		return Listener{}, false
	}
	return b.listenerNamed(adv[0].Name)
}

// listenerNamed is this node's listener of that name; a name it does not
// listen on still has a protocol (the map's) for dialling peers.
func (b *Broker) listenerNamed(name string) (Listener, bool) {
	ls, err := b.Listeners()
	if err != nil {
		return Listener{}, false
	}
	for _, l := range ls {
		if l.Name == name {
			return l, true
		}
	}
	return Listener{}, false
}

// ControllerClient is how this node connects to controller listeners.
func (b *Broker) ControllerClient() (PeerClient, error) {
	l, ok := b.ControllerListener()
	if !ok {
		return PeerClient{}, fmt.Errorf("no controller listener")
	}
	return b.peerClient(l, "sasl.mechanism.controller.protocol")
}

// InterBrokerClient is how this broker connects to its peers' inter-broker
// listener.
func (b *Broker) InterBrokerClient() (PeerClient, error) {
	l, ok := b.InterBrokerListener()
	if !ok {
		return PeerClient{}, fmt.Errorf("no inter-broker listener")
	}
	return b.peerClient(l, "sasl.mechanism.inter.broker.protocol")
}

func (b *Broker) peerClient(l Listener, mechKey string) (PeerClient, error) {
	// Java takes any algorithm name; only an empty one turns the host
	// check off, so an unusual spelling never weakens it here.
	pc := PeerClient{Listener: l, VerifyHost: b.ListenerString(l.Name, "ssl.endpoint.identification.algorithm") != ""}
	if !l.SASL() {
		return pc, nil
	}
	pc.Mechanism = b.String(mechKey)
	jaasKey := "listener.name." + strings.ToLower(l.Name) + "." + strings.ToLower(pc.Mechanism) + ".sasl.jaas.config"
	_, opts, err := auth.ParseJAAS(b.ListenerString(l.Name, strings.ToLower(pc.Mechanism)+".sasl.jaas.config"))
	if err != nil {
		return pc, fmt.Errorf("%s: %w", jaasKey, err)
	}
	pc.Username, pc.Password = opts["username"], opts["password"]
	if pc.Username == "" || pc.Password == "" {
		return pc, fmt.Errorf("%s needs username=\"...\" password=\"...\": the user this node logs in to its peers as", jaasKey)
	}
	return pc, nil
}

// loopbackHost is whether a listener's host reaches this machine only (an
// empty host binds every interface).
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// peerChecks refuses controller and inter-broker listeners on which peers
// could not authenticate each other, with what to set.
func (b *Broker) peerChecks(ls []Listener) []string {
	var errs []string
	has := func(name string) bool {
		return slices.ContainsFunc(ls, func(l Listener) bool { return l.Name == name })
	}
	check := func(l Listener, role, mechKey string, mechs []string) {
		lower := strings.ToLower(l.Name)
		if l.Protocol == "SSL" && b.ListenerString(l.Name, "ssl.client.auth") != "required" && role == "controller" {
			errs = append(errs, fmt.Sprintf("listener %s is a controller listener on SSL: set listener.name.%s.ssl.client.auth=required (and ssl.truststore.location), so that peers authenticate each other with their certificates", l.Name, lower))
		}
		if l.Protocol == "SSL" && b.ListenerString(l.Name, "ssl.client.auth") == "none" && role == "inter-broker" {
			errs = append(errs, fmt.Sprintf("listener %s is the inter-broker listener on SSL: set listener.name.%s.ssl.client.auth=required or requested (and ssl.truststore.location), so that brokers present their certificates to each other; anonymous replica fetches are refused on a secured listener", l.Name, lower))
		}
		if !l.SASL() {
			return
		}
		mech := b.String(mechKey)
		if !slices.Contains(mechs, mech) {
			errs = append(errs, fmt.Sprintf("listener %s is the %s listener on %s: set %s to one of %s (Kafka's default, GSSAPI, is not offered)", l.Name, role, l.Protocol, mechKey, strings.Join(mechs, ", ")))
			return
		}
		if !slices.Contains(b.ListenerList(l.Name, "sasl.enabled.mechanisms"), mech) {
			errs = append(errs, fmt.Sprintf("%s=%s is not in listener.name.%s.sasl.enabled.mechanisms: peers could not log in to each other", mechKey, mech, lower))
		}
		if _, err := b.peerClient(l, mechKey); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if l, ok := b.ControllerListener(); ok && b.IsSet("controller.quorum.voters") && l.Protocol != "PLAINTEXT" {
		for _, n := range b.List("controller.listener.names") {
			if l, ok := b.listenerNamed(strings.ToUpper(n)); ok && l.SASL() && slices.ContainsFunc(b.ListenerList(l.Name, "sasl.enabled.mechanisms"), func(m string) bool { return strings.HasPrefix(m, "SCRAM") }) {
				errs = append(errs, fmt.Sprintf("listener %s is a controller listener and enables SCRAM: SCRAM credentials live in the metadata log, which a controller does not have before it has authenticated its peers, so Kafka refuses SCRAM there too; set listener.name.%s.sasl.enabled.mechanisms=PLAIN or use SSL with ssl.client.auth=required", l.Name, strings.ToLower(l.Name)))
			}
			if l, ok := b.listenerNamed(strings.ToUpper(n)); ok && l.SASL() && slices.Contains(b.ListenerList(l.Name, "sasl.enabled.mechanisms"), "OAUTHBEARER") {
				errs = append(errs, fmt.Sprintf("listener %s is a controller listener and enables OAUTHBEARER: any holder of a token the identity provider signed could log in to the quorum, which admits only the cluster's own nodes; set listener.name.%s.sasl.enabled.mechanisms=PLAIN or use SSL with ssl.client.auth=required", l.Name, strings.ToLower(l.Name)))
			}
		}
		check(l, "controller", "sasl.mechanism.controller.protocol", []string{"PLAIN"})
	}
	if b.String("authorizer.class.name") != "" {
		for _, n := range b.List("controller.listener.names") {
			if l, ok := b.listenerNamed(strings.ToUpper(n)); ok && l.Protocol == "PLAINTEXT" && !loopbackHost(l.Host) {
				// Requests on controller listeners are not judged (the
				// forwarding broker judged them): on PLAINTEXT off loopback
				// anyone could create and delete ACLs and SCRAM users there.
				errs = append(errs, fmt.Sprintf("listener %s is a PLAINTEXT controller listener on the network while authorizer.class.name is set: requests there are not judged by the ACLs, so anyone who reaches %s could create and delete ACLs and SCRAM users; secure it (SSL with listener.name.%s.ssl.client.auth=required, or SASL with PLAIN) or bind it to loopback (docs/security.md, \"Securing the cluster's own traffic\")", l.Name, l.Addr(), strings.ToLower(l.Name)))
			}
		}
	}
	roles := b.List("process.roles")
	if l, ok := b.InterBrokerListener(); ok && slices.Contains(roles, "broker") && b.IsSet("controller.quorum.voters") && has(l.Name) && l.Protocol != "PLAINTEXT" {
		check(l, "inter-broker", "sasl.mechanism.inter.broker.protocol", []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"})
	}
	return errs
}
