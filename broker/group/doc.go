// Package group is the group coordinator: the classic consumer group
// protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, static membership),
// the KIP-848 consumer protocol (ConsumerGroupHeartbeat, server-side
// assignors: consumer_group.go, consumer_assign.go, consumer_records.go,
// consumer_coordinator.go) and committed offsets, persisted as records of
// the compacted internal topic __consumer_offsets with Apache Kafka's key
// and value schemas.
//
// The package has two layers, as etcd's raft:
//
//   - Groups (state.go, offsets.go) is the state machine. It does no I/O and
//     reads no clock: every call is given the time, answers delayed requests
//     through the reply functions it was handed, and queues the records it
//     wants persisted as Writes. It is not safe for concurrent use.
//   - Coordinator (coordinator.go) is the edge: it owns the lock around
//     Groups, appends the queued Writes to the __consumer_offsets partitions,
//     loads the partitions from the log at start, and drives the timers
//     (session timeouts, rebalance timeouts, offset expiry) with a ticker.
//     Its methods are safe for concurrent use.
//
// A write is appended under the coordinator's lock and completed without
// it, as Kafka's delayed produce: the partition's completer waits for the
// high watermark to cover the write, then runs its Done under the lock, so
// a commit is acknowledged (and applied to the state machine) only once
// the ISR has it, while the other groups' requests go on meanwhile. The
// Dones of one partition run in log order, which keeps every group's
// writes in the order the state machine queued them. A write that fails
// (lost leadership: NOT_COORDINATOR; no ISR within 5 s, Kafka's
// offsets.commit.timeout.ms default, not configurable here:
// COORDINATOR_NOT_AVAILABLE, as Kafka answers both) changes nothing in
// the state machine; its record may still be committed later and is then
// read back at the next load, as in Kafka.
//
// A group lives in the partition abs(javaHashCode(groupID)) %
// offsets.topic.num.partitions, as in Kafka, so Kafka's tools and a Kafka
// broker reading our log agree on where a group is.
package group
