package kafkacli

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic ids came with Metadata v10 (KIP-516); kafka-go speaks Metadata up to
// v8 and so never sees them. TopicIDs asks for them with one Metadata
// request encoded by kmsg, the codec the broker itself uses, on a plain
// connection to a bootstrap broker. Everything else goes through kafka-go.

// metadataIDVersion is the newest Metadata version TopicIDs sends; v10 is
// the oldest that has topic ids.
const (
	metadataIDVersion    = 12
	metadataIDMinVersion = 10
)

// TopicIDs fills the ID of each topic from a Metadata v10+ request. A
// cluster too old for topic ids leaves them zero and is not an error.
func (c *Cluster) TopicIDs(ctx context.Context, topics []TopicInfo) error {
	if len(topics) == 0 {
		return nil
	}
	av, err := c.Client.ApiVersions(ctx, &kafka.ApiVersionsRequest{})
	if err != nil {
		return fmt.Errorf("ApiVersions: %w", unwrapClient(err))
	}
	version := -1
	for _, k := range av.ApiKeys {
		if k.ApiKey == int(kmsg.Metadata) {
			version = min(k.MaxVersion, metadataIDVersion)
		}
	}
	if version < metadataIDMinVersion {
		return nil
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Version = int16(version)
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t.Name)
		req.Topics = append(req.Topics, rt)
	}
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	if err := c.rawRequest(ctx, req, resp); err != nil {
		return fmt.Errorf("Metadata v%d: %w", version, err)
	}
	ids := map[string][16]byte{}
	for _, t := range resp.Topics {
		if t.Topic != nil && t.ErrorCode == 0 {
			ids[*t.Topic] = t.TopicID
		}
	}
	for i := range topics {
		topics[i].ID = ids[topics[i].Name]
	}
	return nil
}

// FormatTopicID prints an id as Kafka does (Uuid.toString: URL-safe base64
// without padding), or "-" for none.
func FormatTopicID(id [16]byte) string {
	if id == ([16]byte{}) {
		return "-"
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// rawRequest sends req to the first bootstrap broker that accepts a
// connection and decodes its answer into resp.
func (c *Cluster) rawRequest(ctx context.Context, req kmsg.Request, resp kmsg.Response) error {
	var conn net.Conn
	var err error
	d := net.Dialer{Timeout: 10 * time.Second}
	for _, addr := range c.Brokers {
		if conn, err = d.DialContext(ctx, "tcp", addr); err == nil {
			break
		}
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)

	const correlationID = 1
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID(ClientID)).AppendRequest(nil, req, correlationID)
	if _, err := conn.Write(frame); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		return fmt.Errorf("response of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != correlationID {
		return fmt.Errorf("correlation id %d, want %d", got, correlationID)
	}
	body = body[4:]
	if resp.IsFlexible() { // response header v1: tagged fields
		body, err = skipTags(body)
		if err != nil {
			return err
		}
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body)
}

// skipTags skips a tagged-fields section: a count, then tag, size, data.
func skipTags(b []byte) ([]byte, error) {
	errShort := errors.New("short tagged fields")
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errShort
	}
	b = b[n:]
	for range count {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, errShort
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < size {
			return nil, errShort
		}
		b = b[n+int(size):]
	}
	return b, nil
}
