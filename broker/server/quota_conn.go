package server

import (
	"math"
	"net"
	"sync"
	"time"

	"github.com/tributary-io/tributary/broker/quota"
)

// Connection creation rates (KIP-612), on the client listeners (the
// controller listeners and inter.broker.listener.name are exempt, as from
// max.connections): max.connection.creation.rate over the whole broker
// delays accepting, as Kafka's acceptor does, until the rate is back
// under it; an IP address over its connection_creation_rate quota has the
// new connection held, unread, for the throttle time and then closed, and
// the refused connection does not count against it.
type connRates struct {
	w      quota.Window
	broker *quota.EventRate

	mu        sync.Mutex
	byIP      map[string]*quota.EventRate
	lastSweep time.Time
}

func newConnRates(w quota.Window) *connRates {
	return &connRates{w: w, broker: quota.NewEventRate(w), byIP: map[string]*quota.EventRate{}}
}

// ipRate is ip's rate, made on first use; rates idle for a whole window
// are dropped once a minute.
func (r *connRates) ipRate(ip string, now time.Time) *quota.EventRate {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.lastSweep) > time.Minute {
		r.lastSweep = now
		idle := now.Add(-time.Duration(r.w.Samples) * r.w.Size)
		for k, e := range r.byIP {
			if e.Idle(idle) {
				delete(r.byIP, k)
			}
		}
	}
	e := r.byIP[ip]
	if e == nil {
		e = quota.NewEventRate(r.w)
		r.byIP[ip] = e
	}
	return e
}

// connectionRate applies the connection creation rates to a connection
// just accepted on listener from ip. Both waits are bounded by one sample
// window, as Kafka bounds them. It reports whether it took the
// connection (refused: it is closed after its throttle time).
func (s *Server) connectionRate(listener, ip string, nc net.Conn) bool {
	if s.limits.exempt[listener] || s.limits.uncounted[listener] {
		return false
	}
	now := time.Now()
	if bound, ok := s.ctrl.Image().ClientQuotas.IPLimit(ip); ok {
		e := s.connRates.ipRate(ip, now)
		if d := e.Record(bound, now); d > 0 {
			e.Unrecord(now)
			s.metrics.refusedConnections.WithLabelValues(listener, "connection_creation_rate").Inc()
			s.logger.Debug("connection refused: connection_creation_rate of its IP address", "listener", listener, "remote", nc.RemoteAddr().String(), "throttle", d)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer nc.Close()
				s.pause(min(d, s.connRates.w.Size))
			}()
			return true
		}
	}
	if limit := s.cfg.Int("max.connection.creation.rate"); limit < math.MaxInt32 {
		if d := s.connRates.broker.Record(float64(limit), now); d > 0 {
			s.pause(min(d, s.connRates.w.Size))
		}
	}
	return false
}

// pause waits d, or until the broker stops.
func (s *Server) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.stopping:
	}
}
