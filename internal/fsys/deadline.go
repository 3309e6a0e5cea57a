package fsys

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
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
// write fails and the client dials again.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	return n, c.timedOut("read from", err)
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(p)
	return n, c.timedOut("write to", err)
}

// ErrTimeout is a NameNode or DataNode that did not answer a read or take
// a write within Options.IOTimeout; errors.Is(err, os.ErrDeadlineExceeded)
// holds too.
var ErrTimeout = errors.New("fsys: HDFS did not answer")

func (c *deadlineConn) timedOut(op string, err error) error {
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	c.Conn.Close()
	return fmt.Errorf("%w: %s %s: nothing for %v (connection closed): %w", ErrTimeout, op, c.Conn.RemoteAddr(), c.timeout, err)
}
