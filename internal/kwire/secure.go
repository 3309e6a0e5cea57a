package kwire

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Security is how a connection to a peer authenticates, as the listener it
// dials expects: TLS when TLS is set (a client certificate in it when the
// listener asks for one), then a SASL exchange when SASL is set. The zero
// value is PLAINTEXT.
type Security struct {
	// TLS returns the configuration for a connection to host, so that a
	// certificate rotated on disk is used by the next connection.
	TLS  func(host string) *tls.Config
	SASL sasl.Mechanism
}

// ErrAuthentication wraps every failure of a SASL exchange or a TLS
// handshake, so that callers can tell credentials that are refused (which
// retrying will not cure) from a peer that is down.
var ErrAuthentication = errors.New("kwire: authentication failed")

// DialSecure connects to addr and authenticates as sec says.
func DialSecure(ctx context.Context, addr, clientID string, sec Security) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	if nc, err = Secure(nc, addr, clientID, sec, deadline); err != nil {
		return nil, err
	}
	return newConn(nc, clientID), nil
}

// Secure runs the TLS handshake and the SASL exchange of sec on a
// connection to addr, before deadline, and returns the connection to use
// afterwards (nc itself on PLAINTEXT). On error nc is closed. Raft's
// transport uses it too, before it switches the connection to Raft.
func Secure(nc net.Conn, addr, clientID string, sec Security, deadline time.Time) (net.Conn, error) {
	nc.SetDeadline(deadline)
	if sec.TLS != nil {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		tc := tls.Client(nc, sec.TLS(host))
		if err := tc.Handshake(); err != nil {
			nc.Close()
			if isTimeoutOrEOF(err) {
				return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
			}
			return nil, fmt.Errorf("%w: TLS handshake with %s: %w", ErrAuthentication, addr, err)
		}
		nc = tc
	}
	if sec.SASL != nil {
		if err := saslLogin(nc, addr, clientID, sec.SASL); err != nil {
			nc.Close()
			return nil, err
		}
	}
	nc.SetDeadline(time.Time{})
	return nc, nil
}

func isTimeoutOrEOF(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.As(err, &ne) && ne.Timeout()
}

// saslLogin is the client side of SaslHandshake v1 and SaslAuthenticate v1
// (KIP-152): the mechanism's messages travel in Kafka frames.
func saslLogin(nc net.Conn, addr, clientID string, mech sasl.Mechanism) error {
	// roundTripExact reads the socket itself, never past the last
	// answer: the connection may change protocol (Raft) right after it.
	c := newConn(nc, clientID)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = mech.Name()
	resp, err := c.roundTripExact(hs)
	if err != nil {
		return fmt.Errorf("SASL handshake with %s: %w", addr, err)
	}
	if r := resp.(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		return fmt.Errorf("%w: %s: mechanism %s: %v (the listener offers %v)", ErrAuthentication, addr, mech.Name(), kerr.ErrorForCode(r.ErrorCode), r.SupportedMechanisms)
	}
	session, out, err := mech.Authenticate(context.Background(), addr)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrAuthentication, addr, err)
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(1)
		req.SASLAuthBytes = out
		resp, err := c.roundTripExact(req)
		if err != nil {
			// A refused login is answered, then closed; a close without an
			// answer is a peer going away.
			return fmt.Errorf("SASL authentication with %s: %w", addr, err)
		}
		r := resp.(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != 0 {
			msg := ""
			if r.ErrorMessage != nil {
				msg = ": " + *r.ErrorMessage
			}
			return fmt.Errorf("%w: %s %s as the listener's SASL user: %v%s", ErrAuthentication, addr, mech.Name(), kerr.ErrorForCode(r.ErrorCode), msg)
		}
		done, next, err := session.Challenge(r.SASLAuthBytes)
		if err != nil {
			return fmt.Errorf("%w: %s: %s: %v", ErrAuthentication, addr, mech.Name(), err)
		}
		if done {
			return nil
		}
		out = next
	}
}

// roundTripExact is RoundTrip reading exactly one frame from the socket.
func (c *Conn) roundTripExact(req kmsg.Request) (kmsg.Response, error) {
	c.corr++
	c.buf = AppendRequest(c.buf[:0], req, c.corr, c.clientID)
	if _, err := c.nc.Write(c.buf); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<20 {
		return nil, fmt.Errorf("kwire: response of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return nil, err
	}
	return c.decode(req, body)
}
