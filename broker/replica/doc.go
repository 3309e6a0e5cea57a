// Package replica owns the partitions this broker hosts: each partition's
// log, its idempotent producer state, its leader epoch and high watermark,
// and Kafka's replication of them between brokers. A leader tracks its
// followers' log ends, keeps the ISR (asking the controller to change it)
// and advances the high watermark to the smallest ISR log end, which is
// what an acks=all produce waits for. A follower fetches from its leader,
// after truncating its log where it diverged from the leader's (by leader
// epoch, KIP-101 and KIP-279). A single replica is the whole ISR, so its
// high watermark follows its log end.
//
// Partition methods are safe for concurrent use; see Partition.
//
// # Metadata
//
// Manager.Apply is the controller's subscriber: it runs on the controller's
// publishing goroutine (the Raft FSM's, or a single node's publisher), never
// under the controller's request lock, once per published image, in order.
// It visits only the topics and partitions the change touched (an
// unchanged topic is the same *cluster.Topic in both images), so a record
// costs the partitions it names, not every partition hosted.
//
// A partition that fails to apply (its log cannot be created, configured
// or deleted: a full or failing disk, a permission, a file in the way) is
// not dropped with a log line. It is kept in Manager.Failures and retried
// from the newest image, after 1 s and then twice as long each time up to
// 30 s, until it succeeds or the metadata moves it away; meanwhile it counts
// in /metrics as tributary_broker_offline_replicas (Kafka's
// OfflineReplicaCount) and its log dir answers KAFKA_STORAGE_ERROR in
// DescribeLogDirs, as a failed dir does in Kafka. The other partitions of
// the change are applied regardless. An I/O error of the file system itself
// (broker/log's offline.go) takes the whole dir offline instead: DirFailed
// moves its partitions out of the hosted ones into the offline set
// (offline.go), and the broker's heartbeats tell the controller, which moves
// their leadership away (KIP-858's outcome; see docs/cluster.md).
//
// # Locks
//
// Who owns what: Manager.parts (mu) is the set of hosted partitions;
// Manager.failed is written by the applier; each Partition's state is
// described on Partition. Lock order, outermost first (a lock is only
// taken while holding those above it):
//
//	Manager.applyMu      one apply or retry at a time; held across disk work
//	  Manager.mu         the partition map, held only to read or swap an entry
//	  Manager.failMu     the failures, a leaf
//	  Manager.offline.mu the replicas of failed log dirs, a leaf
//	  Manager.fmu        fetchers and who follows whom
//	    fetcher.mu       a fetcher's partitions
//	Partition.snapMu     producer snapshots (files)
//	  Partition.appendMu appends and the producer state
//	    Partition.stateMu replication state: leader, ISR, followers, high watermark
//	quota.mu             a replication quota (throttle.go), a leaf: taken
//	                     after Partition.stateMu is released, never with it
//
// No lock of this package is held while waiting for the network: an
// acks=all produce waits on Partition.HWChanged (WaitCommitted) with no lock,
// and the group coordinator appends under its own lock and waits without
// it. Callers may hold their own locks around AppendAsLeader (the group
// coordinator's) but never take them from code called here.
package replica
