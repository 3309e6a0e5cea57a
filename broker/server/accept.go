package server

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// retryListener keeps a listener accepting through errors that pass: out
// of file descriptors (EMFILE, ENFILE) or of kernel memory (ENOBUFS,
// ENOMEM). It waits 5 ms, doubling to 1 s, as net/http's Server does, and
// tries again; the pending connections wait in the kernel's backlog
// meanwhile. Without it one EMFILE ended the accept loop and left the
// listener dead while /readyz still said ready.
//
// It wraps the bound listener, under Raft's split (cluster.RaftConns) when
// there is one, so that both the Kafka and the Raft side keep accepting.
type retryListener struct {
	net.Listener
	name   string
	logger *slog.Logger
	// onError counts each failed accept that is retried.
	onError func()

	closed    chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	lastLog  time.Time
	unlogged int
}

func newRetryListener(ln net.Listener, name string, logger *slog.Logger, onError func()) *retryListener {
	return &retryListener{Listener: ln, name: name, logger: logger, onError: onError, closed: make(chan struct{})}
}

const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
	// acceptLogEvery is the most often a failing accept is logged: an
	// EMFILE storm would otherwise write a line every few milliseconds.
	acceptLogEvery = time.Second
)

func (l *retryListener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		nc, err := l.Listener.Accept()
		if err == nil || !retryable(err) {
			return nc, err
		}
		select {
		case <-l.closed:
			return nil, net.ErrClosed
		default:
		}
		if l.onError != nil {
			l.onError()
		}
		if delay == 0 {
			delay = acceptBackoffMin
		} else {
			delay = min(2*delay, acceptBackoffMax)
		}
		l.logRateLimited(err, delay)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-l.closed:
			t.Stop()
			return nil, net.ErrClosed
		}
	}
}

func (l *retryListener) logRateLimited(err error, delay time.Duration) {
	l.mu.Lock()
	now := time.Now()
	if now.Sub(l.lastLog) < acceptLogEvery {
		l.unlogged++
		l.mu.Unlock()
		return
	}
	l.lastLog = now
	suppressed := l.unlogged
	l.unlogged = 0
	l.mu.Unlock()
	l.logger.Error("accept failed; retrying", "listener", l.name, "err", err, "retry_in", delay, "failures_not_logged", suppressed)
}

func (l *retryListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// retryable says whether an accept error passes with time rather than
// meaning the listener is gone.
func retryable(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
