// Package iceberg writes Apache Iceberg tables (format version 2): table
// metadata JSON, manifests and manifest lists as Avro container files, and
// a Hadoop-style catalog on any file system with an atomic exclusive
// create (HDFS, a local disk) whose commit protocol is written down on
// Catalog. The loader's table mode (loader/iceberg.go) is its one writer;
// docs/iceberg.md is the user's view.
//
// What it writes is what the loader needs: appends of Parquet files that
// are already in place, one hour() partition field, schemas that evolve by
// field id (Evolve); rewrites that replace files (Rewrite: compaction,
// manifest merging, a backfill's overwrite by offsets); and the
// maintenance that deletes files (ExpireSnapshots, RemoveOrphans), each
// with its protocol written down on the function.
//
// Concurrency: a Catalog holds no state of its own, so any number of
// goroutines and processes may commit to the same table at once; the file
// system's exclusive create decides which commit of a version wins, and
// the others retry (Catalog.Append, Catalog.Rewrite). A Table is a value read at one
// version and is not updated in place.
package iceberg
