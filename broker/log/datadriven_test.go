package log

import (
	"github.com/tributary-io/tributary/broker/producer"

	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
)

// TestDataDriven runs the scripts in testdata/. Each script drives one
// partition log through appends, reads, rolls, retention, truncation, damage
// and reopening, and prints the state a user would see. Rewrite the
// expectations with `go test ./broker/log -run DataDriven -rewrite` and review
// the diff.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{t: t, dir: filepath.Join(t.TempDir(), "events-0"), now: time.UnixMilli(1_700_000_000_000)}
		defer h.close()
		datadriven.RunTest(t, path, h.run)
	})
}

type harness struct {
	t   *testing.T
	dir string
	cfg Config
	log *Log
	now time.Time
	ts  int64 // next record timestamp when a script gives none
	txn *txnModel
}

func (h *harness) close() {
	if h.log != nil {
		h.log.Close()
	}
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	out, err := h.exec(t, d)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return out
}

func (h *harness) exec(t *testing.T, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "open", "clock", "damage", "files":
	default:
		if h.log == nil {
			return "", errors.New("log is not open")
		}
	}
	switch d.Cmd {
	case "open":
		return h.open(t, d)
	case "close":
		err := h.log.Close()
		h.log = nil
		return "ok\n", err
	case "crash":
		h.crash()
		return "ok\n", nil
	case "clock":
		var ms int64
		d.ScanArgs(t, "now", &ms)
		h.now = time.UnixMilli(ms)
		return "ok\n", nil
	case "append":
		return h.append(t, d)
	case "read":
		return h.read(t, d)
	case "segments":
		return h.segments(), nil
	case "roll":
		return h.segments(), h.log.Roll()
	case "truncate":
		var o int64
		d.ScanArgs(t, "offset", &o)
		if err := h.log.TruncateTo(o); err != nil {
			return "", err
		}
		return h.segments(), nil
	case "delete-before":
		var o int64
		d.ScanArgs(t, "offset", &o)
		if err := h.log.DeleteRecordsBefore(o); err != nil {
			return "", err
		}
		return h.segments(), nil
	case "retention":
		n, err := h.log.EnforceRetention()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("deleted %d\n%s", n, h.segments()), nil
	case "flush":
		return fmt.Sprintf("recovery point %d\n", h.log.RecoveryPoint()), h.log.Flush()
	case "offset-for-time":
		var ts int64
		d.ScanArgs(t, "ts", &ts)
		o, at, ok, err := h.log.OffsetForTimestamp(ts)
		if !ok {
			return "none\n", err
		}
		return fmt.Sprintf("offset %d timestamp %d\n", o, at), err
	case "epochs":
		var b strings.Builder
		for _, e := range h.log.LeaderEpochs() {
			fmt.Fprintf(&b, "epoch %d start %d\n", e.Epoch, e.StartOffset)
		}
		return b.String(), nil
	case "damage":
		return h.damage(t, d)
	case "files":
		return h.files(), nil
	}
	if out, ok, err := h.cleanerCommand(t, d); ok {
		return out, err
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

func (h *harness) open(t *testing.T, d *datadriven.TestData) (string, error) {
	if h.log != nil {
		return "", errors.New("already open")
	}
	h.cfg = DefaultConfig()
	h.cfg.FileDeleteDelayMs = 0
	opt := Options{CleanShutdown: !d.HasArg("crash"), Now: func() time.Time { return h.now }}
	for _, a := range d.CmdArgs {
		var v int64
		if len(a.Vals) > 0 {
			fmt.Sscan(a.Vals[0], &v)
		}
		switch a.Key {
		case "segment-bytes":
			h.cfg.SegmentBytes = v
		case "segment-ms":
			h.cfg.SegmentMs = time.Duration(v) * time.Millisecond
		case "index-interval":
			h.cfg.IndexIntervalBytes = int(v)
		case "index-bytes":
			h.cfg.SegmentIndexBytes = int(v)
		case "retention-ms":
			h.cfg.RetentionMs = time.Duration(v) * time.Millisecond
		case "retention-bytes":
			h.cfg.RetentionBytes = v
		case "max-message-bytes":
			h.cfg.MaxMessageBytes = int(v)
		case "flush-messages":
			h.cfg.FlushMessages = v
		case "log-append-time":
			h.cfg.LogAppendTime = true
		case "recovery-point":
			opt.RecoveryPoint = v
		case "log-start":
			opt.LogStartOffset = v
		case "crash":
		default:
			t.Fatalf("open: unknown argument %s", a.Key)
		}
	}
	l, err := Open(h.dir, h.cfg, opt)
	if err != nil {
		return "", err
	}
	h.log = l
	if h.txn == nil {
		h.txn = &txnModel{st: producer.NewState()}
	}
	return h.segments(), nil
}

// crash drops the log as a kill -9 would: file handles go away, nothing is
// flushed, sealed or checkpointed. Index entries still in memory are lost.
func (h *harness) crash() {
	for _, s := range h.log.segments() {
		s.log.Close()
		for _, ix := range []*index{s.offsets.index, s.times.index} {
			if ix.file != nil {
				ix.file.Close()
				ix.file = nil
			}
		}
	}
	h.log = nil
}

// append builds batches of records with keys k<offset-ish>, values of the
// given size and timestamps from ts (one ms apart), and appends them.
func (h *harness) append(t *testing.T, d *datadriven.TestData) (string, error) {
	n, size, batches, epoch := 1, 10, 1, int32(0)
	codec := "none"
	ts := h.ts
	if ts == 0 {
		ts = h.now.UnixMilli()
	}
	if d.HasArg("n") {
		d.ScanArgs(t, "n", &n)
	}
	if d.HasArg("size") {
		d.ScanArgs(t, "size", &size)
	}
	if d.HasArg("batches") {
		d.ScanArgs(t, "batches", &batches)
	}
	if d.HasArg("ts") {
		d.ScanArgs(t, "ts", &ts)
	}
	if d.HasArg("epoch") {
		d.ScanArgs(t, "epoch", &epoch)
	}
	if d.HasArg("codec") {
		d.ScanArgs(t, "codec", &codec)
	}
	// Each batch is its own append, as from separate produce requests.
	first := int64(-1)
	var info AppendInfo
	for b := 0; b < batches; b++ {
		batch := testBatch(t, n, size, ts, codec)
		ts += int64(n)
		if d.HasArg("corrupt") {
			batch[len(batch)-1] ^= 0xff
		}
		var err error
		if info, err = h.log.AppendAsLeader(batch, epoch); err != nil {
			return "", err
		}
		if first < 0 {
			first = info.FirstOffset
		}
	}
	h.ts = ts
	return fmt.Sprintf("offsets %d-%d\n", first, info.LastOffset), nil
}

func testBatch(t testing.TB, n, size int, ts int64, codec string) record.Batch {
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = ts
	for c := record.CodecNone; c <= record.CodecZstd; c++ {
		if c.String() == codec {
			opts.Codec = c
		}
	}
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i] = kmsg.Record{
			OffsetDelta:      int32(i),
			TimestampDelta64: int64(i),
			Key:              []byte(fmt.Sprintf("k%d", i%4)),
			Value:            []byte(strings.Repeat("v", size)),
		}
	}
	b, err := record.Build(opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (h *harness) read(t *testing.T, d *datadriven.TestData) (string, error) {
	var offset int64
	opt := ReadOptions{MaxBytes: 1 << 20, UpTo: -1, MinOneBatch: d.HasArg("min-one")}
	d.ScanArgs(t, "offset", &offset)
	if d.HasArg("max-bytes") {
		d.ScanArgs(t, "max-bytes", &opt.MaxBytes)
	}
	if d.HasArg("up-to") {
		d.ScanArgs(t, "up-to", &opt.UpTo)
	}
	s, err := h.log.Read(offset, opt)
	if err != nil {
		return "", err
	}
	data, err := s.ReadAll()
	if err != nil {
		return "", err
	}
	if len(data) == 0 {
		return "empty\n", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d bytes at position %d\n", len(data), s.Pos)
	for rest := data; len(rest) > 0; {
		batch, r, ok := record.Split(rest)
		if !ok {
			fmt.Fprintf(&b, "partial batch: %d bytes\n", len(rest))
			break
		}
		fmt.Fprintf(&b, "batch %d-%d records=%d epoch=%d crc-ok=%v\n", batch.BaseOffset(), batch.LastOffset(),
			batch.RecordCount(), batch.PartitionLeaderEpoch(), batch.CRC() == batch.ComputeCRC())
		rest = r
	}
	return b.String(), nil
}

func (h *harness) segments() string {
	var b strings.Builder
	l := h.log
	fmt.Fprintf(&b, "log start=%d end=%d\n", l.LogStartOffset(), l.LogEndOffset())
	for _, s := range l.segments() {
		fmt.Fprintf(&b, "segment %d: %d bytes, %d index entries, %d time entries, max timestamp %d\n",
			s.base, s.size.Load(), s.offsets.len(), s.times.len(), s.largestTimestamp())
	}
	return b.String()
}

func (h *harness) files() string {
	ents, _ := os.ReadDir(h.dir)
	var b strings.Builder
	for _, e := range ents {
		info, _ := e.Info()
		fmt.Fprintf(&b, "%s %d\n", e.Name(), info.Size())
	}
	return b.String()
}

// damage changes a file of a closed or crashed log: truncate=N cuts it to N
// bytes, flip=N inverts the byte at N, remove deletes it.
func (h *harness) damage(t *testing.T, d *datadriven.TestData) (string, error) {
	var name string
	d.ScanArgs(t, "file", &name)
	path := filepath.Join(h.dir, name)
	switch {
	case d.HasArg("truncate"):
		var n int64
		d.ScanArgs(t, "truncate", &n)
		return "ok\n", os.Truncate(path, n)
	case d.HasArg("flip"):
		var n int64
		d.ScanArgs(t, "flip", &n)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		buf := make([]byte, 1)
		if _, err := f.ReadAt(buf, n); err != nil {
			return "", err
		}
		buf[0] ^= 0xff
		_, err = f.WriteAt(buf, n)
		return "ok\n", err
	case d.HasArg("remove"):
		return "ok\n", os.Remove(path)
	}
	return "", errors.New("damage: want truncate=, flip= or remove")
}
