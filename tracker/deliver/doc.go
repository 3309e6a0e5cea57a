// Package deliver is the tracker's tracker.Sink: it produces events to the
// broker with kafka-go (acks=all, lz4, batches of up to 1,000 records or
// 1 MiB per partition, 5 ms linger, Kafka's murmur2 partitioner on
// Event.Key as internal/kafkacli chose it, record timestamp =
// Event.Timestamp), through the disk spool of tracker/spool.
//
// # Acknowledgement modes
//
// AckSpool (the default): Submit encodes the events, appends them to the
// spool and returns once they are fsynced (concurrent Submits share the
// fsync). One goroutine, the drainer, reads the spool in order, produces
// each batch and commits the spool position only after the broker
// acknowledged every record of it. While the broker is unreachable it
// retries the unacknowledged records with exponential backoff (100 ms to
// 2 s by default) and the spool grows; when the spool is full Submit
// returns spool.ErrSpoolFull (the collector's 503 with Retry-After).
//
// AckBroker: Submit produces the events itself and returns after the
// broker acknowledged all of them. If the broker does not (unreachable,
// timeout, ctx done), Submit fails: it does not fall back to the spool.
// Whoever chose ack=broker asked for "acknowledged means in the broker";
// spooling silently would turn it into ack=spool without telling the
// sender, so the sender gets an error (a 503) and retries, and duplicates
// of a partly written batch are dropped downstream by messageId. The spool
// is still opened and drained in this mode, so that events left by an
// earlier ack=spool run are delivered.
//
// # Delivery guarantees
//
// At least once. Duplicates happen when the process dies (or Close is
// called while the broker is away) after the broker acknowledged a batch
// but before the spool position was committed: that batch is produced
// again on restart. Records of a failed batch are retried alone, so a
// partial failure can reorder two events of one key across the retry (as
// Kafka's producer without idempotence does with several requests in
// flight).
//
// # Spool entry payload, version 1
//
// Each spool entry holds one event (integers big-endian):
//
//	 0   1             9           11          11+t       15+t
//	+---+-------------+-----------+-----------+-----------+---------+
//	| v | timestamp   | topic len | topic     | key len   | key     |
//	+---+-------------+-----------+-----------+-----------+---------+
//	 =1   i64 Unix ms   u16 = t     t bytes     i32 = k,    k bytes
//	                                            -1: no key
//	+-----------+------------+---------------------------------+
//	| id len    | message id | value (to the end of the entry) |
//	+-----------+------------+---------------------------------+
//	  u16 = m     m bytes
//
// A reader that meets another version must not guess: the drainer counts
// the entry as dropped (tributary_tracker_dropped_total) and logs it.
//
// # Concurrency
//
// Submit and Close are safe for concurrent use. The drainer is the only
// goroutine that reads and commits the spool; the kafka-go Writer is shared
// by it and by AckBroker Submits (it is safe for concurrent use).
package deliver
