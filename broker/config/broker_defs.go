package config

// BrokerDefs are the broker properties Tributary understands, with Kafka's
// names and, except where noted, Kafka's defaults. A property missing here
// is refused at start, so that a typo never silently does nothing.
var BrokerDefs = defs(
	// Identity and roles.
	Def{Name: "node.id", Type: Int, Default: "1", Check: atLeast(0),
		Doc: "The node's id in the cluster. Kafka has no default; Tributary's single-node default is 1."},
	Def{Name: "process.roles", Type: List, Default: "broker,controller", Check: listOf("broker", "controller"),
		Doc: "The roles of this process: broker (hosts partitions, follows the metadata log), controller (a voter of controller.quorum.voters) or both (combined mode). A single node, without controller.quorum.voters, is always both."},
	Def{Name: "broker.rack", Type: String, NoDefault: true, Doc: "The rack of the broker: new topics' replicas are spread over as many racks as there are."},
	Def{Name: "cluster.id", Type: String, NoDefault: true,
		Doc: "The cluster id; generated and stored in meta.properties of each log dir on first start when unset."},

	// Network.
	Def{Name: "listeners", Type: List, Default: "PLAINTEXT://127.0.0.1:9092",
		Doc: "Listeners as NAME://host:port. Kafka's default binds every interface; Tributary's binds loopback until told otherwise."},
	Def{Name: "advertised.listeners", Type: List, NoDefault: true,
		Doc: "Listeners published to clients in Metadata, when they differ from listeners."},
	Def{Name: "listener.security.protocol.map", Type: List,
		Default: "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
		Doc:     "Maps listener names to security protocols."},
	Def{Name: "controller.listener.names", Type: List, NoDefault: true, Doc: "The listeners of the controller role: they carry the quorum's Raft traffic and serve only the APIs brokers send to the controller."},
	Def{Name: "controller.quorum.voters", Type: List, NoDefault: true, Doc: "The controller quorum: id@host:port,... of each node with the controller role, at its controller listener."},
	Def{Name: "controller.quorum.election.timeout.ms", Type: Int, Default: "1000", Check: atLeast(1),
		Doc: "How long a voter waits without hearing from a leader before it calls an election."},
	Def{Name: "broker.session.timeout.ms", Type: Int, Default: "9000", Check: atLeast(1),
		Doc: "A broker without a heartbeat for this long is fenced by the active controller, and its partitions lose it as leader."},
	Def{Name: "broker.heartbeat.interval.ms", Type: Int, Default: "2000", Check: atLeast(1),
		Doc: "How often a broker heartbeats to the active controller."},
	Def{Name: "initial.broker.registration.timeout.ms", Type: Int, Default: "60000", Check: atLeast(1),
		Doc: "How long a starting broker refused because another live broker has its node.id (DUPLICATE_BROKER_REGISTRATION) goes on trying before it exits. A broker that reaches no controller says ready after at most 30 s and goes on trying in the background."},
	Def{Name: "schema.registry.listeners", Type: List, Default: "",
		Doc: "Where the broker serves the Confluent-compatible schema registry API, as http://host:port (Confluent's listeners format; the first is used). Empty turns it off; `tributary dev` serves it on 127.0.0.1:8081. Its state is in the compacted _schemas topic (docs/registry.md)."},
	Def{Name: "inter.broker.listener.name", Type: String, NoDefault: true, Doc: "The listener brokers use to reach each other."},
	Def{Name: "socket.request.max.bytes", Type: Int, Default: "104857600", Check: atLeast(1),
		Doc: "The largest request frame; a larger one closes the connection before anything is allocated."},
	Def{Name: "socket.send.buffer.bytes", Type: Int, Default: "102400", Doc: "SO_SNDBUF of client sockets; -1 for the OS default."},
	Def{Name: "socket.receive.buffer.bytes", Type: Int, Default: "-1", Doc: "SO_RCVBUF of client sockets; -1 for the kernel's autotuning. Kafka's default is 102400, which caps the TCP window and slowed large produce requests by about 15 % on loopback (docs/PERFORMANCE.md)."},
	Def{Name: "connections.max.idle.ms", Type: Long, Default: "600000", Check: atLeast(1),
		Doc: "A connection that sends no request for this long is closed; a request waiting for queued.max.request.bytes or a long-polling fetch is not idle."},
	Def{Name: "queued.max.request.bytes", Type: Long, Default: "536870912", Check: atLeastOrUnbounded(1),
		Doc: "Bytes of request frames that may be read into memory at once, over every connection; a connection whose frame does not fit stops being read until memory is released (Kafka mutes it). Frames of 64 KiB or less are exempt: each connection holds at most one. -1 is unbounded, Kafka's default; Tributary's is 512 MiB, raised to socket.request.max.bytes when that is larger and this is not set (docs/operations.md)."},
	Def{Name: "max.connections", Type: Int, Default: "2147483647", Check: atLeast(0),
		Doc: "Connections the broker keeps open at once over its client listeners; one more is closed as it is accepted. Controller listeners and inter.broker.listener.name are not counted, so that a flood of clients never locks out the quorum or replication."},
	Def{Name: "max.connections.per.ip", Type: Int, Default: "2147483647", Check: atLeast(0),
		Doc: "Connections one IP address may keep open on the client listeners (not the controller listeners); one more is closed as it is accepted."},
	Def{Name: "max.connections.per.ip.overrides", Type: String, Default: "",
		Doc: "Per-IP exceptions to max.connections.per.ip, as host:count,ip:count; a host name is resolved at start."},
	Def{Name: "max.connection.creation.rate", Type: Int, Default: "2147483647", Check: atLeast(0), Dynamic: true,
		Doc: "New connections per second the broker accepts over its client listeners (not the controller listeners or inter.broker.listener.name); past it, accepting waits until the rate is back under it (KIP-612). Per IP address: the connection_creation_rate quota (tributary quota set --ip)."},
	Def{Name: "quota.window.num", Type: Int, Default: "11", Check: atLeast(1),
		Doc: "The number of samples client quotas are measured over (docs/security.md, Quotas)."},
	Def{Name: "quota.window.size.seconds", Type: Int, Default: "1", Check: atLeast(1),
		Doc: "The time span of each sample of client quotas."},
	Def{Name: "num.network.threads", Type: Int, Default: "3", Check: atLeast(1),
		Doc: "Accepted for compatibility: every connection has its own goroutine."},
	Def{Name: "num.io.threads", Type: Int, Default: "8", Check: atLeast(1),
		Doc: "Accepted for compatibility: requests run on their connection's goroutine."},

	// Topics.
	Def{Name: "auto.create.topics.enable", Type: Bool, Default: "true", Doc: "Create a topic when a client asks for metadata of one that does not exist."},
	Def{Name: "num.partitions", Type: Int, Default: "1", Check: atLeast(1), Doc: "Partitions of auto-created topics and of CreateTopics without a count."},
	Def{Name: "default.replication.factor", Type: Int, Default: "1", Check: atLeast(1), Doc: "Replication factor of auto-created topics and of CreateTopics without one."},
	Def{Name: "min.insync.replicas", Type: Int, Default: "1", Check: atLeast(1), Doc: "Replicas that must acknowledge an acks=all write."},
	Def{Name: "delete.topic.enable", Type: Bool, Default: "true", Doc: "Allow DeleteTopics."},
	Def{Name: "message.max.bytes", Type: Int, Default: "1048588", Check: atLeast(0), Doc: "The largest record batch a topic accepts, unless max.message.bytes overrides it."},
	Def{Name: "replica.fetch.max.bytes", Type: Int, Default: "1048576", Check: atLeast(0), Doc: "Bytes a follower fetches per partition."},
	Def{Name: "max.incremental.fetch.session.cache.slots", Type: Int, Default: "1000", Check: atLeast(0),
		Doc: "Fetch sessions (KIP-227) kept at once; 0 hands out none, and every fetch names all its partitions."},
	Def{Name: "compression.type", Type: String, Default: "producer",
		Check: oneOf("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"), Doc: "producer stores batches as the producer compressed them; a codec (or uncompressed) rebuilds every other batch in it, as Kafka does."},
	Def{Name: "unclean.leader.election.enable", Type: Bool, Default: "false", Doc: "Allow an out-of-sync replica to become leader, losing data."},
	Def{Name: "replica.lag.time.max.ms", Type: Long, Default: "30000", Check: atLeast(1), Doc: "A follower that has not caught up for this long leaves the ISR."},
	Def{Name: "auto.leader.rebalance.enable", Type: Bool, Default: "true", Doc: "Move leadership back to preferred replicas."},
	Def{Name: "leader.imbalance.check.interval.seconds", Type: Long, Default: "300", Check: atLeast(1), Doc: "How often the active controller moves leadership back to preferred replicas."},
	Def{Name: "replica.fetch.wait.max.ms", Type: Int, Default: "500", Check: atLeast(0), Doc: "How long a follower's fetch waits at the leader for new records."},
	Def{Name: "controlled.shutdown.enable", Type: Bool, Default: "true", Doc: "On SIGTERM, move this broker's leaderships to other ISR members before stopping."},

	// Log dirs and segments.
	Def{Name: "log.dirs", Type: List, NoDefault: true, Doc: "Directories of partition logs. Falls back to log.dir."},
	Def{Name: "log.dir", Type: String, Default: "./tributary-data", Doc: "The log directory when log.dirs is unset. Kafka's default is /tmp/kafka-logs."},
	Def{Name: "log.segment.bytes", Type: Int, Default: "1073741824", Check: atLeast(14), Doc: "The largest segment file."},
	Def{Name: "log.roll.ms", Type: Long, NoDefault: true, Check: atLeast(1), Doc: "Roll a segment this old; overrides log.roll.hours."},
	Def{Name: "log.roll.hours", Type: Int, Default: "168", Check: atLeast(1), Doc: "Roll a segment this old."},
	Def{Name: "log.roll.jitter.ms", Type: Long, NoDefault: true, Check: atLeast(0), Doc: "Accepted; Tributary does not jitter rolls."},
	Def{Name: "log.roll.jitter.hours", Type: Int, Default: "0", Check: atLeast(0), Doc: "Accepted; Tributary does not jitter rolls."},
	Def{Name: "log.index.interval.bytes", Type: Int, Default: "4096", Check: atLeast(0), Doc: "Bytes between offset index entries."},
	Def{Name: "log.index.size.max.bytes", Type: Int, Default: "10485760", Check: atLeast(4), Doc: "The largest offset index before a roll."},
	Def{Name: "log.preallocate", Type: Bool, Default: "false", Doc: "Accepted; segments are never preallocated."},
	Def{Name: "log.message.timestamp.type", Type: String, Default: "CreateTime", Check: oneOf("CreateTime", "LogAppendTime"),
		Doc: "Whether record timestamps are the producer's or the broker's append time."},
	Def{Name: "log.message.timestamp.before.max.ms", Type: Long, Default: maxLong, Check: atLeast(0),
		Doc: "With CreateTime, a batch holding a record older than this (by the broker's clock) is refused with INVALID_TIMESTAMP."},
	Def{Name: "log.message.timestamp.after.max.ms", Type: Long, Default: "3600000", Check: atLeast(0),
		Doc: "With CreateTime, a batch holding a record further than this in the future (by the broker's clock) is refused with INVALID_TIMESTAMP (Kafka 4's default: one hour)."},
	Def{Name: "num.recovery.threads.per.data.dir", Type: Int, Default: "2", Check: atLeast(1), Doc: "Goroutines recovering logs at start, per log dir."},

	// Retention and cleaning.
	Def{Name: "log.retention.ms", Type: Long, NoDefault: true, Doc: "Delete segments older than this; -1 keeps them. Overrides the minutes and hours forms."},
	Def{Name: "log.retention.minutes", Type: Int, NoDefault: true, Doc: "Delete segments older than this; overrides log.retention.hours."},
	Def{Name: "log.retention.hours", Type: Int, Default: "168", Doc: "Delete segments older than this."},
	Def{Name: "log.retention.bytes", Type: Long, Default: "-1", Doc: "Delete old segments while a partition is larger; -1 for no limit."},
	Def{Name: "log.local.retention.ms", Type: Long, Default: "-2", Check: atLeast(-2),
		Doc: "Of a tiered topic (remote.storage.enable), how long a segment stays on the broker's disk once it is in remote storage; -2 uses the total retention.ms."},
	Def{Name: "log.local.retention.bytes", Type: Long, Default: "-2", Check: atLeast(-2),
		Doc: "Of a tiered topic, the bytes of a partition kept on the broker's disk once they are in remote storage; -2 uses the total retention.bytes."},
	Def{Name: "remote.log.storage.system.enable", Type: Bool, Default: "false",
		Doc: "Turns tiered storage on for the broker (KIP-405): the leader of a topic with remote.storage.enable uploads its closed segments to rsm.config.storage.uri and serves old offsets from there (docs/tiered-storage.md)."},
	Def{Name: "remote.log.manager.task.interval.ms", Type: Long, Default: "30000", Check: atLeast(1),
		Doc: "How often the leader looks for segments to upload and for remote segments that retention deletes."},
	Def{Name: "rsm.config.storage.uri", Type: String, Default: "",
		Doc: "Where tiered storage keeps segments: hdfs://namenode:port/path (several NameNodes comma separated, or a nameservice of HADOOP_CONF_DIR) or file:///path. Kafka passes rsm.config.* to its remote storage manager; this is Tributary's, which speaks HDFS."},
	Def{Name: "rsm.config.fetch.chunk.cache.size", Type: Long, Default: "134217728", Check: atLeast(1),
		Doc: "Bytes of remote segment data the broker keeps in memory for remote reads and their read-ahead (4 MiB chunks, least recently used out first). The name is that of Aiven's remote storage manager."},
	Def{Name: "rsm.config.storage.hdfs.user", Type: String, Default: "",
		Doc: "The HDFS user tiered storage acts as (simple authentication); empty: HADOOP_USER_NAME, else the OS user."},
	Def{Name: "log.retention.check.interval.ms", Type: Long, Default: "300000", Check: atLeast(1), Doc: "How often retention runs."},
	Def{Name: "log.segment.delete.delay.ms", Type: Long, Default: "60000", Check: atLeast(0), Doc: "How long a deleted segment stays readable."},
	Def{Name: "log.cleanup.policy", Type: List, Default: "delete", Check: listOf("delete", "compact"), Doc: "delete, compact or both."},
	Def{Name: "log.cleaner.enable", Type: Bool, Default: "true", Doc: "Run the log cleaner for compacted topics."},
	Def{Name: "log.cleaner.backoff.ms", Type: Long, Default: "15000", Check: atLeast(0), Doc: "Sleep between cleaner passes that found nothing."},
	Def{Name: "log.cleaner.threads", Type: Int, Default: "1", Check: atLeast(0), Doc: "Accepted; one cleaner per log dir."},
	Def{Name: "log.cleaner.min.cleanable.ratio", Type: Double, Default: "0.5", Check: between(0, 1), Doc: "Dirty ratio that triggers cleaning."},
	Def{Name: "log.cleaner.delete.retention.ms", Type: Long, Default: "86400000", Check: atLeast(0), Doc: "How long tombstones survive cleaning."},
	Def{Name: "log.cleaner.min.compaction.lag.ms", Type: Long, Default: "0", Check: atLeast(0), Doc: "Records younger than this are not compacted."},
	Def{Name: "log.cleaner.max.compaction.lag.ms", Type: Long, Default: maxLong, Check: atLeast(1),
		Doc: "Accepted but not enforced: the cleaner cleans by min.cleanable.dirty.ratio alone, so a record may stay uncompacted longer than this."},

	// Flushing.
	Def{Name: "log.flush.interval.messages", Type: Long, Default: maxLong, Check: atLeast(1), Doc: "fsync after this many messages."},
	Def{Name: "log.flush.interval.ms", Type: Long, NoDefault: true, Check: atLeast(0), Doc: "fsync data older than this; falls back to log.flush.scheduler.interval.ms."},
	Def{Name: "log.flush.scheduler.interval.ms", Type: Long, Default: maxLong, Check: atLeast(0), Doc: "How often flush.ms is checked (and its fallback)."},
	Def{Name: "log.flush.offset.checkpoint.interval.ms", Type: Int, Default: "60000", Check: atLeast(0), Doc: "How often recovery points are checkpointed."},
	Def{Name: "log.flush.start.offset.checkpoint.interval.ms", Type: Int, Default: "60000", Check: atLeast(0), Doc: "How often log start offsets are checkpointed."},

	// Transactions (the transaction coordinator, broker/txn).
	Def{Name: "transaction.state.log.num.partitions", Type: Int, Default: "50", Check: atLeast(1), Doc: "Partitions of __transaction_state."},
	Def{Name: "transaction.state.log.replication.factor", Type: Short, Default: "3", Check: atLeast(1), Doc: "Replicas of __transaction_state, capped by the live brokers at creation."},
	Def{Name: "transaction.state.log.min.isr", Type: Int, Default: "2", Check: atLeast(1), Doc: "min.insync.replicas of __transaction_state, capped by its replication factor."},
	Def{Name: "transaction.state.log.segment.bytes", Type: Int, Default: "104857600", Check: atLeast(1), Doc: "Segment size of __transaction_state."},
	Def{Name: "transaction.max.timeout.ms", Type: Int, Default: "900000", Check: atLeast(1), Doc: "The largest transaction.timeout.ms a producer may ask for; a larger one is INVALID_TRANSACTION_TIMEOUT."},
	Def{Name: "transactional.id.expiration.ms", Type: Int, Default: "604800000", Check: atLeast(1), Doc: "A transactional id with no transaction open for this long is forgotten (a tombstone in __transaction_state)."},
	Def{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: Int, Default: "10000", Check: atLeast(1), Doc: "How often transactions open for longer than their timeout are looked for and aborted."},

	// Groups and offsets (the group coordinator).
	Def{Name: "offsets.topic.num.partitions", Type: Int, Default: "50", Check: atLeast(1), Doc: "Partitions of __consumer_offsets."},
	Def{Name: "offsets.topic.replication.factor", Type: Short, Default: "3", Check: atLeast(1), Doc: "Replicas of __consumer_offsets, capped by the live brokers at creation."},
	Def{Name: "offsets.topic.segment.bytes", Type: Int, Default: "104857600", Check: atLeast(1), Doc: "Segment size of __consumer_offsets."},
	Def{Name: "offsets.retention.minutes", Type: Int, Default: "10080", Check: atLeast(1), Doc: "Committed offsets of empty groups expire after this."},
	Def{Name: "offsets.retention.check.interval.ms", Type: Long, Default: "600000", Check: atLeast(1), Doc: "How often expired offsets are removed."},
	Def{Name: "group.initial.rebalance.delay.ms", Type: Int, Default: "3000", Check: atLeast(0), Doc: "Wait for more members before the first rebalance of an empty group."},
	Def{Name: "group.min.session.timeout.ms", Type: Int, Default: "6000", Doc: "The smallest session timeout a member may ask for."},
	Def{Name: "group.max.session.timeout.ms", Type: Int, Default: "1800000", Doc: "The largest session timeout a member may ask for."},
	Def{Name: "group.max.size", Type: Int, Default: "2147483647", Check: atLeast(1), Doc: "The most members in one group."},

	// Producers.
	Def{Name: "producer.id.expiration.ms", Type: Int, Default: "86400000", Check: atLeast(1), Doc: "Idempotent producer state is dropped after this long idle."},
)

func defs(ds ...Def) map[string]Def {
	m := make(map[string]Def, len(ds))
	for _, d := range ds {
		if _, dup := m[d.Name]; dup {
			panic("config: " + d.Name + " defined twice")
		}
		m[d.Name] = d
	}
	return m
}
