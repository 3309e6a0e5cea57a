package config

const (
	msPerHour   = 3_600_000
	msPerMinute = 60_000
)

// TopicDefs are the topic-level properties, with the broker properties they
// fall back to. A topic's default is its first synonym that is set, else the
// last synonym's default.
var TopicDefs = defs(
	Def{Name: "cleanup.policy", Type: List, Check: listOf("delete", "compact"), Synonyms: []string{"log.cleanup.policy"},
		Doc: "delete removes old segments; compact keeps the last record per key; both may be given."},
	Def{Name: "compression.type", Type: String, Check: oneOf("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
		Synonyms: []string{"compression.type"}, Doc: "producer stores batches as the producer compressed them; a codec (or uncompressed) rebuilds every other batch in it, as Kafka does."},
	Def{Name: "delete.retention.ms", Type: Long, Check: atLeast(0), Synonyms: []string{"log.cleaner.delete.retention.ms"},
		Doc: "How long a tombstone survives after the cleaner first sees it."},
	Def{Name: "file.delete.delay.ms", Type: Long, Check: atLeast(0), Synonyms: []string{"log.segment.delete.delay.ms"},
		Doc: "How long a deleted segment stays readable."},
	Def{Name: "flush.messages", Type: Long, Check: atLeast(1), Synonyms: []string{"log.flush.interval.messages"},
		Doc: "fsync after this many messages."},
	Def{Name: "flush.ms", Type: Long, Check: atLeast(0), Synonyms: []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
		Doc: "fsync data older than this."},
	Def{Name: "index.interval.bytes", Type: Int, Check: atLeast(0), Synonyms: []string{"log.index.interval.bytes"},
		Doc: "Bytes between offset index entries."},
	Def{Name: "max.message.bytes", Type: Int, Check: atLeast(0), Synonyms: []string{"message.max.bytes"},
		Doc: "The largest record batch the topic accepts."},
	Def{Name: "message.timestamp.type", Type: String, Check: oneOf("CreateTime", "LogAppendTime"), Synonyms: []string{"log.message.timestamp.type"},
		Doc: "Whether record timestamps are the producer's or the broker's append time."},
	Def{Name: "message.timestamp.before.max.ms", Type: Long, Check: atLeast(0), Synonyms: []string{"log.message.timestamp.before.max.ms"},
		Doc: "With CreateTime, a batch holding a record older than this (by the broker's clock) is refused with INVALID_TIMESTAMP."},
	Def{Name: "message.timestamp.after.max.ms", Type: Long, Check: atLeast(0), Synonyms: []string{"log.message.timestamp.after.max.ms"},
		Doc: "With CreateTime, a batch holding a record further than this in the future (by the broker's clock) is refused with INVALID_TIMESTAMP."},
	Def{Name: "min.cleanable.dirty.ratio", Type: Double, Check: between(0, 1), Synonyms: []string{"log.cleaner.min.cleanable.ratio"},
		Doc: "Dirty ratio that triggers cleaning."},
	Def{Name: "min.compaction.lag.ms", Type: Long, Check: atLeast(0), Synonyms: []string{"log.cleaner.min.compaction.lag.ms"},
		Doc: "Records younger than this are not compacted."},
	Def{Name: "max.compaction.lag.ms", Type: Long, Check: atLeast(1), Synonyms: []string{"log.cleaner.max.compaction.lag.ms"},
		Doc: "Accepted but not enforced: the cleaner cleans by min.cleanable.dirty.ratio alone, so a record may stay uncompacted longer than this."},
	Def{Name: "min.insync.replicas", Type: Int, Check: atLeast(1), Synonyms: []string{"min.insync.replicas"},
		Doc: "Replicas that must acknowledge an acks=all write."},
	Def{Name: "preallocate", Type: Bool, Synonyms: []string{"log.preallocate"}, Doc: "Accepted; segments are never preallocated."},
	Def{Name: "retention.bytes", Type: Long, Synonyms: []string{"log.retention.bytes"},
		Doc: "Delete old segments while the partition is larger; -1 for no limit."},
	Def{Name: "retention.ms", Type: Long, Check: atLeast(-1), Synonyms: []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
		Scale: []int64{1, msPerMinute, msPerHour}, Doc: "Delete segments older than this; -1 keeps them."},
	Def{Name: "segment.bytes", Type: Int, Check: atLeast(14), Synonyms: []string{"log.segment.bytes"}, Doc: "The largest segment file."},
	Def{Name: "segment.index.bytes", Type: Int, Check: atLeast(4), Synonyms: []string{"log.index.size.max.bytes"},
		Doc: "The largest offset index before a roll."},
	Def{Name: "segment.jitter.ms", Type: Long, Check: atLeast(0), Synonyms: []string{"log.roll.jitter.ms", "log.roll.jitter.hours"},
		Scale: []int64{1, msPerHour}, Doc: "Accepted; Tributary does not jitter rolls."},
	Def{Name: "segment.ms", Type: Long, Check: atLeast(1), Synonyms: []string{"log.roll.ms", "log.roll.hours"},
		Scale: []int64{1, msPerHour}, Doc: "Roll a segment this old."},
	Def{Name: "leader.replication.throttled.replicas", Type: List, Default: "", Check: throttledReplicas,
		Doc: "Replicas whose leader throttles what it serves to followers out of the ISR, to leader.replication.throttled.rate: partition:broker,... naming the leaders, or * for every replica of the topic. kafka-reassign-partitions --throttle sets it and --verify removes it."},
	Def{Name: "follower.replication.throttled.replicas", Type: List, Default: "", Check: throttledReplicas,
		Doc: "Replicas whose follower throttles its fetching while out of the ISR, to follower.replication.throttled.rate: partition:broker,... naming the followers, or * for every replica of the topic."},
	Def{Name: "unclean.leader.election.enable", Type: Bool, Synonyms: []string{"unclean.leader.election.enable"},
		Doc: "Allow an out-of-sync replica to become leader, losing data."},
)
