package loader

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/formats/parquet"
	"github.com/tributary-io/tributary/internal/fsys"
)

// RunUnit executes one unit of a saved plan: it fetches the unit's range,
// writes its Parquet files and bad records into a fresh attempt directory
// in staging, and writes the attempt's result. A unit already done is not
// run again. Two attempts racing (two workers, or a worker presumed dead)
// both complete; the commit takes the result of the smallest attempt id,
// so the choice is the same whoever makes it.
func (l *Loader) RunUnit(ctx context.Context, p *Plan, index int) (*UnitResult, error) {
	if index < 0 || index >= len(p.Units) {
		return nil, fmt.Errorf("plan %s has units 0 to %d; there is no unit %d", p.Run, len(p.Units)-1, index)
	}
	if r, err := l.unitResult(p.Run, index); err == nil {
		return r, nil
	}
	u := p.Units[index]
	start := time.Now()
	attempt := randomHex(4)
	dir := unitDir(p.Run, index) + "/" + attempt
	res, err := l.execute(ctx, p, u, dir)
	if err != nil {
		l.FS.RemoveAll(dir)
		return nil, fmt.Errorf("%v: %w", u, err)
	}
	crashPoint("unit-written")
	// A result is what the commit trusts: only a worker that still runs
	// under the job's lease may write one.
	if err := l.fence(ctx); err != nil {
		l.FS.RemoveAll(dir)
		return nil, fmt.Errorf("%v: %w", u, err)
	}
	res.Unit, res.Attempt, res.Duration = index, attempt, Duration(time.Since(start))
	b, _ := json.MarshalIndent(res, "", "  ")
	w, err := l.FS.Create(unitDone(p.Run, index, attempt))
	if err != nil {
		return nil, fmt.Errorf("%v: writing its result: %w", u, err)
	}
	if _, err := w.Write(b); err != nil {
		w.Close()
		return nil, fmt.Errorf("%v: writing its result: %w", u, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("%v: writing its result: %w", u, err)
	}
	crashPoint("unit-done")
	l.log().Info("unit done", "run", p.Run, "unit", index, "topic", u.Topic, "partition", u.Partition,
		"from", u.From, "to", u.To, "rows", res.Rows, "bad", res.Bad, "files", len(res.Files), "bytes", res.Bytes,
		"seconds", time.Since(start).Seconds())
	r, err := l.unitResult(p.Run, index)
	if err != nil {
		return nil, fmt.Errorf("%v: reading its result back from %s: %w", u, l.FS, err)
	}
	return r, nil
}

// unitResult is the result of a unit's chosen attempt: the complete result
// with the smallest attempt id. ErrNotExist when no attempt completed.
func (l *Loader) unitResult(run string, index int) (*UnitResult, error) {
	ents, err := l.FS.ReadDir(unitDir(run, index))
	if err != nil {
		return nil, err
	}
	for _, e := range ents { // sorted by name, so by attempt id
		attempt, ok := strings.CutSuffix(e.Name(), ".done.json")
		if !ok || e.IsDir() {
			continue
		}
		b, err := l.FS.ReadFile(unitDone(run, index, attempt))
		if err != nil {
			continue
		}
		var r UnitResult
		if err := json.Unmarshal(b, &r); err != nil || r.Attempt != attempt {
			continue // torn by a crash while it was written
		}
		return &r, nil
	}
	return nil, fsys.ErrNotExist
}

func (l *Loader) execute(ctx context.Context, p *Plan, u Unit, dir string) (*UnitResult, error) {
	dec, err := newDecoder(p, u.Topic)
	if err != nil {
		return nil, err
	}
	if r, ok := dec.(interface{ Release() }); ok {
		defer r.Release()
	}
	loc, err := time.LoadLocation(p.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", p.TimeZone, err)
	}
	codec, err := parquet.ParseCodec(p.Codec)
	if err != nil {
		return nil, err
	}
	opts := parquet.Options{Codec: codec, RowGroupBytes: min(parquet.DefaultRowGroupBytes, max(p.MaxMemory/4, 1<<20))}
	raw := p.Format == FormatRaw
	hw := &hourWriters{
		fs: l.FS, dir: dir, topic: u.Topic, partition: u.Partition,
		schema: tableSchema(p, u.Topic, outputSchema(dec, raw)), opts: opts, target: p.TargetFileBytes, maxMemory: p.MaxMemory, loc: loc,
		open: map[writerKey]*hourFile{},
	}
	gw := &groupWriter{hw: hw, loc: loc, cols: p.PartitionBy}
	defer hw.abort()
	bad := &badRecords{fs: l.FS, staged: path.Join(dir, errorsFile(u.Topic, u.Partition, u.From, u.To))}
	defer bad.abort()

	res := &UnitResult{}
	rr := &rangeReader{client: l.Cluster.Client, topic: u.Topic, partition: u.Partition, next: u.From, to: u.To, allowGaps: p.AllowGaps}
	process := func(recs []decode.Record) error {
		var size int64
		for i := range recs {
			size += int64(len(recs[i].Key) + len(recs[i].Value))
		}
		res.Records += int64(len(recs))
		l.Progress.add(int64(len(recs)), size)
		failed := dec.Decode(recs)
		if err := bad.add(recs, failed); err != nil {
			return err
		}
		rec := dec.Flush()
		if rec == nil {
			return nil
		}
		defer rec.Release()
		offsets, stamps := goodRows(recs, failed)
		if int(rec.NumRows()) != len(offsets) {
			return fmt.Errorf("decoder returned %d rows for %d good records", rec.NumRows(), len(offsets))
		}
		times, err := eventTimes(rec, p.TimeField, stamps)
		if err != nil {
			return err
		}
		if !raw {
			rec = withSource(rec, u.Partition, offsets)
			defer rec.Release()
			if p.TableFormat == TableIceberg {
				rec = withEventTime(rec, times, hw.schema)
				defer rec.Release()
			}
		}
		if err := gw.write(rec, offsets, times); err != nil {
			return err
		}
		res.Rows += int64(len(offsets))
		return nil
	}
	if p.FromTier != "" {
		if rr.next, err = l.readTier(ctx, p, u, process); err != nil {
			return nil, err
		}
		res.TierRecords = res.Records
	}
	if err := rr.read(ctx, process); err != nil {
		return nil, err
	}
	res.Gaps = rr.gaps
	if res.Files, err = hw.close(); err != nil {
		return nil, err
	}
	if len(p.PartitionBy) > 0 && hw.Combinations() > manyCombinations {
		l.log().Warn("--partition-by: the unit's rows had more than this many combinations of hour and partition values, so its files are many and small; partition by a column with fewer distinct values",
			"combinations", manyCombinations, "columns", strings.Join(p.PartitionBy, ","), "topic", u.Topic, "partition", u.Partition, "files", len(res.Files))
	}
	for _, f := range res.Files {
		res.Bytes += f.Bytes
	}
	if res.Errors, err = bad.close(u); err != nil {
		return nil, err
	}
	if res.Errors != nil {
		res.Bad = res.Errors.Records
	}
	return res, nil
}

// goodRows are the offsets and timestamps of the records that decoded, in
// the order of the rows.
func goodRows(recs []decode.Record, failed []decode.RecordError) (offsets, stamps []int64) {
	bad := make(map[int64]bool, len(failed))
	for _, e := range failed {
		bad[e.Offset] = true
	}
	offsets = make([]int64, 0, len(recs)-len(failed))
	stamps = make([]int64, 0, len(recs)-len(failed))
	for _, r := range recs {
		if !bad[r.Offset] {
			offsets = append(offsets, r.Offset)
			stamps = append(stamps, r.Timestamp)
		}
	}
	return offsets, stamps
}

// badRecords writes a unit's undecodable records as JSON lines, one object
// per record with its offset, the reason and the raw bytes.
type badRecords struct {
	fs interface {
		Create(string) (io.WriteCloser, error)
	}
	staged string
	f      io.WriteCloser
	w      *bufio.Writer
	n      int64
}

type badRecord struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	Timestamp   string `json:"timestamp"`
	Field       string `json:"field,omitempty"`
	Reason      string `json:"reason"`
	Key         string `json:"key,omitempty"`
	Value       string `json:"value,omitempty"`
	ValueBase64 string `json:"valueBase64,omitempty"`
}

func (b *badRecords) add(recs []decode.Record, failed []decode.RecordError) error {
	for _, e := range failed {
		i := sort.Search(len(recs), func(i int) bool { return recs[i].Offset >= e.Offset })
		if i == len(recs) || recs[i].Offset != e.Offset {
			return fmt.Errorf("decoder reported offset %d, not in the batch", e.Offset)
		}
		r := recs[i]
		line := badRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Timestamp: time.UnixMilli(r.Timestamp).UTC().Format(time.RFC3339Nano), Field: e.Path, Reason: e.Reason}
		if r.Key != nil {
			line.Key = base64.StdEncoding.EncodeToString(r.Key)
		}
		if utf8.Valid(r.Value) {
			line.Value = string(r.Value)
		} else {
			line.ValueBase64 = base64.StdEncoding.EncodeToString(r.Value)
		}
		if b.f == nil {
			f, err := b.fs.Create(b.staged)
			if err != nil {
				return fmt.Errorf("creating %s: %w", b.staged, err)
			}
			b.f, b.w = f, bufio.NewWriterSize(f, 64<<10)
		}
		j, _ := json.Marshal(line)
		b.w.Write(j)
		if err := b.w.WriteByte('\n'); err != nil {
			return err
		}
		b.n++
	}
	return nil
}

func (b *badRecords) close(u Unit) (*ErrorFile, error) {
	if b.f == nil {
		return nil, nil
	}
	f := b.f
	b.f = nil
	if err := b.w.Flush(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return &ErrorFile{Path: errorsFile(u.Topic, u.Partition, u.From, u.To), Staged: b.staged,
		Topic: u.Topic, Partition: u.Partition, Records: b.n}, nil
}

func (b *badRecords) abort() {
	if b.f != nil {
		b.f.Close()
	}
}

// UnitDone reports whether a unit of the plan has a complete result and
// how many records it read: what a caller whose units run elsewhere (a
// YARN application) shows as progress.
func (l *Loader) UnitDone(p *Plan, index int) (records int64, done bool) {
	r, err := l.unitResult(p.Run, index)
	if err != nil {
		return 0, false
	}
	return r.Records, true
}
