package tail

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

// NewWriter is the tailer's producer, configured as tracker/deliver's:
// acks=all, lz4, Kafka's murmur2 partitioner on the key (round robin
// without one), a 5 ms linger. batchLines should be Config.BatchLines, so
// that one produce call is one request per partition.
func NewWriter(brokers []string, batchLines int, logger *slog.Logger) (*kafka.Writer, error) {
	if batchLines <= 0 {
		batchLines = DefaultBatchLines
	}
	if logger == nil {
		logger = slog.Default()
	}
	tr := &kafka.Transport{ClientID: kafkacli.ClientID, DialTimeout: 5 * time.Second,
		// kafka-go keeps a failed metadata lookup for 6 s by default: a
		// broker that comes back would wait that long.
		MetadataTTL: time.Second}
	// The process's client properties (TLS, SASL; docs/security.md).
	if err := kafkacli.SecureTransport(tr); err != nil {
		return nil, err
	}
	return &kafka.Writer{
		Addr:                   kafka.TCP(brokers...),
		Transport:              tr,
		Balancer:               kafkacli.NewPartitioner(-1),
		RequiredAcks:           kafka.RequireAll,
		AllowAutoTopicCreation: true,
		Compression:            kafka.Lz4,
		BatchSize:              batchLines,
		BatchBytes:             1 << 20, // Kafka's message.max.bytes; larger calls are split
		BatchTimeout:           kafkacli.DefaultLinger,
		MaxAttempts:            3,
		WriteBackoffMin:        50 * time.Millisecond,
		WriteBackoffMax:        500 * time.Millisecond,
		WriteTimeout:           10 * time.Second,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			logger.Debug("kafka-go writer: " + fmt.Sprintf(msg, args...))
		}),
	}, nil
}
