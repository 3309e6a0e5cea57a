package config

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Listener is one entry of listeners or advertised.listeners.
type Listener struct {
	Name     string // PLAINTEXT, CONTROLLER, or any name in listener.security.protocol.map
	Host     string // empty binds every interface
	Port     int
	Protocol string // the security protocol the name maps to
}

// Addr is host:port for net.Listen and Dial.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

func (l Listener) String() string { return l.Name + "://" + l.Addr() }

// ParseListeners parses NAME://host:port entries against a security
// protocol map (NAME:PROTOCOL,...).
func ParseListeners(list []string, protocolMap []string) ([]Listener, error) {
	protocols := map[string]string{}
	for _, m := range protocolMap {
		name, proto, ok := strings.Cut(m, ":")
		if !ok {
			return nil, fmt.Errorf("listener.security.protocol.map entry %q is not NAME:PROTOCOL", m)
		}
		protocols[strings.ToUpper(name)] = strings.ToUpper(proto)
	}
	seen := map[string]bool{}
	out := make([]Listener, 0, len(list))
	for _, s := range list {
		name, rest, ok := strings.Cut(s, "://")
		if !ok {
			return nil, fmt.Errorf("listener %q is not NAME://host:port", s)
		}
		host, portStr, err := net.SplitHostPort(rest)
		if err != nil {
			return nil, fmt.Errorf("listener %q: %v", s, err)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("listener %q: port %q is not 0-65535", s, portStr)
		}
		name = strings.ToUpper(name)
		proto, ok := protocols[name]
		if !ok {
			return nil, fmt.Errorf("listener %q: %s is not in listener.security.protocol.map", s, name)
		}
		switch proto {
		case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
		default:
			return nil, fmt.Errorf("listener %q: %s maps to %s, which is not a security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", s, name, proto)
		}
		if seen[name] {
			return nil, fmt.Errorf("listener name %s appears twice", name)
		}
		seen[name] = true
		out = append(out, Listener{Name: name, Host: host, Port: port, Protocol: proto})
	}
	return out, nil
}

// Listeners is the parsed listeners property.
func (b *Broker) Listeners() ([]Listener, error) {
	return ParseListeners(b.List("listeners"), b.List("listener.security.protocol.map"))
}

// AdvertisedListeners are what Metadata tells clients: advertised.listeners,
// or the listeners that are not controller listeners, with a wildcard host
// replaced by this machine's name.
func (b *Broker) AdvertisedListeners() ([]Listener, error) {
	if b.IsSet("advertised.listeners") {
		return ParseListeners(b.List("advertised.listeners"), b.List("listener.security.protocol.map"))
	}
	ls, err := b.Listeners()
	if err != nil {
		return nil, err
	}
	controller := map[string]bool{}
	for _, n := range b.List("controller.listener.names") {
		controller[strings.ToUpper(n)] = true
	}
	var out []Listener
	for _, l := range ls {
		if controller[l.Name] {
			continue
		}
		if l.Host == "" || l.Host == "0.0.0.0" || l.Host == "::" {
			if h, err := os.Hostname(); err == nil {
				l.Host = h
			}
		}
		out = append(out, l)
	}
	return out, nil
}
