package kafkacli

import (
	"fmt"
	"strings"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// ParseAcks reads Kafka's acks setting: all (or -1), 1 or 0.
func ParseAcks(s string) (kafka.RequiredAcks, error) {
	switch strings.ToLower(s) {
	case "all", "-1":
		return kafka.RequireAll, nil
	case "1":
		return kafka.RequireOne, nil
	case "0":
		return kafka.RequireNone, nil
	}
	return 0, fmt.Errorf("--acks %q: want all (or -1), 1 or 0", s)
}

// ParseCompression reads Kafka's compression.type: none, gzip, snappy, lz4
// or zstd.
func ParseCompression(s string) (kafka.Compression, error) {
	switch strings.ToLower(s) {
	case "none", "":
		return 0, nil
	case "gzip":
		return compress.Gzip, nil
	case "snappy":
		return compress.Snappy, nil
	case "lz4":
		return compress.Lz4, nil
	case "zstd":
		return compress.Zstd, nil
	}
	return 0, fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", s)
}

// ParseKV splits "key=value"; flag names the flag in the error.
func ParseKV(flag, s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", "", fmt.Errorf("--%s %q: want key=value", flag, s)
	}
	return k, v, nil
}

// Partitioner places records as Apache Kafka's Java producer does: a keyed
// record goes to murmur2(key) mod partitions, so a key lands in the same
// partition whichever client wrote it; records without a key are spread
// round-robin (Kafka's own client sticks to one partition per batch, which
// spreads them the same way over time). With Fixed >= 0 every record goes
// to that partition.
type Partitioner struct {
	Fixed   int // -1: choose by key
	keyed   kafka.Murmur2Balancer
	keyless kafka.RoundRobin // safe for concurrent use
}

// NewPartitioner returns a partitioner writing to partition fixed, or by
// key when fixed is -1.
func NewPartitioner(fixed int) *Partitioner {
	return &Partitioner{Fixed: fixed, keyed: kafka.Murmur2Balancer{Consistent: true}}
}

// Balance implements kafka.Balancer.
func (p *Partitioner) Balance(m kafka.Message, partitions ...int) int {
	if p.Fixed >= 0 {
		return p.Fixed
	}
	if m.Key != nil {
		return p.keyed.Balance(m, partitions...)
	}
	return p.keyless.Balance(m, partitions...)
}
