// Package tail is the tracker's log-file tailer: it follows files found by
// glob, turns each line into a record (raw, JSON lines, or the nginx/Apache
// combined log format parsed into fields) and produces it to the broker,
// writing each file's position to a positions file only after the broker
// acknowledged the lines before it. Delivery is at least once: a crash
// (kill -9 included) loses nothing and resends at most the last batch.
//
// # Why not the tracker's Sink
//
// tracker/deliver's Sink acknowledges once an event is in the spool
// (ack=spool) or produces it without headers (ack=broker). A tailer needs
// neither: the file it reads is already a durable queue, so spooling it
// again only costs a copy, and its position must not move before the broker
// has the lines. The tailer therefore produces with its own kafka-go Writer
// (NewWriter: acks=all, lz4, murmur2 on the key, like deliver), one batch at
// a time, retrying the failed records of a batch with backoff until the
// broker acknowledges them. While the broker is away the files simply wait.
//
// # Identity and rotation
//
// A file is its inode plus a fingerprint: the SHA-256 of its first
// FingerprintBytes (1 KiB) bytes, or of all of it while it is shorter, the
// fingerprint growing with it. Open descriptors are kept, so
//
//   - rotation by rename (logrotate's default, or the writer's own): the
//     old file is read to its end through its descriptor, followed under its
//     new name if a glob still finds it, otherwise for RotateWait after its
//     last growth (for a writer that has not reopened yet) and then closed,
//     its partial last line, if any, sent as it is; the new file at the
//     path is a new inode, read from 0;
//   - truncation (copytruncate): a file shorter than what was read, or whose
//     first bytes changed, is read again from 0. The old content is kept as
//     a "ghost" (fingerprint, position) for ten minutes: a new file with
//     the same full fingerprint - the copy, when the globs find it (glob
//     "app.log*") - continues at that position, so lines the tailer had not
//     read when the file was truncated are read from the copy;
//   - inode reuse: a file at a known inode whose first bytes differ from
//     the saved fingerprint is a new file, read from 0.
//
// After a restart, a saved file no glob finds any more (rotated by rename
// while the tailer was down) is looked for by inode in its directory and
// read to its end; one found at its inode with other content is a ghost
// for its copy.
//
// Limits, inherent to following files by polling: with copytruncate, lines
// written between the copy and the truncate are in neither file (logrotate
// says the same); when the globs do not find the copy, lines not yet read
// when the file is truncated are lost too. Two files whose first 1 KiB are
// equal and that replace one another in place look like one file. A file
// truncated and rewritten to the same first bytes between two polls looks
// unchanged.
//
// # Lines
//
// A partial last line waits for its newline. A line over MaxLineBytes is
// cut to its first MaxLineBytes bytes (header log.truncated=true, counted as
// line_too_long) and the rest up to the newline is skipped. "\r\n" endings
// lose the "\r". JSON lines must each hold one JSON object, which is the
// record value as written; combined lines become a JSON object of their
// fields. A line that does not parse is counted (invalid_json,
// invalid_combined) and dropped, or with SendInvalid produced as read to
// <topic>.invalid with the reason in a log.error header: a tailer cannot
// tell a writer to resend, and stopping the file on one bad line would
// stop everything after it. Blank lines of json and combined files are
// skipped. Every record carries the headers log.file.path and log.offset
// (the line's byte offset), which identify a line for deduplication.
//
// # Positions file, version 1
//
// JSON, written to PositionsFile+".tmp", fsynced, renamed over
// PositionsFile and the directory fsynced after each acknowledged batch, so
// it is always the old or the new positions:
//
//	{"version": 1, "files": [{
//	  "input": "nginx",                       the input's name
//	  "path": "/var/log/nginx/access.log",    where it was last seen
//	  "inode": 1835011,
//	  "fp_bytes": 1024, "fp": "9f86d0...",    fingerprint: SHA-256 (hex) of the first fp_bytes
//	  "offset": 52113,                        every line before it is acknowledged
//	  "orphaned": 1767225600000               only on ghosts: when (Unix ms) the inode lost the content
//	}]}
//
// A reader meeting another version refuses to start (ErrVersion) rather
// than guess; deleting the file makes every file new (read from 0 again).
// PositionsFile+".lock" is flock'ed by the tailer that uses it.
//
// # Concurrency
//
// New and Run are called once, from one goroutine. Run owns all state: it
// scans the globs every ScanInterval, reads new lines from every file into
// a batch (rotated files first, then the others round robin), produces the
// batch and waits for the acknowledgement, moves the positions and saves
// them. Only the metrics are read elsewhere (by the /metrics handler).
package tail
