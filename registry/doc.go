// Package registry is a schema registry with the Confluent Schema Registry
// HTTP API, storing its state in the compacted `_schemas` topic through
// the Kafka protocol, in Confluent's own record format (records.go), so
// that every node that tails the topic serves the same subjects, versions
// and ids. `tributary broker` runs it in-process when
// schema.registry.listeners is set; docs/registry.md is the user's guide.
//
// Concurrency: one goroutine (tail) consumes `_schemas` and is the only
// writer of the state, under Registry.mu. HTTP handlers read the state
// under mu; writes go through Registry.writeMu, one at a time per process,
// produce a record and wait until tail has applied it.
package registry
