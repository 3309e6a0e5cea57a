package server

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/kwire"
)

// peerPool keeps the connections of the transaction coordinator's and the
// partition leaders' requests to other brokers (WriteTxnMarkers, the adds
// and verifications of transactional produces) open between requests,
// instead of a dial, and on a secured cluster a TLS and SASL handshake,
// per request, which every commit paid once per leader. A connection
// carries one request at a time (kwire.Conn is not pipelined): a request
// takes an idle one of its destination or dials, and gives it back when
// its answer came. At most peerPoolIdle stay idle per destination, so a
// burst does not leave hundreds open.
//
// Concurrency: mu guards idle; the connections themselves are owned by one
// caller at a time.
type peerPool struct {
	mu     sync.Mutex
	idle   map[string][]*kwire.Conn // by destination address and client id
	closed bool
	// dials counts the connections opened, for tests.
	dials atomic.Int64
}

const peerPoolIdle = 4

func newPeerPool() *peerPool { return &peerPool{idle: map[string][]*kwire.Conn{}} }

func (p *peerPool) take(key string) *kwire.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	cs := p.idle[key]
	if len(cs) == 0 {
		return nil
	}
	c := cs[len(cs)-1]
	p.idle[key] = cs[:len(cs)-1]
	return c
}

func (p *peerPool) give(key string, c *kwire.Conn) {
	p.mu.Lock()
	if !p.closed && len(p.idle[key]) < peerPoolIdle {
		p.idle[key] = append(p.idle[key], c)
		c = nil
	}
	p.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// close closes the idle connections; those in use are closed when given
// back.
func (p *peerPool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = map[string][]*kwire.Conn{}
	p.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.Close()
		}
	}
}

// peerRoundTrip sends req to the broker at addr on a pooled connection of
// the inter-broker listener's security. A reused connection the peer had
// closed (its idle timeout, a restart) gets one retry on a new one. Only
// then: after a timeout the first request may still be queued or running
// on the peer, and a second copy of a marker would be a duplicate that
// arrives after the transaction moved on.
func (s *Server) peerRoundTrip(ctx context.Context, addr, clientID string, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	key := addr + "\x00" + clientID
	if c := s.peerConns.take(key); c != nil {
		resp, err := c.RoundTrip(req, timeout)
		if err == nil {
			s.peerConns.give(key, c)
			return resp, nil
		}
		c.Close()
		if !peerClosed(err) {
			return nil, err
		}
	}
	c, err := s.dialReplica(ctx, addr, clientID)
	if err != nil {
		return nil, err
	}
	s.peerConns.dials.Add(1)
	resp, err := c.RoundTrip(req, timeout)
	if err != nil {
		c.Close()
		return nil, err
	}
	s.peerConns.give(key, c)
	return resp, nil
}

// peerClosed says whether a reused connection's error shows that the peer
// had closed it before our request could be served: the write failed, or
// the answer's first byte never came because the connection was closed or
// reset (io.EOF: nothing of an answer was read). A timeout is not that.
func peerClosed(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
