// Package share serves KIP-932 share groups ("queues for Kafka"): the
// membership of share groups (ShareGroupHeartbeat, ShareGroupDescribe) and
// the share partitions a broker leads, where records are acquired by
// members under time-limited locks, acknowledged (ACCEPT, RELEASE,
// REJECT), redelivered with growing delivery counts and archived past
// group.share.delivery.count.limit (ShareFetch, ShareAcknowledge).
//
//   - partition.go is the share partition's state machine (Kafka's
//     SharePartition): no I/O, no clock.
//   - group.go is a share group's membership and its assignment.
//   - manager.go holds both behind one lock, with the share sessions and
//     the timers (expired locks, expired members); its methods are safe
//     for concurrent use. Lock order: Manager.wmu, then Manager.mu; the
//     state store (Store: broker/server's __share_group_state) is written
//     without mu.
//   - state_records.go is Kafka's ShareSnapshot/ShareUpdate records.
//
// The broker's handlers (broker/server 76–79) resolve topics, check
// leadership and ACLs and read the record bytes; this package decides
// which offsets a member gets.
package share
