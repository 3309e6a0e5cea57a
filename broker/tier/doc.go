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
//	    <base offset>-<upload id>.log                      the segment, byte for byte
//	    <base offset>-<upload id>.index                    its offset index (Kafka's format)
//	    <base offset>-<upload id>.timeindex                its time index
//	    <base offset>-<upload id>.leader-epoch-checkpoint  the leader-epoch cache up to the segment end
//	    <base offset>-<upload id>.snapshot                 the newest producer snapshot at or below the segment end, if any
//	    <base offset>-<upload id>.txnindex                 the aborted transactions of the segment, if any
//	    manifests/<sequence>.json                          the remote log metadata, one file per version (internal/remotelog)
//
// Every file is in Kafka's own format, so a segment copied back to a local
// directory (under its base offset name) is read by Kafka's kafka-dump-log.
//
// Upload protocol (upload.go), per segment, by the partition's leader:
//
//  1. each file is written under the upload's own name and closed (HDFS
//     makes it whole and visible at close);
//  2. the next manifest version, the segment added, is committed with a
//     no-replace rename (remotelog.Commit, a compare-and-swap), then copied
//     to the partition's local directory (remote-log-manifest.json);
//  3. only then does the local log see the segment as uploaded
//     (log.TierView), and local retention may delete it.
//
// A segment exists remotely only when the manifest names it: a crash
// before step 2 leaves files that no manifest names, which gc (gc.go)
// removes after the grace period; a crash after it leaves a registered
// segment whose files are all complete. No name is written twice, so
// nothing overwrites a registered file. Deletion by total retention
// commits a version without the segments; gc removes their files once no
// version kept for readers names them.
//
// Fencing: a new leader's first commit claims the manifest for its leader
// epoch (work); a commit that loses the rename to a newer epoch's version
// writes nothing (remotelog.ErrFenced). The metadata stays in HDFS rather
// than the metadata log, by decision (docs/tiered-storage.md, "Why the
// metadata stays in HDFS"). The manifest's entries are shaped as Kafka's
// RemoteLogSegmentMetadata (a segment id, offsets, times, size, leader
// epochs, broker and state).
//
// The manifest's format, the file names and the reading of remote
// segments are internal/remotelog's, shared with the loader, which reads
// remote segments without a broker (load run --from-tier).
//
// Followers (follow.go) only read the manifest, for their local
// retention; the leader alone writes. A follower below its leader's local
// log start (auxstate.go, KIP-405) reads the newest manifest version and
// the .leader-epoch-checkpoint and .snapshot of one segment, by the names
// that version gives them (SegmentMetadata.FileName).
//
// Concurrency: Manager.Run is one goroutine driving every upload and remote
// deletion (it writes a group of segments' files on goroutines of its own
// and waits for them); reads (Read, LogStart) come from any goroutine, and
// the chunk cache loads on goroutines it starts. Lock order:
// Manager.mu before partition.mu; the chunk cache has its own lock, taken
// alone. No lock is held across HDFS I/O except partition.ioMu, which
// orders the manifest writes of one partition.
package tier
