package log

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
)

// The data-driven commands of the log cleaner (testdata/compaction*.txt):
//
//	compact [delete] [delete-retention-ms=N] [min-lag-ms=N] [ratio=F]
//	    sets cleanup.policy=compact (compact,delete) and its settings
//	append-kv [follower] [codec=C] [ts=N] [epoch=N] [pid=N pepoch=N seq=N] [txn] k=v ...
//	    appends one batch; v=<tombstone> is a null value, <nokey>=v a null key;
//	    follower appends it as replicated, past the checks a producer's gets
//	append-control commit|abort pid=N [pepoch=N] [epoch=N]
//	    appends a transaction marker, as replication would
//	clean [first-dirty=N] [up-to=N]
//	    runs Clean at the harness clock and prints what it did
//	cleanable [first-dirty=N]
//	    prints the dirty ratio the cleaner loop would see
//	records [from=N] [crc] [ts]
//	    prints every batch and record from the log start (or from), as
//	    a consumer reading on from each batch's end would see them

// cleanerCommand runs the cleaner commands; ok is false for other commands.
func (h *harness) cleanerCommand(t *testing.T, d *datadriven.TestData) (out string, ok bool, err error) {
	switch d.Cmd {
	case "compact":
		out, err = h.compact(t, d)
	case "append-kv":
		out, err = h.appendKV(t, d)
	case "append-control":
		out, err = h.appendControl(t, d)
	case "clean":
		out, err = h.clean(t, d)
	case "cleanable":
		out = h.cleanable(t, d)
	case "records":
		out, err = h.records(t, d)
	default:
		return h.txnCommand(t, d)
	}
	return out, true, err
}

func (h *harness) compact(t *testing.T, d *datadriven.TestData) (string, error) {
	cfg := h.log.Config()
	cfg.Compact, cfg.Delete = true, d.HasArg("delete")
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "delete":
		case "delete-retention-ms":
			cfg.DeleteRetentionMs = time.Duration(scanInt(t, a)) * time.Millisecond
		case "min-lag-ms":
			cfg.MinCompactionLagMs = time.Duration(scanInt(t, a)) * time.Millisecond
		case "ratio":
			f, err := strconv.ParseFloat(a.Vals[0], 64)
			if err != nil {
				t.Fatal(err)
			}
			cfg.MinCleanableDirtyRatio = f
		default:
			t.Fatalf("compact: unknown argument %s", a.Key)
		}
	}
	if err := h.log.SetConfig(cfg); err != nil {
		return "", err
	}
	return fmt.Sprintf("cleanup.policy=%s delete.retention.ms=%d min.compaction.lag.ms=%d min.cleanable.dirty.ratio=%g\n",
		cfg.CleanupPolicy(), cfg.DeleteRetentionMs.Milliseconds(), cfg.MinCompactionLagMs.Milliseconds(), cfg.MinCleanableDirtyRatio), nil
}

func scanInt(t *testing.T, a datadriven.CmdArg) int64 {
	v, err := strconv.ParseInt(a.Vals[0], 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", a.Key, err)
	}
	return v
}

// batchArgs are the header arguments shared by append-kv and append-control.
func (h *harness) batchArgs(t *testing.T, d *datadriven.TestData) (record.BuildOptions, int32) {
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = h.ts
	if opts.BaseTimestamp == 0 {
		opts.BaseTimestamp = h.now.UnixMilli()
	}
	epoch := int32(0)
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "codec":
			opts.Codec = -1
			for c := record.CodecNone; c <= record.CodecZstd; c++ {
				if c.String() == a.Vals[0] {
					opts.Codec = c
				}
			}
			if opts.Codec < 0 {
				t.Fatalf("unknown codec %s", a.Vals[0])
			}
		case "ts":
			opts.BaseTimestamp = scanInt(t, a)
		case "epoch":
			epoch = int32(scanInt(t, a))
		case "pid":
			opts.ProducerID = scanInt(t, a)
			opts.ProducerEpoch, opts.BaseSequence = 0, 0
		case "pepoch":
			opts.ProducerEpoch = int16(scanInt(t, a))
		case "seq":
			opts.BaseSequence = int32(scanInt(t, a))
		case "txn":
			opts.Transactional = true
		}
	}
	opts.PartitionLeaderEpoch = epoch
	return opts, epoch
}

var batchArgNames = map[string]bool{"follower": true, "codec": true, "ts": true, "epoch": true, "pid": true, "pepoch": true, "seq": true, "txn": true}

func (h *harness) appendKV(t *testing.T, d *datadriven.TestData) (string, error) {
	opts, epoch := h.batchArgs(t, d)
	var recs []kmsg.Record
	for _, a := range d.CmdArgs {
		if batchArgNames[a.Key] {
			continue
		}
		r := kmsg.Record{OffsetDelta: int32(len(recs)), TimestampDelta64: int64(len(recs)), TimestampDelta: int32(len(recs))}
		if a.Key != "<nokey>" {
			r.Key = []byte(a.Key)
		}
		if len(a.Vals) == 0 {
			t.Fatalf("append-kv: %s has no value", a.Key)
		}
		if a.Vals[0] != "<tombstone>" {
			r.Value = []byte(a.Vals[0])
		}
		recs = append(recs, r)
	}
	b, err := record.Build(opts, recs)
	if err != nil {
		return "", err
	}
	var info AppendInfo
	if d.HasArg("follower") {
		b.SetBaseOffset(h.log.LogEndOffset())
		info, err = h.log.AppendAsFollower(b)
	} else {
		info, err = h.log.AppendAsLeader(b, epoch)
	}
	if err != nil {
		return "", err
	}
	h.ts = opts.BaseTimestamp + int64(len(recs))
	h.txnApplied(b, info.FirstOffset)
	return fmt.Sprintf("offsets %d-%d\n", info.FirstOffset, info.LastOffset), nil
}

// appendControl appends a transaction marker: a control record whose key is
// version 0 and type (0 abort, 1 commit), and whose value is version 0 and
// the coordinator epoch.
func (h *harness) appendControl(t *testing.T, d *datadriven.TestData) (string, error) {
	opts, _ := h.batchArgs(t, d)
	opts.Control, opts.Transactional, opts.BaseSequence = true, true, -1
	opts.BaseOffset = h.log.LogEndOffset()
	key := make([]byte, 4)
	if d.HasArg("commit") {
		binary.BigEndian.PutUint16(key[2:], 1)
	}
	rec := kmsg.Record{Key: key, Value: make([]byte, 6)}
	b, err := record.Build(opts, []kmsg.Record{rec})
	if err != nil {
		return "", err
	}
	info, err := h.log.AppendAsFollower(b)
	if err != nil {
		return "", err
	}
	h.txnApplied(b, info.FirstOffset)
	return fmt.Sprintf("offsets %d-%d\n", info.FirstOffset, info.LastOffset), nil
}

func (h *harness) clean(t *testing.T, d *datadriven.TestData) (string, error) {
	firstDirty, upTo := int64(0), int64(-1)
	if d.HasArg("first-dirty") {
		d.ScanArgs(t, "first-dirty", &firstDirty)
	}
	if d.HasArg("up-to") {
		d.ScanArgs(t, "up-to", &upTo)
	}
	res, err := h.log.Clean(context.Background(), h.now, firstDirty, upTo)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first dirty %d, first uncleanable %d\n", res.FirstDirty, res.FirstUncleanable)
	if res.SegmentsBefore > 0 {
		fmt.Fprintf(&b, "segments %d -> %d, bytes %d -> %d\n", res.SegmentsBefore, res.SegmentsAfter, res.BytesBefore, res.BytesAfter)
	}
	fmt.Fprintf(&b, "records read %d, removed %d (tombstones %d); batches copied %d, rewritten %d, dropped %d\n",
		res.RecordsRead, res.RecordsRemoved, res.TombstonesRemoved, res.BatchesCopied, res.BatchesRewritten, res.BatchesDropped)
	if res.MarkersRemoved > 0 {
		fmt.Fprintf(&b, "markers removed %d\n", res.MarkersRemoved)
	}
	b.WriteString(h.txnForgotten())
	b.WriteString(h.segments())
	return b.String(), nil
}

func (h *harness) cleanable(t *testing.T, d *datadriven.TestData) string {
	firstDirty := int64(0)
	if d.HasArg("first-dirty") {
		d.ScanArgs(t, "first-dirty", &firstDirty)
	}
	r, err := h.log.cleanableRange(h.now, firstDirty, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.release()
	return fmt.Sprintf("first dirty %d, first uncleanable %d, clean bytes %d, dirty bytes %d, ratio %.3f\n",
		r.firstDirty, r.segs[r.uncleanable].base, r.cleanBytes, r.dirtyBytes, r.dirtyRatio())
}

// records reads the log as a consumer does: Read at an offset, take the
// whole batches, go on from the last one's end.
func (h *harness) records(t *testing.T, d *datadriven.TestData) (string, error) {
	offset := h.log.LogStartOffset()
	if d.HasArg("from") {
		d.ScanArgs(t, "from", &offset)
	}
	var b strings.Builder
	for {
		s, err := h.log.Read(offset, ReadOptions{MaxBytes: 1 << 20, MinOneBatch: true, UpTo: -1})
		if err != nil {
			return "", err
		}
		data, err := s.ReadAll()
		if err != nil {
			return "", err
		}
		if len(data) == 0 {
			break
		}
		for rest := data; len(rest) > 0; {
			batch, r, ok := record.Split(rest)
			if !ok {
				break
			}
			if err := printBatch(&b, batch, d.HasArg("crc"), d.HasArg("ts")); err != nil {
				return "", err
			}
			offset = batch.LastOffset() + 1
			rest = r
		}
	}
	if b.Len() == 0 {
		return "empty\n", nil
	}
	return b.String(), nil
}

func printBatch(w *strings.Builder, b record.Batch, crc, ts bool) error {
	fmt.Fprintf(w, "batch %d-%d codec=%s records=%d", b.BaseOffset(), b.LastOffset(), b.Codec(), b.RecordCount())
	if b.ProducerID() >= 0 {
		fmt.Fprintf(w, " pid=%d pepoch=%d seq=%d", b.ProducerID(), b.ProducerEpoch(), b.BaseSequence())
	}
	if b.Transactional() {
		w.WriteString(" txn")
	}
	if b.Control() {
		w.WriteString(" control")
	}
	if b.HasDeleteHorizon() {
		fmt.Fprintf(w, " delete-horizon=%d", b.BaseTimestamp())
	}
	if ts {
		fmt.Fprintf(w, " max-ts=%d", b.MaxTimestamp())
	}
	if crc {
		fmt.Fprintf(w, " crc=%08x crc-ok=%v", b.CRC(), b.CRC() == b.ComputeCRC())
	}
	w.WriteByte('\n')
	recs, err := b.DecodeRecords()
	if err != nil {
		return err
	}
	for i := range recs {
		r := &recs[i]
		fmt.Fprintf(w, "  %d ", b.RecordOffset(r))
		switch {
		case b.Control():
			kind := "abort"
			if len(r.Key) == 4 && binary.BigEndian.Uint16(r.Key[2:]) == 1 {
				kind = "commit"
			}
			fmt.Fprintf(w, "<%s marker>", kind)
		case r.Key == nil:
			fmt.Fprintf(w, "<nokey>=%s", r.Value)
		case r.Value == nil:
			fmt.Fprintf(w, "%s=<tombstone>", r.Key)
		default:
			fmt.Fprintf(w, "%s=%s", r.Key, r.Value)
		}
		if ts {
			fmt.Fprintf(w, " ts=%d", b.RecordTimestamp(r))
		}
		w.WriteByte('\n')
	}
	return nil
}
