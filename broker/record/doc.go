// Package record owns Kafka's record batch format (magic 2): reading a batch's
// header in place, validating a batch before it is stored (a producer's
// record by record, decompressing it as a bounded stream; a replica's by its
// header, CRC and framing), compressing and decompressing records with the
// codecs Kafka clients use, iterating records, and building batches.
//
// Everything here is a pure function of its input; it is safe to call from any
// number of goroutines (the decompressors a check streams through are pooled
// per call, never shared).
package record
