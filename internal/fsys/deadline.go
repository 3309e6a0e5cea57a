package fsys

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// DefaultIOTimeout is Options.IOTimeout's default: Hadoop's own client
// gives a NameNode call two minutes (ipc.client.rpc-timeout.ms) and a
// DataNode read one (dfs.client.socket-timeout). It bounds each read and
// write, not a whole file: a big block streams in many reads, each of which
// makes progress, so this is a hang detector, not a transfer limit.
const DefaultIOTimeout = 2 * time.Minute

// deadlineDialer dials NameNodes and DataNodes with a connect timeout and
// wraps each connection so that no read or write on it waits longer than
// timeout for the peer. colinmarc/hdfs takes no context and sets no
// deadlines: a NameNode or DataNode that accepts and never answers (a hung
// JVM, a half-open connection after a network partition, a stopped
// process whose socket the kernel keeps) held the caller, its goroutine
// and the connection until the OS gave up on the socket (hours with
// keepalive answered by a live kernel).
func deadlineDialer(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if timeout <= 0 {
		return d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &deadlineConn{Conn: c, timeout: timeout}, nil
	}
}

// deadlineConn arms a deadline before each Read and Write. A connection
// that timed out is closed: colinmarc/hdfs does not drop a NameNode
// connection after a failed read (only after a failed write, or a standby
// answer), and the late answer would be read as the next call's (a
// sequence number mismatch on every call after). Closed, the next call's
// write on it fails, and colinmarc/hdfs marks the NameNode failed: for
// its host backoff (5 s in v2.4.0, namenode.go's backoffDuration) every
// call through that client fails at once with "no available namenodes"
// without dialling, even if the NameNode has recovered; after it the next
// call (often colinmarc's own lease renewal, every second) dials again.
// So a timeout costs about 5 s more of failed calls, which the tier's
// retries absorb; a fresh client per timeout would avoid them, but
// hdfsFS shares one client with every caller and its idle streams. A
// DataNode connection belongs to one block stream, with no such backoff:
// a read that timed out goes on at the block's next replica (colinmarc's
// BlockReader), or fails when none is left. A deadline the caller sets
// (colinmarc's FileReader.SetDeadline and FileWriter.SetDeadline set the
// DataNode connection's) is kept when it is the earlier one.
//
// Not handled: a caller's Set*Deadline racing a Read or Write in flight
// on another goroutine. Read and Write copy the caller's deadline, then
// arm theirs outside the lock, so a caller's deadline set in between is
// lost for that call (up to IOTimeout late), and one set during the call
// replaces ours on the connection (a zero one removes the hang detector
// for that call). Nothing does it today: Tributary never calls
// FileReader/FileWriter.SetDeadline, and colinmarc/hdfs sets deadlines only
// at connect, before any I/O. A caller that starts to must hold the lock
// across arming, and apply the earlier of its deadline and the armed one.
type deadlineConn struct {
	net.Conn
	timeout time.Duration

	mu              sync.Mutex
	readBy, writeBy time.Time // the caller's deadlines; zero for none
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	by := c.readBy
	c.mu.Unlock()
	ours, d := c.arm(by)
	if err := c.Conn.SetReadDeadline(d); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	return n, c.timedOut("read from", ours, err)
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	by := c.writeBy
	c.mu.Unlock()
	ours, d := c.arm(by)
	if err := c.Conn.SetWriteDeadline(d); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(p)
	return n, c.timedOut("write to", ours, err)
}

// arm is the deadline of a call: ours, or the caller's when earlier.
func (c *deadlineConn) arm(by time.Time) (ours bool, d time.Time) {
	d = time.Now().Add(c.timeout)
	if !by.IsZero() && by.Before(d) {
		return false, by
	}
	return true, d
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.readBy, c.writeBy = t, t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.readBy = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writeBy = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

// ErrTimeout is a NameNode or DataNode that did not answer a read or take
// a write within Options.IOTimeout; errors.Is(err, os.ErrDeadlineExceeded)
// holds too.
var ErrTimeout = errors.New("fsys: HDFS did not answer")

// timedOut closes the connection when our deadline passed (the caller's
// own is the caller's business, as without the wrapper).
func (c *deadlineConn) timedOut(op string, ours bool, err error) error {
	if err == nil || !ours || !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	c.Conn.Close()
	return fmt.Errorf("%w: %s %s: nothing for %v (connection closed): %w", ErrTimeout, op, c.Conn.RemoteAddr(), c.timeout, err)
}
