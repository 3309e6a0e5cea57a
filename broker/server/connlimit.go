package server

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/tributary-io/tributary/broker/config"
)

// connLimits are max.connections, max.connections.per.ip and its
// overrides, checked as a connection is accepted. A connection past a limit
// is closed at once, before anything is read or allocated for it.
//
// Controller listeners are not counted at all: they carry the quorum and
// the brokers' heartbeats, which a flood of clients must never lock out
// (Kafka's controller has its own socket server and limits). The
// inter-broker listener, when inter.broker.listener.name names one, is not
// counted in max.connections, as Kafka exempts it, but is in the per-IP
// limit.
type connLimits struct {
	// cfg gives max.connections and max.connections.per.ip at each
	// accept: both are dynamic broker configs, and a new value applies to
	// the connections accepted after it (open ones stay, as in Kafka).
	cfg       *config.Broker
	overrides map[string]int // by IP address, as net.IP.String spells it
	exempt    map[string]bool
	uncounted map[string]bool // in max.connections

	mu    sync.Mutex
	total int
	byIP  map[string]int
}

// Reasons for refusing a connection, the reason label of the refusal
// counter.
const (
	refusedMax   = "max.connections"
	refusedPerIP = "max.connections.per.ip"
)

func newConnLimits(cfg *config.Broker) (*connLimits, error) {
	l := &connLimits{
		cfg: cfg, overrides: map[string]int{}, exempt: map[string]bool{}, uncounted: map[string]bool{},
		byIP: map[string]int{},
	}
	for _, n := range cfg.List("controller.listener.names") {
		l.exempt[n] = true
	}
	if n := cfg.String("inter.broker.listener.name"); n != "" {
		l.uncounted[n] = true
	}
	hosts, err := cfg.ConnectionsPerIPOverrides()
	if err != nil {
		return nil, err
	}
	for host, n := range hosts {
		if ip := net.ParseIP(host); ip != nil {
			l.overrides[ip.String()] = n
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("broker/server: max.connections.per.ip.overrides: resolving %s: %w", host, err)
		}
		for _, a := range addrs {
			l.overrides[a.IP.String()] = n
		}
	}
	return l, nil
}

// admit counts a connection from ip on listener, or says which limit
// refuses it. done uncounts an admitted connection.
func (l *connLimits) admit(listener, ip string) (done func(), refused string) {
	if l.exempt[listener] {
		return func() {}, ""
	}
	counted := !l.uncounted[listener]
	limit, ok := l.overrides[ip]
	if !ok {
		limit = int(l.cfg.Int("max.connections.per.ip"))
	}
	maxConns := int(l.cfg.Int("max.connections"))
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.byIP[ip] >= limit:
		return nil, refusedPerIP
	case counted && l.total >= maxConns:
		return nil, refusedMax
	}
	l.byIP[ip]++
	if counted {
		l.total++
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.byIP[ip]--; l.byIP[ip] == 0 {
			delete(l.byIP, ip)
		}
		if counted {
			l.total--
		}
	}, ""
}

// remoteIP is the address a connection comes from, as the limits key it.
func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
	return host
}
