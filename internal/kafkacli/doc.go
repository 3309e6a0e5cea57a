// Package kafkacli is what the Kafka client commands of cmd/tributary share
// (topic, produce, consume, perf): a connection to a cluster through
// github.com/segmentio/kafka-go, topic lookups that fail with the name of what
// was asked for, the partitioner, start offsets, the kcat-style output
// template, and the producer and consumer performance loops.
//
// Everything speaks the Kafka protocol, so it works against Tributary and
// Apache Kafka alike. kafka-go is the product's client (DESIGN.md); the one
// thing it cannot ask for, a topic's id (Metadata v10+), is read with one
// kmsg-encoded Metadata request (topicid.go).
//
// Concurrency: a Cluster is safe for concurrent use, as kafka-go's Client and
// Transport are. Format values are immutable once parsed. Consume calls its
// callback from one goroutine.
package kafkacli
