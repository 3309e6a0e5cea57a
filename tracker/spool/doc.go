// Package spool is the tracker's disk spool: an append-only, CRC-checked
// queue of opaque entries that keeps acknowledged events while the broker is
// away, and hands them back in order until the consumer commits that they
// were delivered.
//
// # Files
//
// A spool is a directory holding segment files, one checkpoint file and a
// lock file (a second Open of a directory in use fails with ErrLocked):
//
//	00000000000000000000.seg   entries with seq 0, 1, ...
//	00000000000000004711.seg   entries with seq 4711, 4712, ...
//	position                   the committed consumer position
//	LOCK                       flock'ed by the process that has it open
//
// A segment's name is the seq of its first entry, zero-padded to 20 digits,
// so that name order is seq order. Seqs increase by one per entry; a gap is
// possible only where recovery truncated a corrupt segment (the next segment
// keeps the base it was created with).
//
// # Segment format, version 1
//
// Every integer is big-endian. A segment starts with a 20-byte header:
//
//	 0       4    5         8                16        20
//	+--------+----+---------+-----------------+---------+
//	| "TSPL" | v  | 0 0 0   | base seq (u64)  | crc32c  |
//	+--------+----+---------+-----------------+---------+
//	  magic   version=1       seq of the first  CRC-32C (Castagnoli) of
//	          reserved        entry             bytes 0..16
//
// followed by entries, back to back, each:
//
//	 0        4        8                    16             16+len
//	+--------+--------+--------------------+----------------+
//	| crc32c | len    | appended at (i64)  | payload        |
//	+--------+--------+--------------------+----------------+
//	  CRC-32C  payload  Unix milliseconds    len bytes, opaque
//	  of bytes length   when Append wrote    to the spool
//	  4..16+len (u32)   the entry
//
// The CRC covers the length, the time and the payload, so a torn write (a
// length that was written but not its payload, or zeroes from a file that
// grew but was not written) fails the check. len is at most MaxEntryBytes.
//
// The constants of the format are headerSize, entryHeaderSize, the magic
// "TSPL", version 1 and the CRC-32C table. A reader that meets another
// version must refuse the segment (Open fails with ErrVersion) rather than
// guess; a future version 2 reader is expected to read version 1 segments.
//
// # Checkpoint format, version 1
//
// The file "position" is 36 bytes, written to "position.tmp", fsynced,
// renamed over "position" and the directory fsynced, so it is always either
// the old or the new position:
//
//	 0        4    5       8            16             24          32       36
//	+--------+----+-------+------------+--------------+-----------+--------+
//	| "TSPP" | v  | 0 0 0 | seq (u64)  | segment base | offset    | crc32c |
//	+--------+----+-------+------------+--------------+-----------+--------+
//	  magic   version=1     next entry   base seq of    byte offset  CRC-32C
//	                        to deliver   its segment    of it in     of bytes
//	                                                    the segment  0..32
//
// A missing checkpoint means "from the first entry of the first segment". A
// corrupt one makes Open fail (ErrCorruptPosition): replaying everything
// silently would duplicate the whole spool, skipping would lose it; the
// operator decides (deleting the file replays everything).
//
// # Recovery
//
// Open scans every segment, checks every entry's CRC, and truncates a
// segment at its first bad or incomplete entry (a torn tail after a crash,
// or a flipped byte). What was cut is counted in Recovery() and logged at
// warning level. Segments that the checkpoint says are fully delivered are
// deleted (a crash between writing the checkpoint and deleting them leaves
// them behind).
//
// # Durability
//
// Append returns only after its entries are written and fsynced. Concurrent
// appends share one fsync (group commit): each appender writes its entries
// under mu, then waits on syncMu; the first to get it fsyncs everything
// written so far and the others find their entries already covered.
//
// # Concurrency
//
// A Spool is safe for concurrent use by any number of appenders and one
// consumer (Next, Commit, Rewind). Lock order: syncMu before mu. mu guards
// the segment list, the active file's writes, the sizes and the synced
// mark; syncMu serializes fsyncs of the active segment; readMu guards the
// consumer's cursor.
package spool
