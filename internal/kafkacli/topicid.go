package kafkacli

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic ids came with Metadata v10 (KIP-516); kafka-go speaks Metadata up to
// v8 and so never sees them. TopicIDs asks for them with one Metadata
// request sent by franz-go, with the same client properties. Everything
// else goes through kafka-go.

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

// rawRequest sends req through a franz-go client with the process's client
// properties (TLS, SASL), so that it reaches the listeners every other
// command reaches, and decodes its answer into resp.
func (c *Cluster) rawRequest(ctx context.Context, req kmsg.Request, resp *kmsg.MetadataResponse) error {
	opts, err := ClientOpts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.ClientID(ClientID),
		kgo.DialTimeout(10 * time.Second), kgo.RequestRetries(1)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := cl.Request(ctx, req)
	if err != nil {
		return err
	}
	*resp = *got.(*kmsg.MetadataResponse)
	return nil
}
