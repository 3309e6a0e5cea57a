package cluster

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// raftMagic opens every Raft connection. Raft shares the node's controller
// listeners with the Kafka APIs a controller serves, as KRaft's controller
// listener does: a Kafka request opens with its size, a positive int32
// whose first byte is never 0xFF, so the first byte tells the two apart
// without a second port. Client listeners are never split: there 0xFF is a
// negative frame size, and the connection is closed.
const raftMagic byte = 0xFF

// RaftMagic is raftMagic, for the Kafka server of a secured controller
// listener, which sees Raft arrive after a login.
const RaftMagic = raftMagic

// RaftConns is the Raft side of a node's listeners: Split routes the
// connections that open with raftMagic here, and the quorum's transport
// accepts them. Connections that arrive before the quorum opens wait.
type RaftConns struct {
	// Advertise is where other nodes dial this node's Raft: its voter
	// address, or for a broker-only node its controller listener.
	Advertise string
	// Secure, when the controller listeners are secured, authenticates a
	// Raft connection this node dials (TLS, SASL) before it switches to
	// Raft; the other end checks it in the Kafka protocol and hands the
	// connection over (HandOff) once it reads raftMagic.
	Secure func(nc net.Conn, addr string, deadline time.Time) (net.Conn, error)

	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

// NewRaftConns makes the Raft side of this node's listeners.
func NewRaftConns() *RaftConns {
	return &RaftConns{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (r *RaftConns) close() { r.closeOnce.Do(func() { close(r.closed) }) }

// HandOff gives a connection whose next byte is raftMagic to the transport,
// which owns it from then on: the listener's split does it on a PLAINTEXT
// controller listener, the Kafka server on a secured one once the peer
// has authenticated.
func (r *RaftConns) HandOff(nc net.Conn) {
	var magic [1]byte
	if _, err := io.ReadFull(nc, magic[:]); err != nil {
		nc.Close()
		return
	}
	select {
	case r.conns <- nc:
	case <-r.closed:
		nc.Close()
	}
}

// Split serves ln, sending Raft connections to r and returning a listener
// of the others, untouched: the Kafka server reads them from their first
// byte and still writes to the *net.TCPConn (sendfile).
func (r *RaftConns) Split(ln net.Listener) net.Listener {
	s := &splitListener{ln: ln, raft: r, kafka: make(chan net.Conn), done: make(chan struct{}), pending: map[net.Conn]bool{}}
	go s.route()
	return s
}

type splitListener struct {
	ln        net.Listener
	raft      *RaftConns
	kafka     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	pending map[net.Conn]bool // accepted, first byte not seen yet
	err     error             // why ln stopped accepting
}

// firstByteTimeout bounds how long a connection may stay silent before it
// says which protocol it speaks; Kafka clients and Raft both speak first.
const firstByteTimeout = 30 * time.Second

func (s *splitListener) route() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			s.Close()
			return
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		s.mu.Lock()
		s.pending[nc] = true
		s.mu.Unlock()
		go s.classify(nc)
	}
}

func (s *splitListener) classify(nc net.Conn) {
	nc.SetReadDeadline(time.Now().Add(firstByteTimeout))
	b, err := peekByte(nc)
	nc.SetReadDeadline(time.Time{})
	s.mu.Lock()
	delete(s.pending, nc)
	s.mu.Unlock()
	switch {
	case err != nil:
		nc.Close()
	case b == raftMagic:
		s.raft.HandOff(nc)
	default:
		select {
		case s.kafka <- nc:
		case <-s.done:
			nc.Close()
		}
	}
}

// peekByte reads a connection's first byte without consuming it.
func peekByte(nc net.Conn) (byte, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, errors.New("cluster: not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var b [1]byte
	var n int
	var perr error
	err = raw.Read(func(fd uintptr) bool {
		n, _, perr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		return perr != syscall.EAGAIN
	})
	switch {
	case err != nil:
		return 0, err
	case perr != nil:
		return 0, perr
	case n == 0:
		return 0, io.EOF
	}
	return b[0], nil
}

func (s *splitListener) Accept() (net.Conn, error) {
	select {
	case nc := <-s.kafka:
		return nc, nil
	case <-s.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.err != nil && !errors.Is(s.err, net.ErrClosed) {
			return nil, s.err
		}
		return nil, net.ErrClosed
	}
}

func (s *splitListener) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.done)
		err = s.ln.Close()
		s.mu.Lock()
		for nc := range s.pending {
			nc.Close()
		}
		s.mu.Unlock()
	})
	return err
}

func (s *splitListener) Addr() net.Addr { return s.ln.Addr() }

// raftStream is hashicorp/raft's StreamLayer over RaftConns.
type raftStream struct {
	conns *RaftConns
	addr  net.Addr
}

func (s raftStream) Accept() (net.Conn, error) {
	select {
	case nc := <-s.conns.conns:
		return nc, nil
	case <-s.conns.closed:
		return nil, net.ErrClosed
	}
}

func (s raftStream) Close() error {
	s.conns.close()
	return nil
}

func (s raftStream) Addr() net.Addr { return s.addr }

func (s raftStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	nc, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	if s.conns.Secure != nil {
		if nc, err = s.conns.Secure(nc, string(addr), time.Now().Add(timeout)); err != nil {
			return nil, err
		}
	}
	nc.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := nc.Write([]byte{raftMagic}); err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetWriteDeadline(time.Time{})
	return nc, nil
}
