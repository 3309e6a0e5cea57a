package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

// shareAcks are consume --share-ack's values.
var shareAcks = map[string]kgo.AckStatus{"accept": kgo.AckAccept, "release": kgo.AckRelease, "reject": kgo.AckReject}

// consumeShare reads topic as a member of a KIP-932 share group (franz-go:
// kafka-go has no share consumer): the broker hands this member records
// that no other member holds, and each printed record is acknowledged with
// ack once printed. It ends after count records (0: until ctx is done),
// leaving the group.
func consumeShare(ctx context.Context, bootstrap, topic, group string, ack kgo.AckStatus, count int64, appendRecord func([]byte, *kafka.Message) []byte, w io.Writer) (int64, error) {
	brokers, err := kafkacli.ParseBootstrap(bootstrap)
	if err != nil {
		return 0, err
	}
	opts, err := kafkacli.ClientOpts()
	if err != nil {
		return 0, err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ClientID(kafkacli.ClientID),
		kgo.ShareGroup(group), kgo.ConsumeTopics(topic)}, opts...)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	out := bufio.NewWriterSize(w, 64<<10)
	defer out.Flush()
	var n int64
	var buf []byte
	for count == 0 || n < count {
		max := 500
		if count > 0 {
			max = int(min(count-n, 500))
		}
		fs := cl.PollRecords(ctx, max)
		if ctx.Err() != nil {
			break
		}
		for _, e := range fs.Errors() {
			return n, fmt.Errorf("share group %q, topic %s: %w", group, e.Topic, e.Err)
		}
		var err error
		fs.EachRecord(func(r *kgo.Record) {
			if err != nil || count > 0 && n >= count {
				// Not printed: released for another member.
				cl.MarkAcks(kgo.AckRelease, r)
				return
			}
			m := &kafka.Message{Topic: r.Topic, Partition: int(r.Partition), Offset: r.Offset, Key: r.Key, Value: r.Value, Time: r.Timestamp}
			for _, h := range r.Headers {
				m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
			}
			buf = appendRecord(buf[:0], m)
			if _, err = out.Write(buf); err != nil {
				cl.MarkAcks(kgo.AckRelease, r)
				return
			}
			cl.MarkAcks(ack, r)
			n++
		})
		if err != nil {
			return n, err
		}
		if err := out.Flush(); err != nil {
			return n, err
		}
	}
	// Acknowledgements go with the next fetch or on their own: send them
	// before leaving, whether or not ctx is done.
	fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return n, cl.FlushAcks(fctx)
}
