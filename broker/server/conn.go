package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/cluster"
)

// conn is one client connection.
type conn struct {
	s        *Server
	nc       net.Conn
	r        *bufio.Reader
	listener string // the listener name it came in on
	logger   *slog.Logger

	// Of the request being served.
	clientID string
	hdr      requestHeader

	// body is the request being served, and held what it holds of the
	// request pool, until freeBody.
	body []byte
	held int64

	// principal is who the connection authenticated as; saslPending
	// that it has not yet, on a SASL listener, and exchange the SASL
	// exchange under way (security.go). closeAfter ends the connection
	// once the current response is written (a failed authentication).
	principal   auth.Principal
	saslPending bool
	exchange    auth.Exchange
	mechanism   string
	closeAfter  bool
	// remoteHost is the client's IP address as ACLs name hosts, once
	// asked (acl_authz.go).
	remoteHost string

	// Of client quotas (quota_enforce.go): when the request's handler
	// started, how long it waited for data (not work), and how long to
	// mute the connection after its response.
	started  time.Time
	waited   time.Duration
	throttle time.Duration

	// sessionExpiry is when the SASL session ends (KIP-368): zero for
	// never. Past it, the connection must re-authenticate or is closed.
	sessionExpiry time.Time

	// out is the last response's buffer, kept for the next: responses are
	// written one at a time, and a caught-up consumer's thousands of small
	// fetch answers a second would otherwise each be garbage.
	out []byte

	// shareSessions are the share sessions opened on this connection,
	// released when it closes, as Kafka's share session cache does.
	shareSessions map[[2]string]struct{}
}

// keptResponseBuffer bounds what a connection keeps between responses, so
// that an idle connection after one large answer does not hold it.
const keptResponseBuffer = 64 << 10

type requestHeader struct {
	key, version int16
	correlation  int32
	clientID     *string
}

// errClose ends a connection after a request Kafka would not answer.
var errClose = errors.New("broker/server: closing connection")

func (c *conn) serve() {
	raft := false
	defer func() {
		if !raft { // a Raft connection is the transport's to close
			c.nc.Close()
		}
		c.closeShareSessions()
	}()
	if err := c.authenticate(); err != nil {
		return
	}
	for {
		if c.s.closing.Load() {
			return
		}
		body, held, err := c.readFrame()
		if errors.Is(err, errRaft) {
			raft = c.raftUpgrade()
			return
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !c.s.closing.Load() && !isTimeout(err) {
				c.logger.Debug("connection closed", "err", err)
			}
			return
		}
		c.body, c.held = body, held
		err = c.serveRecovered(body)
		// After a panic nobody knows what still refers to the body.
		c.freeBody(!errors.Is(err, errPanicked))
		if err != nil {
			if !errors.Is(err, errClose) && !errors.Is(err, errPanicked) {
				c.logger.Warn("closing connection", "err", err, "api", kmsg.NameForKey(c.hdr.key), "version", c.hdr.version, "client_id", c.clientID)
			}
			return
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// readFrame reads one size-prefixed request. The size is checked against
// socket.request.max.bytes, and taken from the request pool (mempool.go),
// before anything is allocated; held is what to give back to the pool once
// the body is freed.
//
// Between requests the connection may stay silent for
// connections.max.idle.ms; once a frame has started, its body must arrive
// within requestTimeout, so that a sender cannot hold pool bytes forever.
// Frames before SASL authentication are read outside the pool
// (readUnpooled).
func (c *conn) readFrame() (body []byte, held int64, err error) {
	c.nc.SetReadDeadline(time.Now().Add(c.s.idleTimeout))
	if c.raftCapable() {
		if b, err := c.r.Peek(1); err == nil && b[0] == cluster.RaftMagic {
			return nil, 0, errRaft
		}
	}
	var sz [4]byte
	if _, err := io.ReadFull(c.r, sz[:]); err != nil {
		return nil, 0, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if limit := c.frameLimit(); n < 8 || n > limit {
		c.s.metrics.rejectedFrames.Inc()
		if c.saslPending {
			return nil, 0, fmt.Errorf("request of %d bytes before authentication is outside [8, sasl.server.max.receive.size=%d]", n, limit)
		}
		return nil, 0, fmt.Errorf("request of %d bytes is outside [8, socket.request.max.bytes=%d]", n, limit)
	}
	if c.saslPending {
		return c.readUnpooled(n)
	}
	body, held, ok := c.s.pool.get(int(n), c.s.stopping)
	if !ok {
		return nil, 0, errClose
	}
	c.nc.SetReadDeadline(time.Now().Add(c.s.requestTimeout))
	if _, err := io.ReadFull(c.r, body); err != nil {
		c.s.pool.put(body, held, true)
		return nil, 0, err
	}
	return body, held, nil
}

// unpooled is the held of a body read outside the request pool.
const unpooled = -1

// preAuthBodyTimeout is how long the body of a frame sent before SASL
// authentication may take to arrive: the few small frames of a login never
// need long, and a stalled stranger should not keep its socket a minute.
const preAuthBodyTimeout = 10 * time.Second

// readUnpooled reads a body sent before authentication, outside the
// request pool, as Kafka does: the pool is for the requests of
// authenticated clients, and a stranger declaring
// sasl.server.max.receive.size and sending nothing must neither take
// their memory nor make them wait. The buffer grows only with what
// arrives, so a stalled sender holds almost nothing.
func (c *conn) readUnpooled(n int32) ([]byte, int64, error) {
	c.nc.SetReadDeadline(time.Now().Add(preAuthBodyTimeout))
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, c.r, int64(n)); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, 0, err
	}
	return buf.Bytes(), unpooled, nil
}

// freeBody gives the request's body back once its handler is done with
// it: to the body pool if reuse and the request is a Produce or a Fetch
// (nothing refers to their bodies after the handler, see bodies.go), and
// its bytes to the request pool in any case. It runs before the response
// is written, so that a client slow to read its answers does not keep
// others' requests waiting for the pool.
func (c *conn) freeBody(reuse bool) {
	if c.body == nil {
		return
	}
	if c.held == unpooled {
		c.body, c.held = nil, 0
		return
	}
	k := c.hdr.key
	c.s.pool.put(c.body, c.held, reuse && (k == kmsg.Produce.Int16() || k == kmsg.Fetch.Int16()))
	c.body, c.held = nil, 0
}

// errPanicked closes a connection whose handler panicked.
var errPanicked = errors.New("broker/server: a handler panicked")

// serveRecovered is serveRequest, except that a panic closes only this
// connection: it is logged with its stack and counted, and the broker goes
// on serving the others. The log line does not start with "panic:", which
// is how tests and operators tell a crash from a recovered fault.
func (c *conn) serveRecovered(body []byte) (err error) {
	defer func() {
		if v := recover(); v != nil {
			c.s.metrics.panics.Inc()
			c.logger.Error("recovered from a panic in a handler; closing the connection",
				"api", kmsg.NameForKey(c.hdr.key), "version", c.hdr.version, "client_id", c.clientID,
				"value", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = errPanicked
		}
	}()
	return c.serveRequest(body)
}

// serveRequest decodes, handles and answers one request. An error closes
// the connection, which is what Kafka does with a request it cannot parse or
// an API or version it does not serve; other connections never notice.
func (c *conn) serveRequest(body []byte) error {
	r := kbin.Reader{Src: body}
	c.hdr = requestHeader{key: r.Int16(), version: r.Int16(), correlation: r.Int32()}
	c.hdr.clientID = r.NullableString()
	if !r.Ok() {
		return fmt.Errorf("truncated request header")
	}
	c.clientID = ""
	if c.hdr.clientID != nil {
		c.clientID = *c.hdr.clientID
	}
	h, known := c.s.apis[c.hdr.key]
	req := kmsg.RequestForKey(c.hdr.key)
	if !known || req == nil {
		return fmt.Errorf("unknown API key %d", c.hdr.key)
	}
	if err := c.checkPreAuth(c.hdr.key); err != nil {
		return err
	}
	// Peers and clients apart, as Kafka's listeners are: a controller
	// listener serves only what brokers ask of a controller (and, on a
	// broker-only node, nothing: it is there for Raft), and a client
	// listener never serves the brokers' internal APIs.
	switch controller := c.s.controllerListeners[c.listener]; {
	case controller && c.peerLoginAPI(c.hdr.key):
		// A peer's login, before Raft or its first request.
	case controller && !c.peer():
		c.refusePeer(kmsg.NameForKey(c.hdr.key))
		return errClose
	case controller && !c.awaitServing():
		return errClose
	case controller && !c.s.controller:
		return fmt.Errorf("%s on the controller listener %s of a broker-only node, which carries the metadata log (Raft) only", kmsg.NameForKey(c.hdr.key), c.listener)
	case controller && !controllerAPIs[c.hdr.key]:
		return fmt.Errorf("%s is not served on the controller listener %s", kmsg.NameForKey(c.hdr.key), c.listener)
	case !controller && h.internal:
		return fmt.Errorf("%s is served only on controller listeners (controller.listener.names), not on %s", kmsg.NameForKey(c.hdr.key), c.listener)
	}
	if c.hdr.version < h.min || c.hdr.version > h.max {
		if c.hdr.key == kmsg.ApiVersions.Int16() {
			// KIP-511: answer in v0 with our ranges, so the client can
			// pick a version it shares with us.
			// Kafka lists only ApiVersions itself in this answer.
			own := kmsg.ApiVersionsResponseApiKey{ApiKey: c.hdr.key, MinVersion: h.min, MaxVersion: h.max}
			return c.write(&kmsg.ApiVersionsResponse{ErrorCode: kerr.UnsupportedVersion.Code, ApiKeys: []kmsg.ApiVersionsResponseApiKey{own}}, nil)
		}
		// Produce v0-v2 land here too: listed (see apis.go) but refused by
		// closing the connection, as Kafka 4 does.
		return fmt.Errorf("%s v%d is not supported (v%d-v%d are)", kmsg.NameForKey(c.hdr.key), c.hdr.version, h.min, h.max)
	}
	req.SetVersion(c.hdr.version)
	if req.IsFlexible() {
		skipTags(&r)
	}
	if !r.Ok() {
		return fmt.Errorf("truncated request header")
	}
	if err := req.ReadFrom(r.Src); err != nil {
		return fmt.Errorf("decoding %s v%d: %w", kmsg.NameForKey(c.hdr.key), c.hdr.version, err)
	}
	start := time.Now()
	var resp kmsg.Response
	var err error
	testHook(c)
	c.started, c.waited = start, 0
	ids := c.resolveTopicIDs(req) // before the ACLs, which match names (topic_ids.go)
	deny, post := c.authorizeRequest(req)
	if deny != nil {
		resp = deny
		c.chargeRefused()
	} else {
		resp, err = c.withQuotas(req, h, len(body))
	}
	if post != nil && resp != nil && err == nil {
		post(resp)
	}
	if ids != nil && resp != nil && err == nil {
		ids(resp)
	}
	c.s.metrics.observe(c.hdr.key, c.hdr.version, time.Since(start), err)
	c.freeBody(err == nil)
	if err != nil {
		return err
	}
	if resp == nil {
		if c.closeAfter {
			return errClose // acks=0 with an error nobody is told of (acl_authz.go)
		}
		c.mute() // acks=0, or a Fetch that wrote its own answer
		return nil
	}
	resp.SetVersion(c.hdr.version)
	c.applyThrottle(resp)
	if err := c.write(resp, nil); err != nil || !c.closeAfter {
		if err == nil {
			c.mute()
		}
		return err
	}
	return errClose
}

// dispatch has the request served: by the active controller when it is
// one of the forwarded APIs, here otherwise.
func (c *conn) dispatch(req kmsg.Request, h handler) (kmsg.Response, error) {
	if c.s.forwards(c, c.hdr.key) {
		return c.s.forward(c, req, h)
	}
	return h.fn(c, req)
}

func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// write sends one response frame. Fetch responses pass their record file
// ranges in files (see files.go).
func (c *conn) write(resp kmsg.Response, files *fileRanges) error {
	buf := append(c.out[:0], 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(buf[4:], uint32(c.hdr.correlation))
	// ApiVersions answers with header v0 whatever its version, so that a
	// client can read it before it knows what we speak.
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	if cap(buf) <= keptResponseBuffer {
		c.out = buf
	}
	c.nc.SetWriteDeadline(time.Now().Add(c.s.requestTimeout))
	if files == nil {
		binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
		_, err := c.nc.Write(buf)
		return err
	}
	return files.write(c.nc, buf)
}
