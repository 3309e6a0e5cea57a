// Package producer owns idempotent producer state: per partition, the
// sequence numbers of each producer's last batches, so that a retried batch
// is answered with its original offsets instead of being appended twice, and
// a gap is refused with OUT_OF_ORDER_SEQUENCE_NUMBER. It also owns how that
// state survives a restart: snapshots in Apache Kafka's producer snapshot
// format beside the partition's segments (snapshot.go, snapshots.go), from
// which a partition recovers by replaying only the batch headers written
// after the newest usable snapshot.
//
// The split follows the rest of the broker: State is a state machine without
// I/O (Check, Update, Replay, Expire); EncodeSnapshot and DecodeSnapshot are
// pure functions of their input; Snapshots does the file work.
//
// Concurrency: a State is not safe for concurrent use. The partition's
// append lock guards it, since checking and recording a batch must be atomic
// with the append between them. Snapshots is not safe for concurrent use
// either; the partition serializes its snapshot work with a lock of its own,
// taken before the append lock, so that the append lock is held only while
// a snapshot is encoded, never while it is written. EncodeSnapshot and
// DecodeSnapshot may be called from any goroutine.
package producer
