// Package tier is tiered storage (Kafka's KIP-405) with HDFS as the remote
// tier: the leader of a topic with remote.storage.enable uploads each
// closed segment of its partitions, and serves the offsets that local
// retention removed from the broker's disk out of the remote copy.
//
// The remote file system is internal/fsys (HDFS through colinmarc/hdfs, or a
// local directory), the one the loader writes the lake through.
//
// Remote layout, one directory per partition under the storage root
// (rsm.config.storage.uri):
//
//	<root>/<topic>-<topic id>/<partition>/
//	    00000000000000001200.log                      the segment, byte for byte
//	    00000000000000001200.index                    its offset index (Kafka's format)
//	    00000000000000001200.timeindex                its time index
//	    00000000000000001200.leader-epoch-checkpoint  the leader-epoch cache up to the segment end
//	    00000000000000001200.snapshot                 the newest producer snapshot at or below the segment end, if any
//	    00000000000000001200.txnindex                 the aborted transactions of the segment, if any
//	    manifest.json                                 the remote log metadata (internal/remotelog)
//
// Every file is in Kafka's own format, so a segment copied back to a local
// directory is read by Kafka's kafka-dump-log.
//
// Upload protocol (upload.go), per segment, by the partition's leader:
//
//  1. each file is written under a temporary name, closed (HDFS makes it
//     whole and visible at close) and renamed to its final name, replacing
//     whatever an earlier, interrupted attempt left there;
//  2. the manifest with the segment added is written atomically (a new file
//     renamed over the old one), and then copied to the partition's local
//     directory (remote-log-manifest.json) as a cache;
//  3. only then does the local log see the segment as uploaded
//     (log.TierView), and local retention may delete it.
//
// A segment exists remotely only when the manifest names it: a crash
// before step 2 leaves files that no manifest names, which the next upload
// overwrites and the start-up sweep removes; a crash after it leaves a
// registered segment whose files are all complete. Uploads are therefore
// idempotent. Deletion by total retention runs the other way round: the
// manifest without the segments (and with the new remote log start) is
// written first, then their files are removed.
//
// What it does not protect against yet: two brokers uploading the same
// partition at once (a deposed leader that has not noticed): the manifest is
// written by the leader alone, and the metadata is not replicated with the
// cluster. The manifest's entries are shaped as Kafka's
// RemoteLogSegmentMetadata (a segment id, offsets, times, size, leader
// epochs, broker and state), so that they can become records of the
// metadata log, which would fence a deposed leader by its epoch.
//
// The manifest's format, the file names and the reading of remote
// segments are internal/remotelog's, shared with the loader, which reads
// remote segments without a broker (load run --from-tier).
//
// Followers (follow.go) only read the manifest, for their local
// retention; the leader alone writes.
//
// Concurrency: Manager.Run is one goroutine driving every upload and remote
// deletion (it writes a group of segments' files on goroutines of its own
// and waits for them); reads (Read, LogStart) come from any goroutine, and
// the chunk cache loads on goroutines it starts. Lock order:
// Manager.mu before partition.mu; the chunk cache has its own lock, taken
// alone. No lock is held across HDFS I/O except partition.ioMu, which
// orders the manifest writes of one partition.
package tier
