// Package fsys is the file system of the lake and of the remote tier: a
// small interface (FS) with two implementations, a local directory
// (file:///path) and HDFS (hdfs://namenode:port/path, through
// colinmarc/hdfs/v2, with Kerberos). The loader, jobs, the Iceberg catalog
// and the broker's tiered storage all write through it. An object store
// would be a third implementation.
//
// Paths given to an FS are slash-separated and relative to the target's root;
// the loader never sees where the root is. Every FS is safe for concurrent
// use: the loader's workers share one.
//
// What the loader relies on, and both implementations give:
//   - Create writes a new file and fails if it exists (ErrExist), which makes
//     "first one wins" markers possible without a lock service;
//   - Rename replaces an existing destination (HDFS rename2 with overwrite,
//     rename(2) locally), so moving a file into place twice is harmless;
//   - RenameNoReplace moves a file into place only if the name is free, in
//     one step (HDFS rename2 without overwrite, link(2) then unlink locally):
//     a file written whole under a temporary name becomes visible whole, and
//     of two writers racing for the name one gets ErrExist;
//   - WriteFileAtomic writes a temporary sibling, then renames it over the
//     name: a reader sees the old content or the new, never a torn file.
package fsys
