// Package group is the group coordinator: the classic consumer group
// protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, static membership)
// and committed offsets, persisted as records of the compacted internal
// topic __consumer_offsets with Apache Kafka's key and value schemas.
//
// The package has two layers, as etcd's raft:
//
//   - Groups (state.go, offsets.go) is the state machine. It does no I/O and
//     reads no clock: every call is given the time, answers delayed requests
//     through the reply functions it was handed, and queues the records it
//     wants persisted as Writes. It is not safe for concurrent use.
//   - Coordinator (coordinator.go) is the edge: it owns the lock around
//     Groups, appends the queued Writes to the __consumer_offsets partitions
//     (a write's Done runs after its append, so a commit is acknowledged
//     only once it is in the log), loads the partitions from the log at
//     start, and drives the timers (session timeouts, rebalance timeouts,
//     offset expiry) with a ticker. Its methods are safe for concurrent use.
//
// A group lives in the partition abs(javaHashCode(groupID)) %
// offsets.topic.num.partitions, as in Kafka, so Kafka's tools and a Kafka
// broker reading our log agree on where a group is.
package group
