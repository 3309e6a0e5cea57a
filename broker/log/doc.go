// Package log owns the broker's storage: partition logs laid out on disk
// exactly as Apache Kafka lays them out, so that Kafka's own tools read them.
//
// A log dir (Dir) holds one directory per partition, "<topic>-<partition>",
// and the checkpoints recovery-point-offset-checkpoint and
// log-start-offset-checkpoint. A partition directory (Log) holds segments
// named by their base offset, "00000000000000001200.log", each with a sparse
// offset index (.index) and time index (.timeindex), and the partition's
// leader-epoch-checkpoint. Record batches are stored exactly as producers
// sent them, with only the base offset and partition leader epoch rewritten
// in place.
//
// Appends are O(1): a write at the end of the active segment. Reads find the
// segment by binary search over base offsets and the position by the sparse
// index, then return a file range that the server sends with sendfile(2).
// Nothing is fsynced on the append path; recovery after a crash scans what
// was written after the last flush and truncates a torn tail.
//
// Concurrency: see Log. In short, one appender and any number of readers per
// Log; Dir is safe for concurrent use. Lock order: Dir.mu before Log.mu
// before epochCache.mu; nothing holds Log.mu while waiting on I/O other than
// its own files. A segment's reference count is an atomic below every lock:
// acquiring and releasing take none.
//
// Segment lifetime (lifetime.go): readers hold the segments they read, so
// nothing is closed or unmapped under them, whatever file.delete.delay.ms
// says:
//
//	          openSegment: refs = 1 (the Log's)
//	                │
//	reader: acquire (refs+1) ─► read .log/.index/.timeindex ─► release (refs-1)
//	                │
//	Log drops it from its list: rename .deleted ─ delay ─► unlink, refs-1
//	                │
//	refs reaches 0 ─ CAS to dead ─► munmap, close (once)
//
// Read returns a Slice that holds its segment: the caller must Release it
// once the bytes are sent (broker/server releases after the sendfile).
package log
