// Package dump prints and checks a partition's segment files the way Apache
// Kafka's DumpLogSegments does, for operators and for tests: `tributary log
// dump` is a thin wrapper around Run.
//
// It reads the files directly and depends on nothing of broker/log but the
// file formats, so it can inspect a log that broker/log refuses to open
// (which is when it is most needed). Batches are read with broker/record.
//
// The three files of a segment whose first offset is 42, all integers big
// endian (these formats are Kafka's, byte for byte):
//
//	00000000000000000042.log        record batches of magic 2, back to back
//	                                (see broker/record for a batch's layout)
//
//	00000000000000000042.index      8-byte entries, no header, no padding:
//	     0     4  relativeOffset    int32, offset - 42
//	     4     4  position          int32, byte position in the .log
//	Entry (r, p): the batch starting at byte p of the .log has last offset
//	42+r. The index is sparse (one entry per index.interval.bytes) and both
//	fields strictly increase. Kafka preallocates index files and trims them
//	on close; Tributary does not, so the file length is 8 × entries and an
//	all-zero entry after the first is corruption.
//
//	00000000000000000042.timeindex  12-byte entries:
//	     0     8  timestamp         int64, milliseconds
//	     8     4  relativeOffset    int32
//	Entry (t, r): t is the largest batch max timestamp in the segment up to
//	and including the batch whose last offset is 42+r, which carried it.
//	Timestamps strictly increase.
//
// Run is safe to call from several goroutines at once; a single call is
// sequential.
package dump
