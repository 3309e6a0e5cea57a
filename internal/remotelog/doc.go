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
//	    <base offset>-<upload id>.log                      the segment, byte for byte
//	    <base offset>-<upload id>.index                    its offset index
//	    <base offset>-<upload id>.timeindex                its time index
//	    <base offset>-<upload id>.leader-epoch-checkpoint  the leader-epoch cache up to the segment end
//	    <base offset>-<upload id>.snapshot                 a producer snapshot, if any
//	    <base offset>-<upload id>.txnindex                 the aborted transactions whose marker is in the segment, if any
//	    manifests/<sequence>.json                          the remote log metadata, by version (manifest.go, versions.go)
//
// A segment exists remotely only when the newest manifest version names
// it; files no version names are an interrupted or refused upload and are
// never read. Commit is the one writer (the broker's tier manager calls it).
// Everything here is safe for concurrent use: it holds no state.
package remotelog
