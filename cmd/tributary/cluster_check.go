package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/kafkacli"
)

// checkFetchBytes is how much one Fetch asks of one replica: large enough
// that a partition of a few GB takes a few thousand round trips, small
// enough to hold in memory (only the batch headers are kept).
const checkFetchBytes = 1 << 20

func newClusterCheckReplicasCommand(bootstrap *string) *cobra.Command {
	var topics []string
	cmd := &cobra.Command{
		Use:   "check-replicas",
		Short: "Read every replica of each partition and compare them batch by batch",
		Long: `Verify that the replicas of each partition hold the same records
(KAFKA-1117, the job of Kafka's ReplicaVerificationTool, done once).

For each partition it reads the replica list from the metadata, then
fetches the partition from each replica's broker directly (as a consumer
fetching from a follower, KIP-392), from the log start offset up to the
smallest high watermark among the replicas: below it every replica must
have the same batches. It compares them one by one: base offset, last
offset and the CRC stored in the batch header, and checks each batch's CRC
against its bytes, so a replica corrupted on disk is caught even where the
stored CRCs agree.

Each partition gets one line: "ok (N batches up to offset H)", the first
offset where the replicas part, with each replica's batch there, or the
replica that could not be read and why. The exit status is nonzero if any
partition diverges or any replica could not be read.

Without --topic every topic is checked, internal ones included. It reads
all the data below the high watermarks: on a large cluster, name topics.`,
		Example: `  tributary cluster check-replicas -b 127.0.0.1:9192
  tributary cluster check-replicas --topic orders --topic payments

  # In a script: alert on any difference.
  tributary cluster check-replicas -b kafka-1:9092 > check.txt || mail -s 'replicas differ' ops < check.txt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, t := range topics {
				if t == "" {
					return errors.New(`--topic "": a topic name cannot be empty`)
				}
			}
			// No overall timeout: reading every replica of a large
			// cluster takes as long as it takes; kgo bounds each request.
			return withKadm(cmd, *bootstrap, 0, func(ctx context.Context, cl *kgo.Client, adm *kadm.Client) error {
				return checkReplicas(ctx, cmd, cl, adm, topics)
			})
		},
	}
	cmd.Flags().StringArrayVarP(&topics, "topic", "t", nil, "check only this topic (repeatable)")
	return cmd
}

// checkReplicas checks topics (all when none) and prints a line per
// partition; the error counts the partitions that failed the check.
func checkReplicas(ctx context.Context, cmd *cobra.Command, cl *kgo.Client, adm *kadm.Client, topics []string) error {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return err
	}
	for _, t := range topics {
		if td, ok := md.Topics[t]; !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("--topic %q: %w", t, kafkacli.ErrUnknownTopic)
		}
	}
	names := md.Topics.Names()
	// Reading starts at the leader's log start offset, as Kafka's tool
	// does; a replica whose log starts later moves the start (below).
	var starts kadm.ListedOffsets
	if len(names) > 0 {
		// A partition whose leader is down fails alone (ShardErrors): its
		// line says so and the others are still checked.
		var se *kadm.ShardErrors
		if starts, err = adm.ListStartOffsets(ctx, names...); err != nil && !errors.As(err, &se) {
			return fmt.Errorf("listing log start offsets: %w", err)
		}
	}
	progress := isTerminal(cmd.ErrOrStderr())
	tab := newResultTable(cmd.OutOrStdout(), "TOPIC\tPARTITION\tLEADER\tREPLICAS\tRESULT")
	for _, name := range names {
		td := md.Topics[name]
		if progress {
			fmt.Fprintf(cmd.ErrOrStderr(), "checking %s (%d partitions)\n", name, len(td.Partitions))
		}
		if td.Err != nil {
			// One row for the topic, counted as one partition that failed.
			tab.row(false, name, "-", "-", "-", fmt.Sprintf("cannot check: %v", td.Err))
			continue
		}
		for _, pd := range td.Partitions.Sorted() {
			result, ok := checkPartition(ctx, cl, td.ID, pd, starts)
			leader := "none"
			if pd.Leader >= 0 {
				leader = fmt.Sprint(pd.Leader)
			}
			tab.row(ok, name, pd.Partition, leader, joinInts(pd.Replicas), result)
		}
		// Flush per topic, so a long run shows its progress.
		if err := tab.flush(); err != nil {
			return err
		}
	}
	if err := tab.flush(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return tab.close("replicas differ or could not be read in")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// checkPartition reads each replica of one partition and compares them;
// it returns the line to print and whether the partition passed.
func checkPartition(ctx context.Context, cl *kgo.Client, id kadm.TopicID, pd kadm.PartitionDetail, starts kadm.ListedOffsets) (string, bool) {
	if len(pd.Replicas) == 0 {
		return "cannot check: the metadata lists no replicas", false
	}
	so, ok := starts.Lookup(pd.Topic, pd.Partition)
	if !ok {
		return "cannot check: no log start offset from the leader", false
	}
	if so.Err != nil {
		return fmt.Sprintf("cannot check: log start offset from the leader: %v", so.Err), false
	}
	start := so.Offset

	// First round: one fetch from each replica at start, which also says
	// how far it goes (its high watermark) and where its log starts.
	reads := make([]*replicaRead, len(pd.Replicas))
	var unreadable []string
	for i, r := range pd.Replicas {
		rr := &replicaRead{broker: r, topic: pd.Topic, id: id, partition: pd.Partition}
		reads[i] = rr
		if err := rr.fetch(ctx, cl, start, -1); err != nil {
			unreadable = append(unreadable, fmt.Sprintf("replica %d unreadable: %v", r, err))
		}
	}
	if len(unreadable) > 0 {
		return strings.Join(unreadable, "; "), false
	}
	from, upTo := start, reads[0].hw
	for _, rr := range reads {
		if rr.hw < 0 {
			return fmt.Sprintf("replica %d unreadable: it gave no high watermark", rr.broker), false
		}
		from, upTo = max(from, rr.logStart), min(upTo, rr.hw)
	}
	// Then each replica to upTo: below the smallest high watermark all
	// replicas have everything (a follower's high watermark is at most
	// its log end).
	lists := make(map[int32][]batchInfo, len(reads))
	for _, rr := range reads {
		rr.trim(from, upTo)
		for rr.next < upTo {
			if err := rr.fetch(ctx, cl, rr.next, upTo); err != nil {
				unreadable = append(unreadable, fmt.Sprintf("replica %d unreadable: %v", rr.broker, err))
				break
			}
		}
		lists[rr.broker] = rr.batches
	}
	if len(unreadable) > 0 {
		return strings.Join(unreadable, "; "), false
	}
	n, d := compareReplicas(pd.Replicas, lists)
	if d != nil {
		return d.String(pd.Replicas), false
	}
	return fmt.Sprintf("ok (%d batches up to offset %d)", n, upTo), true
}

// replicaRead is what has been read of one replica so far.
type replicaRead struct {
	broker    int32
	topic     string
	id        kadm.TopicID
	partition int32

	hw, logStart int64 // from its first answer
	next         int64 // the offset to fetch next
	batches      []batchInfo
}

// fetch sends one Fetch for the partition at offset to the replica's
// broker, as a consumer (replica id -1) reading uncommitted records, and
// appends the complete batches below upTo (-1: the first round, which
// keeps all and records the high watermark and log start offset).
func (rr *replicaRead) fetch(ctx context.Context, cl *kgo.Client, offset, upTo int64) error {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1       // a consumer, not a follower: v0-v14
	req.ReplicaState.ID = -1 // the same from v15
	req.MaxWaitMillis = 0    // answer with what there is, never wait for more
	req.MinBytes = 0
	req.MaxBytes = checkFetchBytes
	req.IsolationLevel = 0 // read_uncommitted: aborted and open transactions are replicated too
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = rr.topic, rr.id // the name up to v12, the id from v13
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = rr.partition
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = checkFetchBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	kresp, err := cl.Broker(int(rr.broker)).Request(ctx, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return codeError{kerr.ErrorForCode(resp.ErrorCode)}
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("the Fetch response has %d topics, want one with one partition", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if upTo < 0 && p.ErrorCode == kerr.OffsetOutOfRange.Code && p.LogStartOffset > offset {
		// This replica's log starts after the leader's (its retention
		// ran first): begin there, and the comparison with it.
		return rr.fetch(ctx, cl, p.LogStartOffset, upTo)
	}
	if p.ErrorCode != 0 {
		return fmt.Errorf("fetch at offset %d: %w", offset, codeError{kerr.ErrorForCode(p.ErrorCode)})
	}
	batches, err := parseBatchHeaders(p.RecordBatches)
	if err != nil {
		return fmt.Errorf("fetch at offset %d: %w", offset, err)
	}
	if upTo < 0 {
		rr.hw, rr.logStart = p.HighWatermark, max(p.LogStartOffset, offset)
		rr.batches, rr.next = batches, offset
		if len(batches) > 0 {
			rr.next = batches[len(batches)-1].Last + 1
		}
		return nil
	}
	before := rr.next
	for _, b := range batches {
		if b.Last < rr.next {
			continue // a batch around the fetch offset that we already have
		}
		if b.Base >= upTo {
			break
		}
		rr.batches = append(rr.batches, b)
		rr.next = b.Last + 1
	}
	if rr.next == before {
		return fmt.Errorf("fetch at offset %d returned no batch below %d, the smallest high watermark", offset, upTo)
	}
	return nil
}

// codeError prints a Kafka error code as its name and number, without
// kerr's paragraph of description, which would drown a line of the report.
type codeError struct{ err error }

func (e codeError) Error() string {
	var ke *kerr.Error
	if errors.As(e.err, &ke) {
		return fmt.Sprintf("%s (error code %d)", ke.Message, ke.Code)
	}
	return e.err.Error()
}

func (e codeError) Unwrap() error { return e.err }

// trim drops the first round's batches that lie wholly before from or
// start at or after upTo: those are outside the range every replica has.
func (rr *replicaRead) trim(from, upTo int64) {
	kept := rr.batches[:0]
	for _, b := range rr.batches {
		if b.Last >= from && b.Base < upTo {
			kept = append(kept, b)
		}
	}
	rr.batches = kept
	rr.next = max(from, rr.next)
	if len(kept) > 0 {
		rr.next = kept[len(kept)-1].Last + 1
	}
}

// batchInfo is what check-replicas compares of a record batch.
type batchInfo struct {
	Base, Last int64
	CRC        uint32 // as stored in the header
	// Corrupt says the bytes do not match the stored CRC: this replica's
	// copy is damaged whatever the others hold.
	Corrupt bool
}

// Batches of magic 2 are read by broker/record. Magic 0 and 1 (a message
// set entry, which Tributary never writes but a Kafka cluster's older
// segments may hold) are read here:
//
//	0 offset int64 | 8 size int32 | 12 crc uint32 (CRC-32 IEEE of bytes 16..end)
//	16 magic int8 | ...
//
// a compressed wrapper's offset is that of its last inner message.
const (
	legacyMinSize = 14 // crc, magic, attributes, key and value lengths
	offMagic      = 16 // the same in every format
)

// parseBatchHeaders reads the complete batches of a Fetch response's
// records; a partial batch at the end (the broker cuts at max bytes) is
// ignored, as every consumer does.
func parseBatchHeaders(b []byte) ([]batchInfo, error) {
	var out []batchInfo
	for len(b) >= record.LogOverhead {
		base := int64(binary.BigEndian.Uint64(b[0:]))
		length := int32(binary.BigEndian.Uint32(b[8:]))
		if length < legacyMinSize {
			return out, fmt.Errorf("corrupt batch at offset %d: length %d", base, length)
		}
		size := record.LogOverhead + int(length)
		if len(b) < size {
			break
		}
		var info batchInfo
		switch magic := int8(b[offMagic]); magic {
		case record.Magic:
			batch, _, ok := record.Split(b)
			if !ok {
				return out, fmt.Errorf("corrupt batch at offset %d: %d bytes, less than a header", base, size)
			}
			info = batchInfo{Base: base, Last: batch.LastOffset(), CRC: batch.CRC(), Corrupt: batch.ComputeCRC() != batch.CRC()}
		case 0, 1:
			info = batchInfo{Base: base, Last: base, CRC: binary.BigEndian.Uint32(b[12:])}
			info.Corrupt = crc32.ChecksumIEEE(b[offMagic:size]) != info.CRC
		default:
			return out, fmt.Errorf("batch at offset %d: unknown magic %d", base, magic)
		}
		b = b[size:]
		out = append(out, info)
	}
	return out, nil
}

// divergence is where the replicas of a partition first differ.
type divergence struct {
	Offset int64 // the lowest base offset among the batches there
	// Batches holds each replica's batch at that position; a replica
	// that has no batch there is missing.
	Batches map[int32]batchInfo
}

// String names each replica's batch in the order of replicas.
func (d *divergence) String(replicas []int32) string {
	parts := make([]string, 0, len(replicas))
	for _, r := range replicas {
		b, ok := d.Batches[r]
		switch {
		case !ok:
			parts = append(parts, fmt.Sprintf("replica %d has no batch", r))
		case b.Corrupt:
			parts = append(parts, fmt.Sprintf("replica %d %d-%d crc %08x (CORRUPT: bytes do not match the crc)", r, b.Base, b.Last, b.CRC))
		default:
			parts = append(parts, fmt.Sprintf("replica %d %d-%d crc %08x", r, b.Base, b.Last, b.CRC))
		}
	}
	return fmt.Sprintf("DIVERGED at offset %d: %s", d.Offset, strings.Join(parts, ", "))
}

// compareReplicas walks the replicas' batch lists in step and returns how
// many batches they share, or the first position where they differ: a
// different base offset, last offset or stored CRC, a batch whose bytes
// do not match its CRC, or a list that ends before another. It does no
// I/O: the lists are what each replica returned below the smallest high
// watermark, which all replicas must have alike.
func compareReplicas(replicas []int32, lists map[int32][]batchInfo) (int, *divergence) {
	longest := 0
	for _, r := range replicas {
		longest = max(longest, len(lists[r]))
	}
	for i := 0; i < longest; i++ {
		at := make(map[int32]batchInfo, len(replicas))
		for _, r := range replicas {
			if i < len(lists[r]) {
				at[r] = lists[r][i]
			}
		}
		if len(at) == len(replicas) && sameBatches(replicas, at) {
			continue
		}
		d := &divergence{Offset: -1, Batches: at}
		for _, b := range at {
			if d.Offset < 0 || b.Base < d.Offset {
				d.Offset = b.Base
			}
		}
		return i, d
	}
	return longest, nil
}

func sameBatches(replicas []int32, at map[int32]batchInfo) bool {
	first := at[replicas[0]]
	return !slices.ContainsFunc(replicas, func(r int32) bool {
		b := at[r]
		return b.Corrupt || b.Base != first.Base || b.Last != first.Last || b.CRC != first.CRC
	})
}
