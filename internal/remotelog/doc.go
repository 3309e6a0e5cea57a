// Package remotelog reads (and, for the broker, describes) a partition's
// tiered storage: the remote directory a broker's tier manager
// (broker/tier) writes to HDFS or a local directory, in Kafka's formats.
// Both the broker, which uploads and serves it, and the loader, which
// reads it directly (`tributary load run --from-tier`), import it; the
// loader never imports broker packages.
//
// Layout, one directory per partition under the storage root
// (rsm.config.storage.uri):
//
//	<root>/<topic>-<topic id>/<partition>/
//	    00000000000000001200.log                      the segment, byte for byte
//	    00000000000000001200.index                    its offset index
//	    00000000000000001200.timeindex                its time index
//	    00000000000000001200.leader-epoch-checkpoint  the leader-epoch cache up to the segment end
//	    00000000000000001200.snapshot                 a producer snapshot, if any
//	    00000000000000001200.txnindex                 the aborted transactions whose marker is in the segment, if any
//	    manifest.json                                 the remote log metadata (manifest.go)
//
// A segment exists remotely only when the manifest names it; files the
// manifest does not name are an interrupted upload and are never read.
// Everything here is safe for concurrent use: it holds no state.
package remotelog
