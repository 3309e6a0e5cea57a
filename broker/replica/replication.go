package replica

import (
	"time"

	"github.com/tributary-io/tributary/broker/cluster"
)

// SetTransport lets the manager replicate: followers fetch from their
// leaders and leaders change their ISR through t. Without it (a single
// node) every hosted partition is led here. Call it before the first Apply.
func (m *Manager) SetTransport(t Transport) {
	m.transport = &t
	go m.maintainISR(m.stop)
}

// follow starts, moves or stops the fetching of p after its metadata
// changed as rc says.
func (m *Manager) follow(p *Partition, rc roleChange) {
	if m.transport == nil {
		return
	}
	m.fmu.Lock()
	defer m.fmu.Unlock()
	if old, ok := m.following[p]; ok && (!rc.follow || old != rc.leader) {
		m.stopFetchingLocked(p, old)
	}
	if !rc.follow {
		return
	}
	f, ok := m.fetchers[rc.leader]
	if !ok {
		f = newFetcher(m, rc.leader)
		m.fetchers[rc.leader] = f
	}
	m.following[p] = rc.leader
	f.add(p, rc.epochChanged)
}

// unfollow stops fetching p, which is going away.
func (m *Manager) unfollow(p *Partition) {
	m.fmu.Lock()
	defer m.fmu.Unlock()
	if leader, ok := m.following[p]; ok {
		m.stopFetchingLocked(p, leader)
	}
}

func (m *Manager) stopFetchingLocked(p *Partition, leader int32) {
	delete(m.following, p)
	if f, ok := m.fetchers[leader]; ok && f.remove(p) {
		f.close()
		delete(m.fetchers, leader)
	}
}

// StopReplication stops every fetcher, when the broker stops.
func (m *Manager) StopReplication() {
	m.applyMu.Lock()
	if m.retry != nil {
		m.retry.Stop()
		m.retry = nil
	}
	m.stopped = true // nothing applied or retried after this
	m.applyMu.Unlock()
	m.fmu.Lock()
	defer m.fmu.Unlock()
	for id, f := range m.fetchers {
		f.close()
		delete(m.fetchers, id)
	}
	m.following = map[*Partition]int32{}
	if m.stop != nil {
		close(m.stop)
		m.stop = nil
	}
}

// RequestISRChange sends a leader's ISR change to the controller in the
// background; the result comes back as metadata.
func (m *Manager) RequestISRChange(p *Partition, ch *cluster.ISRChange) {
	if ch == nil || m.transport == nil {
		return
	}
	go func() {
		if err := m.transport.AlterISR(*ch); err != nil {
			p.ISRChangeDone(false)
			m.logger.Info("ISR change refused", "partition", p.TP.String(), "isr", ch.ISR, "err", err)
			return
		}
		p.ISRChangeDone(true)
		m.logger.Info("ISR changed", "partition", p.TP.String(), "isr", ch.ISR)
	}()
}

// maintainISR shrinks the ISR of the partitions led here when followers
// fall behind for longer than replica.lag.time.max.ms, checking at half that
// period as Kafka does, and saves the high watermarks as often.
func (m *Manager) maintainISR(stop chan struct{}) {
	lag := time.Duration(m.cfg.Int("replica.lag.time.max.ms")) * time.Millisecond
	t := time.NewTicker(lag / 2)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for _, p := range m.All() {
			m.RequestISRChange(p, p.ShrinkISR(lag))
		}
		if err := m.WriteHighWatermarks(); err != nil {
			m.logger.Warn("writing the high watermark checkpoint", "err", err)
		}
	}
}
