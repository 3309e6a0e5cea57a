package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"golang.org/x/sync/semaphore"

	"github.com/tributary-io/tributary/formats/parquet"
)

// Compaction's table properties and defaults, Iceberg's names.
const (
	PropTargetFileSize = "write.target-file-size-bytes"
	PropCodec          = "write.parquet.compression-codec"

	DefaultTargetFileSize = 512 << 20
	// DefaultMinInputFiles is how many small files of one group make a
	// rewrite worth it (Iceberg's min-input-files is 5; a load run makes
	// one file per hour and partition, so 2 is what compacts a day of
	// hourly runs).
	DefaultMinInputFiles = 2
)

// Compact says what a compaction rewrites.
type Compact struct {
	// TargetFileBytes is the size of the files it writes; 0 takes the
	// table's write.target-file-size-bytes, else 512 MiB. A file smaller
	// than three quarters of it is small (Iceberg's min-file-size-bytes).
	TargetFileBytes int64
	// MinInputFiles: a group with fewer small files is left alone.
	MinInputFiles int
	// Hours, if set, limits the compaction to these partitions (hours
	// since the epoch).
	Hours []int32
}

// CompactResult is what a compaction did.
type CompactResult struct {
	Snapshot  *Snapshot // nil when there was nothing to compact
	Version   int
	Rewritten int // input files
	Written   int // output files
	Rows      int64
	Bytes     int64 // of the input files
	Seconds   float64
}

// CompactTable rewrites the small data files of each partition into files
// of the target size, in one "replace" snapshot that removes the old files
// and adds the new ones (Rewrite): readers see the same rows before and
// after, and any earlier snapshot still reads the old files until an
// expiry removes them.
//
// Files are grouped by partition (hour) and, for the loader's files, by
// Kafka partition, in offset order: the new file is named
// <topic>+<partition>+<first>+<last>.c<id>.parquet, the range covering
// its inputs', so that a backfill of any offset of the range finds it and
// replaces it whole. Within a group, files of different Arrow schemas
// (the table's schema evolved between them) go to different output files.
//
// A load that commits while the compaction writes is not disturbed: the
// rewrite retries on the new version (its files stay). A rewrite that
// finds an input gone (another compaction or a backfill replaced it)
// commits nothing and removes what it wrote: ErrFilesGone.
func (c *Catalog) CompactTable(ctx context.Context, dir string, o Compact) (*CompactResult, error) {
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx) // ends the reads ahead of an error
	defer cancel()
	t, err := c.Load(dir)
	if err != nil {
		return nil, err
	}
	md := t.Metadata
	target := o.TargetFileBytes
	if target <= 0 {
		target = DefaultTargetFileSize
		if v, ok := md.Properties[PropTargetFileSize]; ok {
			if target, err = strconv.ParseInt(v, 10, 64); err != nil || target <= 0 {
				return nil, fmt.Errorf("formats/iceberg: table property %s=%q: want a byte count", PropTargetFileSize, v)
			}
		}
	}
	minInputs := o.MinInputFiles
	if minInputs <= 0 {
		minInputs = DefaultMinInputFiles
	}
	wr, err := writingFor(md)
	if err != nil {
		return nil, err
	}
	live, err := c.LiveFiles(md.Current())
	if err != nil {
		return nil, err
	}
	spec := md.Spec()
	hours := map[int32]bool{}
	for _, h := range o.Hours {
		hours[h] = true
	}
	type key struct {
		hour  int32
		group string
	}
	groups := map[key][]Entry{}
	for _, e := range live {
		if e.File.SizeBytes >= target*3/4 || !strings.EqualFold(e.File.Format, "parquet") {
			continue
		}
		h, _ := hourOf(e, spec)
		if len(hours) > 0 && !hours[h] {
			continue
		}
		g := identityKey(e, spec) // files of other identity values are other partitions
		if topic, p, _, _, ok := OffsetRange(path.Base(e.File.Path)); ok {
			g += topic + "+" + strconv.Itoa(int(p))
		}
		groups[key{h, g}] = append(groups[key{h, g}], e)
	}
	keys := make([]key, 0, len(groups))
	for k, g := range groups {
		if len(g) >= minInputs {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].hour < keys[j].hour || keys[i].hour == keys[j].hour && keys[i].group < keys[j].group
	})
	res := &CompactResult{Version: t.Version}
	pending := &pendingOutputs{dir: dir, id: uuid()}
	// Removed after the commit (or the failure): until then the outputs
	// are the compaction's, not orphans. A crash leaves the marker, which
	// orphan removal drops once it is older than its safety age.
	defer c.FS.RemoveAll(inflightFile(dir, pending.id))
	var add []NewFile
	var del []string
	for _, k := range keys {
		g := groups[k]
		sort.Slice(g, func(i, j int) bool {
			return firstOffset(g[i]) < firstOffset(g[j]) || firstOffset(g[i]) == firstOffset(g[j]) && g[i].File.Path < g[j].File.Path
		})
		w := &rewriter{c: c, hour: k.hour, identity: g[0].File.Partition, wr: wr, target: target, pending: pending}
		inputs := c.prefetch(ctx, g)
		for _, e := range g {
			if err := ctx.Err(); err != nil {
				w.abort()
				c.removeAll(add)
				return nil, err
			}
			f := <-inputs
			if err := f.err; err != nil {
				w.abort()
				c.removeAll(add)
				return nil, err
			}
			err := w.add(ctx, e, f.b)
			f.b = nil
			f.release() // its bytes are in the output now: read the next
			if err != nil {
				w.abort()
				c.removeAll(add)
				return nil, err
			}
		}
		files, err := w.close()
		if err != nil {
			c.removeAll(add)
			return nil, err
		}
		add = append(add, files...)
		for _, e := range g {
			del = append(del, e.File.Path)
			res.Rows += e.File.Records
			res.Bytes += e.File.SizeBytes
		}
	}
	if len(del) == 0 {
		res.Seconds = time.Since(start).Seconds()
		return res, nil
	}
	t2, snap, err := c.Rewrite(Rewrite{Dir: dir, Operation: "replace", Delete: del, Add: add})
	if err != nil {
		if errors.Is(err, ErrFilesGone) {
			c.removeAll(add)
		}
		return nil, err
	}
	res.Snapshot, res.Version = snap, t2.Version
	res.Rewritten, res.Written = len(del), len(add)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// prefetchWindow is how many input files a compaction reads ahead: on
// HDFS each small file costs a NameNode and a DataNode round trip, which
// reading one at a time made the bound (50 files/s on the test HDFS).
const prefetchWindow = 8

// DefaultPrefetchBytes bounds the bytes of the input files a compaction
// holds read ahead (review finding 4): inputs go up to 3/4 of the target
// size (384 MiB by default), and 8 of them at once, plus the channel's
// buffer, came to gigabytes in the jobs daemon. So a compaction holds at most
// DefaultPrefetchBytes of compressed input, plus one decoded row group of
// the input being copied and the output's buffered row group: an input
// larger than the budget is not read ahead but read from the file system
// row group by row group.
const DefaultPrefetchBytes = 256 << 20

type fetched struct {
	b       []byte // nil: read it from the file system, row group by row group
	err     error
	release func() // returns the file's bytes to the budget
}

// prefetch reads the files of g, up to prefetchWindow files and
// DefaultPrefetchBytes bytes ahead, and hands them over in g's order; the
// reader calls release once it is done with a file's bytes. A reader that
// stops early cancels ctx: the goroutines end once their reads do.
func (c *Catalog) prefetch(ctx context.Context, g []Entry) <-chan fetched {
	budget := c.prefetchBytes
	if budget <= 0 {
		budget = DefaultPrefetchBytes
	}
	sem := semaphore.NewWeighted(budget)
	out := make(chan fetched)
	slots := make(chan chan fetched, prefetchWindow)
	// Files larger than the budget are streamed (row groups read at
	// offsets), not read ahead: whole, one would be held entirely.
	stream := budget
	go func() {
		defer close(slots)
		for _, e := range g {
			one := make(chan fetched, 1)
			if e.File.SizeBytes > stream {
				one <- fetched{release: func() {}}
				select {
				case slots <- one:
				case <-ctx.Done():
					return
				}
				continue
			}
			n := max(e.File.SizeBytes, 1)
			if err := sem.Acquire(ctx, n); err != nil {
				return
			}
			select {
			case slots <- one:
			case <-ctx.Done():
				return
			}
			go func() {
				b, err := c.FS.ReadFile(c.rel(e.File.Path))
				if err != nil {
					err = fmt.Errorf("reading %s: %w", e.File.Path, err)
				}
				one <- fetched{b, err, func() { sem.Release(n) }}
			}()
		}
	}()
	go func() {
		defer close(out)
		for one := range slots {
			select {
			case out <- <-one:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func firstOffset(e Entry) int64 {
	if _, _, first, _, ok := OffsetRange(path.Base(e.File.Path)); ok {
		return first
	}
	return -1
}

func (c *Catalog) removeAll(files []NewFile) {
	for _, f := range files {
		c.FS.RemoveAll(f.Path)
	}
}

// rewriter writes the rows of a group's files, in order, into files of
// the target size, one schema per file.
type rewriter struct {
	c        *Catalog
	hour     int32
	identity map[string]any // the group's partition tuple
	wr       dataWriting
	target   int64

	cur      *outFile
	done     []NewFile
	inBytes  int64 // input bytes in cur
	firstOff int64
	lastOff  int64
	named    bool // the group's files are named by offsets

	// pending lists, in metadata/.inflight-<id>.json, the outputs of the
	// whole compaction until its commit: orphan removal keeps them.
	pending *pendingOutputs
}

type pendingOutputs struct {
	dir, id string
	files   []string // locations
}

type outFile struct {
	tmp    string
	dir    string
	prefix string // <topic>+<partition>
	schema *arrow.Schema
	w      io.WriteCloser
	pw     *parquet.Writer
}

// add appends the rows of one input file, b its bytes read ahead (nil:
// read at offsets from the file system), row group by row group.
func (r *rewriter) add(ctx context.Context, e Entry, b []byte) error {
	d, err := r.c.openData(e.File.Path, e.File.SizeBytes, b)
	if err != nil {
		return err
	}
	defer d.close()
	if d.rows() != e.File.Records {
		return fmt.Errorf("%s: %d rows, the manifest says %d", e.File.Path, d.rows(), e.File.Records)
	}
	fs, err := d.schema()
	if err != nil {
		return err
	}
	schema := withMappedIDs(fs, r.wr.mapping)
	if r.cur != nil && (!r.cur.schema.Equal(schema) || r.inBytes+e.File.SizeBytes > r.target) {
		if err := r.finish(); err != nil {
			return err
		}
	}
	topic, part, first, last, named := OffsetRange(path.Base(e.File.Path))
	if r.cur == nil {
		dir := path.Dir(r.c.rel(e.File.Path))
		out := &outFile{dir: dir, schema: schema, tmp: path.Join(dir, ".tmp-compact-"+uuid()+".parquet")}
		if named {
			out.prefix = topic + "+" + strconv.Itoa(int(part))
		}
		if out.w, err = r.c.FS.Create(out.tmp); err != nil {
			return err
		}
		if out.pw, err = parquet.NewWriter(out.w, schema, r.wr.options()); err != nil {
			out.w.Close()
			r.c.FS.RemoveAll(out.tmp)
			return err
		}
		r.cur, r.inBytes, r.named = out, 0, named
		r.firstOff, r.lastOff = first, last
	}
	r.named = r.named && named
	r.firstOff, r.lastOff = min(r.firstOff, first), max(r.lastOff, last)
	err = d.each(ctx, func(rec arrow.Record) error {
		rec = array.NewRecord(r.cur.schema, rec.Columns(), rec.NumRows())
		defer rec.Release()
		return r.cur.pw.Write(rec)
	})
	if err != nil {
		return fmt.Errorf("rewriting %s: %w", e.File.Path, err)
	}
	r.inBytes += e.File.SizeBytes
	return nil
}

// finish closes the current output file and gives it its final name.
func (r *rewriter) finish() error {
	out := r.cur
	r.cur = nil
	stats, err := out.pw.Close()
	if cerr := out.w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.c.FS.RemoveAll(out.tmp)
		return err
	}
	tag := uuid()[:8]
	name := "compacted-" + uuid() + ".parquet"
	if r.named && out.prefix != "" {
		name = fmt.Sprintf("%s+%d+%d.c%s.parquet", out.prefix, r.firstOff, r.lastOff, tag)
	}
	final := path.Join(out.dir, name)
	r.pending.files = append(r.pending.files, r.c.Location(final))
	if err := r.c.writeInflight(r.pending.dir, r.pending.id, r.pending.files); err != nil {
		r.c.FS.RemoveAll(out.tmp)
		return err
	}
	if err := r.c.FS.RenameNoReplace(out.tmp, final); err != nil {
		r.c.FS.RemoveAll(out.tmp)
		return err
	}
	st, err := r.c.FS.Stat(final)
	if err != nil {
		return err
	}
	r.done = append(r.done, NewFile{Path: final, Records: stats.Rows, Bytes: st.Size(), Hour: r.hour, Identity: r.identity})
	return nil
}

func (r *rewriter) close() ([]NewFile, error) {
	if r.cur != nil {
		if err := r.finish(); err != nil {
			r.c.removeAll(r.done)
			return nil, err
		}
	}
	return r.done, nil
}

func (r *rewriter) abort() {
	if r.cur != nil {
		r.cur.w.Close()
		r.c.FS.RemoveAll(r.cur.tmp)
		r.cur = nil
	}
	r.c.removeAll(r.done)
}
