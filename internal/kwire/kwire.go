// Package kwire is the client side of the Kafka protocol between brokers:
// one connection, one request at a time, each framed with a request header
// and its response decoded with kmsg. Brokers use it to reach the active
// controller and their partitions' leaders; clients use franz-go.
package kwire

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Conn is a connection to one broker.
type Conn struct {
	nc       net.Conn
	r        *bufio.Reader
	clientID string
	corr     int32
	buf      []byte
	resp     []byte // the last RoundTripReusing's response body
}

// Dial connects to addr; clientID names this end in the server's logs.
func Dial(ctx context.Context, addr, clientID string) (*Conn, error) {
	return DialSecure(ctx, addr, clientID, Security{})
}

func newConn(nc net.Conn, clientID string) *Conn {
	return &Conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), clientID: clientID}
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// RoundTrip sends req (at its version, capped by what kmsg knows) and reads
// its response, within timeout. After an error the connection is unusable.
func (c *Conn) RoundTrip(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	return c.roundTrip(req, timeout, false)
}

// RoundTripReusing is RoundTrip for a caller that is done with the response
// before its next call on c: the response's byte fields (a Fetch's record
// batches) alias a buffer that the next RoundTripReusing overwrites. A
// follower fetching megabytes at a time would otherwise hand each response
// to the garbage collector.
func (c *Conn) RoundTripReusing(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	return c.roundTrip(req, timeout, true)
}

// maxReusedResponse bounds the buffer a connection keeps for
// RoundTripReusing: a follower's fetch may be tens of MiB after a pause,
// and a buffer of that size held per leader for the connection's life
// would cost more memory than the collector's work it saves.
const maxReusedResponse = 8 << 20

func (c *Conn) roundTrip(req kmsg.Request, timeout time.Duration, reuse bool) (kmsg.Response, error) {
	if req.GetVersion() > req.MaxVersion() {
		req.SetVersion(req.MaxVersion())
	}
	c.nc.SetDeadline(time.Now().Add(timeout))
	c.corr++
	c.buf = AppendRequest(c.buf[:0], req, c.corr, c.clientID)
	if _, err := c.nc.Write(c.buf); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<30 {
		return nil, fmt.Errorf("kwire: response of %d bytes", n)
	}
	var body []byte
	switch {
	case !reuse || n > maxReusedResponse:
		body = make([]byte, n)
	case cap(c.resp) >= int(n):
		body = c.resp[:n]
	default:
		body = make([]byte, n)
		c.resp = body
	}
	if _, err := io.ReadFull(c.r, body); err != nil {
		return nil, err
	}
	return c.decode(req, body)
}

// decode reads a response frame's body (correlation id onwards).
func (c *Conn) decode(req kmsg.Request, body []byte) (kmsg.Response, error) {
	if corr := int32(binary.BigEndian.Uint32(body)); corr != c.corr {
		return nil, fmt.Errorf("kwire: response to request %d, expected %d", corr, c.corr)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body = body[4:]
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		body = body[1:] // the servers we talk to send no header tags
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("kwire: decoding %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// AppendRequest frames req with a request header (v2 when flexible), as
// a client sends it.
func AppendRequest(buf []byte, req kmsg.Request, corr int32, clientID string) []byte {
	buf = append(buf, 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = binary.BigEndian.AppendUint32(buf, uint32(corr))
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(clientID)))
	buf = append(buf, clientID...)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// Topics groups partitions under their topic, as every Kafka request and
// response lists them: Slot finds the entry of a topic in *list, appending
// one made by mk the first time.
type Topics[T any] struct {
	list  *[]T
	mk    func(topic string) T
	index map[string]int
}

// NewTopics groups into list.
func NewTopics[T any](list *[]T, mk func(topic string) T) *Topics[T] {
	return &Topics[T]{list: list, mk: mk, index: map[string]int{}}
}

// Slot is the entry of topic, made if it is new. The pointer is good until
// the next Slot, which may grow the list.
func (g *Topics[T]) Slot(topic string) *T {
	i, ok := g.index[topic]
	if !ok {
		i = len(*g.list)
		g.index[topic] = i
		*g.list = append(*g.list, g.mk(topic))
	}
	return &(*g.list)[i]
}
