package iceberg

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/tributary-io/tributary/formats/parquet"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// The schema of the loader's files in the table mode, cut down: a value,
// the Kafka partition and offset, the event time.
var smallSchema = arrow.NewSchema([]arrow.Field{
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "_partition", Type: arrow.PrimitiveTypes.Int32},
	{Name: "_offset", Type: arrow.PrimitiveTypes.Int64},
	{Name: "_event_time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
}, nil)

const baseHour = 490000 // hours since the epoch: 2025-11-24

// writeSmall writes a Parquet file of the rows of offsets [from, to) of a
// Kafka partition, all in one hour, named as the loader names its files.
func writeSmall(t testing.TB, fs FS, table string, part int32, from, to int64, hour int32) NewFile {
	t.Helper()
	return writeTagged(t, fs, table, part, from, to, hour, "")
}

// writeTagged is writeSmall with a tag in the name (<...>.<tag>.parquet).
func writeTagged(t testing.TB, fs FS, table string, part int32, from, to int64, hour int32, tag string) NewFile {
	t.Helper()
	mem := memory.DefaultAllocator
	b := array.NewRecordBuilder(mem, smallSchema)
	defer b.Release()
	for o := from; o < to; o++ {
		b.Field(0).(*array.StringBuilder).Append("event-" + strconv.FormatInt(o, 10))
		b.Field(1).(*array.Int32Builder).Append(part)
		b.Field(2).(*array.Int64Builder).Append(o)
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(hour)*3600e6 + o))
	}
	rec := b.NewRecord()
	defer rec.Release()
	tm := time.Unix(int64(hour)*3600, 0).UTC()
	name := fmt.Sprintf("%s/dt=%s/hr=%s/%s+%d+%d+%d%s.parquet", table, tm.Format("2006-01-02"), tm.Format("15"), table, part, from, to-1, tag)
	w, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := parquet.NewWriter(w, smallSchema, parquet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pw.Write(rec); err != nil {
		t.Fatal(err)
	}
	st, err := pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return NewFile{Path: name, Records: st.Rows, Bytes: st.Bytes, Hour: hour}
}

// smallTable makes a table of files small files of rows rows each, over
// two Kafka partitions and two hours, committed in appends of per files
// (one snapshot each, as load runs make them).
func smallTable(t testing.TB, c *Catalog, table string, files, rows, per int) {
	t.Helper()
	next := [2]int64{}
	var batch []NewFile
	for i := range files {
		part := int32(i % 2)
		hour := int32(baseHour + (i/2)%2)
		batch = append(batch, writeSmall(t, c.FS, table, part, next[part], next[part]+int64(rows), hour))
		next[part] += int64(rows)
		if len(batch) == per || i == files-1 {
			if _, _, err := c.Append(Append{Dir: table, Schema: smallSchema, TimeColumn: "_event_time", Files: batch}); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
	}
}

// scanView is what pyiceberg read (testdata/scan.py).
type scanView struct {
	Current    scanRows            `json:"current"`
	Snapshots  []int64             `json:"snapshots"`
	Operations []string            `json:"operations"`
	At         map[string]scanRows `json:"at"`
	Filtered   struct {
		Files int `json:"files"`
		Rows  int `json:"rows"`
	} `json:"filtered"`
}

type scanRows struct {
	Rows  [][2]int64 `json:"rows"`
	Files int        `json:"files"`
}

// scan reads the table with pyiceberg, and the snapshots given by time
// travel.
func scan(t *testing.T, root, table string, at ...int64) *scanView {
	t.Helper()
	var args []string
	for _, id := range at {
		args = append(args, strconv.FormatInt(id, 10))
	}
	return scanArgs(t, root, table, args...)
}

func scanArgs(t *testing.T, root, table string, extra ...string) *scanView {
	t.Helper()
	py := testbroker.Python(t, "pyiceberg")
	args := append([]string{filepath.Join(testbroker.RepoRoot(), "formats", "iceberg", "testdata", "scan.py"), filepath.Join(root, table)}, extra...)
	out, err := exec.Command(py, args...).Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("scan.py: %v\n%s", err, stderr)
	}
	var v scanView
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return &v
}

func wantRows(t *testing.T, what string, got scanRows, parts, perPart int64) {
	t.Helper()
	if int64(len(got.Rows)) != parts*perPart {
		t.Fatalf("%s: %d rows, want %d", what, len(got.Rows), parts*perPart)
	}
	for i, r := range got.Rows {
		if r != [2]int64{int64(i) / perPart, int64(i) % perPart} {
			t.Fatalf("%s: row %d is %v: an offset lost or twice", what, i, r)
		}
	}
}

func localCatalog(t *testing.T) (*Catalog, string) {
	root := t.TempDir()
	fs, err := fsys.Open(root, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return &Catalog{FS: fs}, root
}

func countParquet(t *testing.T, root string) int {
	n := 0
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(p, ".parquet") {
			n++
		}
		return nil
	})
	return n
}

// Compaction of 1,000 small files (the number) into one file per
// hour and Kafka partition, then expiry of the snapshots before it, then
// orphan removal: pyiceberg reads the same rows after each step, and time
// travel to a snapshot still retained reads what it read before.
func TestMaintenance(t *testing.T) {
	t.Parallel()
	c, root := localCatalog(t)
	const files, rows = 1000, 5
	t0 := time.Now()
	smallTable(t, c, "t", files, rows, 100)
	t.Logf("1000 files and 10 appends in %v", time.Since(t0))
	tbl, err := c.Load("t")
	if err != nil {
		t.Fatal(err)
	}
	lastAppend := tbl.Metadata.Current().ID
	firstAppend := tbl.Metadata.Snapshots[0].ID

	res, err := c.CompactTable(context.Background(), "t", Compact{TargetFileBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compacted %d files (%d rows, %d bytes) into %d in %.2fs: %.0f files/s", res.Rewritten, res.Rows, res.Bytes, res.Written, res.Seconds, float64(res.Rewritten)/res.Seconds)
	if res.Rewritten != files || res.Written != 4 || res.Rows != files*rows {
		t.Fatalf("compaction: %+v, want %d files rewritten into 4", res, files)
	}
	if s := res.Snapshot.Summary; s["operation"] != "replace" || s["deleted-data-files"] != "1000" || s["added-data-files"] != "4" || s["total-records"] != "5000" || s["total-data-files"] != "4" {
		t.Fatalf("replace snapshot summary: %v", s)
	}
	// The new files are named by the offsets they cover.
	live, err := c.LiveFiles(res.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range live {
		_, p, first, last, ok := OffsetRange(path.Base(e.File.Path))
		if !ok || first > rows || last < files/2*rows-1-rows || p > 1 {
			t.Fatalf("compacted file %s: not named by its offset range", e.File.Path)
		}
	}

	// (Time travel to the last append, 1,000 files, is read after the
	// first expiry below.)
	v := scan(t, root, "t", firstAppend)
	wantRows(t, "after compaction", v.Current, 2, files/2*rows)
	if v.Current.Files != 4 {
		t.Fatalf("pyiceberg plans %d files after the compaction, want 4", v.Current.Files)
	}
	if got := len(v.At[strconv.FormatInt(firstAppend, 10)].Rows); got != 100*rows {
		t.Fatalf("the first append by time travel: %d rows, want %d", got, 100*rows)
	}
	if got := v.Operations[len(v.Operations)-1]; got != "replace" {
		t.Fatalf("pyiceberg reads the compaction as %q", got)
	}

	// Expiry: every snapshot is older than the age (the clock moved on),
	// the two newest stay: the compaction and the last append before it.
	later := *c
	later.Now = func() time.Time { return time.Now().Add(time.Hour) }
	exp, err := later.ExpireSnapshots("t", Expire{MaxAge: time.Minute, MinKeep: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(exp.Expired) != 9 || exp.Retained != 2 {
		t.Fatalf("expiry: %d expired, %d retained; want 9, 2", len(exp.Expired), exp.Retained)
	}
	// The last append reads all 1,000 small files: they stay, and only
	// the expired manifest lists go.
	if n := countParquet(t, root); n != files+4 {
		t.Fatalf("%d Parquet files after the expiry, want %d (the retained append reads them)", n, files+4)
	}
	v = scan(t, root, "t", lastAppend)
	wantRows(t, "after expiry", v.Current, 2, files/2*rows)
	wantRows(t, "the retained append, by time travel", v.At[strconv.FormatInt(lastAppend, 10)], 2, files/2*rows)
	if len(v.Snapshots) != 2 {
		t.Fatalf("pyiceberg sees %d snapshots after the expiry, want 2", len(v.Snapshots))
	}
	// Keeping only the compaction's snapshot: the small files go.
	exp, err = later.ExpireSnapshots("t", Expire{MaxAge: time.Minute, MinKeep: 1})
	if err != nil || len(exp.Expired) != 1 {
		t.Fatalf("the second expiry: %+v, %v", exp, err)
	}
	if n := countParquet(t, root); n != 4 {
		t.Fatalf("%d Parquet files after the second expiry, want the 4 compacted ones", n)
	}
	v = scan(t, root, "t", res.Snapshot.ID)
	wantRows(t, "after the second expiry", v.Current, 2, files/2*rows)
	wantRows(t, "the compaction's snapshot, by time travel", v.At[strconv.FormatInt(res.Snapshot.ID, 10)], 2, files/2*rows)
	// Once more: nothing more to expire, and the minimum is kept.
	if exp, err := later.ExpireSnapshots("t", Expire{MaxAge: time.Minute, MinKeep: 1}); err != nil || len(exp.Expired) != 0 {
		t.Fatalf("a third expiry: %+v, %v", exp, err)
	}

	// Orphans: what a crashed commit, a lost race and a dead compaction
	// leave, and what must stay.
	old := time.Now().Add(-2 * time.Hour)
	born := time.Now().Add(-3 * time.Hour) // the table is older than the orphans
	os.Chtimes(filepath.Join(root, "t/metadata/v1.metadata.json"), born, born)
	plant := func(name string, age time.Time) string {
		p := filepath.Join(root, "t", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, age, age)
		return "t/" + name
	}
	orphans := []string{
		plant("metadata/0000-lost-m0.avro", old),
		plant("metadata/snap-1-1-lost.avro", old),
		plant("metadata/.tmp-dead.metadata.json", old),
		plant("dt=2025-11-24/hr=16/t+0+9000+9004.parquet", old),
		plant("dt=2025-11-24/hr=16/.tmp-compact-dead.parquet", old),
	}
	keep := []string{
		plant("dt=2025-11-24/hr=16/_SUCCESS", old),
		plant("metadata/fresh-m0.avro", time.Now()),                                  // a commit in progress
		plant("dt=2025-11-24/hr=17/t+0+9005+9009.parquet", time.Now()),               // a run in progress
		plant("dt=2025-11-20/hr=00/t+1+0+99.parquet", time.Now().Add(-24*time.Hour)), // older than the table
	}
	or, err := c.RemoveOrphans("t", Orphans{OlderThan: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(or.Orphans, sorted(orphans)) {
		t.Fatalf("orphans removed: %v\nwant %v", or.Orphans, sorted(orphans))
	}
	for _, p := range keep {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Fatalf("%s was removed", p)
		}
	}
	v = scan(t, root, "t")
	wantRows(t, "after orphan removal", v.Current, 2, files/2*rows)
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// A load commits while a compaction writes: the compaction's commit retries
// on the new version and keeps the load's files. A second compaction that
// replaced the same files first makes the first one fail cleanly: nothing
// committed, its files removed.
func TestCompactConcurrent(t *testing.T) {
	t.Parallel()
	c, root := localCatalog(t)
	smallTable(t, c, "t", 8, 3, 4)
	var appended bool
	c.beforeRewrite = func() {
		if appended {
			return
		}
		appended = true
		f := writeSmall(t, c.FS, "t", 0, 12, 15, baseHour)
		if _, _, err := c.Append(Append{Dir: "t", Schema: smallSchema, Files: []NewFile{f}}); err != nil {
			t.Error(err)
		}
	}
	res, err := c.CompactTable(context.Background(), "t", Compact{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rewritten != 8 || res.Written != 4 || res.Snapshot.Summary["total-data-files"] != "5" {
		t.Fatalf("compaction over a concurrent load: %+v %v", res, res.Snapshot.Summary)
	}
	v := scan(t, root, "t")
	if len(v.Current.Rows) != 8*3+3 || v.Current.Files != 5 {
		t.Fatalf("after a load during compaction: %d rows in %d files, want 27 in 5", len(v.Current.Rows), v.Current.Files)
	}

	// Two compactions of the same new files: the second to commit finds
	// its inputs gone.
	for _, h := range []int32{baseHour, baseHour + 1} {
		for o := int64(100); o < 106; o += 3 {
			f := writeSmall(t, c.FS, "t", 1, o+int64(h-baseHour)*10, o+int64(h-baseHour)*10+3, h)
			if _, _, err := c.Append(Append{Dir: "t", Schema: smallSchema, Files: []NewFile{f}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := countParquet(t, root)
	var other *CompactResult
	c.beforeRewrite = func() {
		if other != nil {
			return
		}
		o := *c
		o.beforeRewrite = nil
		var err error
		if other, err = o.CompactTable(context.Background(), "t", Compact{Hours: []int32{baseHour + 1}}); err != nil {
			t.Error(err)
		}
	}
	_, err = c.CompactTable(context.Background(), "t", Compact{})
	if !errors.Is(err, ErrFilesGone) {
		t.Fatalf("a compaction whose inputs another replaced: %v, want ErrFilesGone", err)
	}
	if other == nil || other.Rewritten != 3 { // two new files and the first compaction's

		t.Fatalf("the other compaction: %+v", other)
	}
	// The loser's outputs are gone; the winner's one file was added.
	if n := countParquet(t, root); n != before+1 {
		t.Fatalf("%d Parquet files, want %d: the failed compaction left its files", n, before+1)
	}
	v = scan(t, root, "t")
	if len(v.Current.Rows) != 27+12 {
		t.Fatalf("%d rows after the failed compaction, want %d", len(v.Current.Rows), 27+12)
	}
}

// An overwrite by offsets (a backfill's) after a compaction merged the
// files of those offsets with others: the merged files are rewritten
// without the offsets, the new file adds them, and every offset is read
// once; the snapshot before it still reads the old files.
func TestOverwriteAfterCompaction(t *testing.T) {
	t.Parallel()
	c, root := localCatalog(t)
	smallTable(t, c, "t", 8, 3, 4) // partition 0: offsets 0-11, in files of 3 alternating between two hours
	res, err := c.CompactTable(context.Background(), "t", Compact{})
	if err != nil || res.Written != 4 {
		t.Fatalf("compaction: %+v, %v", res, err)
	}
	// The backfill reloads offsets 3-8 of partition 0: they span both
	// hours' compacted files, which also hold 0-2 and 9-11.
	a := writeTagged(t, c.FS, "t", 0, 3, 6, baseHour+1, ".bbackfill")
	b := writeTagged(t, c.FS, "t", 0, 6, 9, baseHour, ".bbackfill")
	_, snap, err := c.Rewrite(Rewrite{Dir: "t", Operation: "overwrite", Add: []NewFile{a, b},
		Overwrite: &OffsetFilter{Topic: "t", Partition: 0, From: 3, To: 9}})
	if err != nil {
		t.Fatal(err)
	}
	if s := snap.Summary; s["deleted-data-files"] != "2" || s["added-data-files"] != "4" || s["total-records"] != "24" || s["deleted-records"] != "12" {
		t.Fatalf("overwrite summary: %v", s)
	}
	v := scan(t, root, "t", res.Snapshot.ID)
	wantRows(t, "after the overwrite", v.Current, 2, 12)
	wantRows(t, "before it, by time travel", v.At[strconv.FormatInt(res.Snapshot.ID, 10)], 2, 12)
	if v.Operations[len(v.Operations)-1] != "overwrite" {
		t.Fatalf("operations: %v", v.Operations)
	}
	// Scan (lake query's read path) reads what pyiceberg read.
	cur, err := c.Load("t")
	if err != nil {
		t.Fatal(err)
	}
	var got [][2]int64
	err = c.Scan(context.Background(), cur.Metadata.Current(), func(_ string, rec arrow.Record) error {
		ps := rec.Column(rec.Schema().FieldIndices("_partition")[0]).(*array.Int32)
		os := rec.Column(rec.Schema().FieldIndices("_offset")[0]).(*array.Int64)
		for i := range int(rec.NumRows()) {
			got = append(got, [2]int64{int64(ps.Value(i)), os.Value(i)})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i][0] < got[j][0] || got[i][0] == got[j][0] && got[i][1] < got[j][1] })
	wantRows(t, "Scan", scanRows{Rows: got}, 2, 12)
}

// BenchmarkCompact is compaction's rate on a local disk: a table of 1,000
// small files (5 rows each, 10 appends) rewritten into 4, reading,
// writing and committing included.
func BenchmarkCompact(b *testing.B) {
	var files, secs float64
	for b.Loop() {
		b.StopTimer()
		fs, err := fsys.Open(b.TempDir(), fsys.Options{})
		if err != nil {
			b.Fatal(err)
		}
		c := &Catalog{FS: fs}
		smallTable(b, c, "t", 1000, 5, 100)
		b.StartTimer()
		res, err := c.CompactTable(context.Background(), "t", Compact{})
		if err != nil {
			b.Fatal(err)
		}
		files += float64(res.Rewritten)
		secs += res.Seconds
	}
	b.ReportMetric(files/secs, "files/s")
}

// BenchmarkRewriteCommit is the latency of one replace commit that merges
// the manifests of a table of 100 appends of 10 files (reading 100
// manifests, writing one with 1,000 entries).
func BenchmarkRewriteCommit(b *testing.B) {
	fs, err := fsys.Open(b.TempDir(), fsys.Options{})
	if err != nil {
		b.Fatal(err)
	}
	c := &Catalog{FS: fs}
	for i := range 100 {
		files := make([]NewFile, 10)
		for j := range files {
			files[j] = NewFile{Path: fmt.Sprintf("t/data/%d-%d.parquet", i, j), Records: 1000, Bytes: 1 << 20, Hour: int32(490000 + j)}
		}
		if _, _, err := c.Append(Append{Dir: "t", Schema: testSchema(), TimeColumn: "_event_time", Files: files}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, _, err := c.Rewrite(Rewrite{Dir: "t", Operation: "replace"}); err != nil {
			b.Fatal(err)
		}
	}
}

// Appends merge the manifests once there are commit.manifest.min-count-to-merge
// of them (100 by default; 4 here): the list stays short without a
// maintenance job, and every file is still read once.
func TestAppendMergesManifests(t *testing.T) {
	t.Parallel()
	c, root := localCatalog(t)
	s, last, _, err := Evolve(smallSchema, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("t", s, last, "_event_time", map[string]string{PropMergeMinCount: "4"}); err != nil {
		t.Fatal(err)
	}
	most := 0
	for i := range 10 {
		f := writeSmall(t, c.FS, "t", 0, int64(i)*3, int64(i)*3+3, baseHour)
		tbl, snap, err := c.Append(Append{Dir: "t", Schema: smallSchema, Files: []NewFile{f}})
		if err != nil {
			t.Fatal(err)
		}
		mfs, err := c.Manifests(snap)
		if err != nil {
			t.Fatal(err)
		}
		most = max(most, len(mfs))
		if snap.Summary["operation"] != "append" || snap.Summary["total-data-files"] != strconv.Itoa(i+1) || tbl.Metadata.Current().ID != snap.ID {
			t.Fatalf("append %d: %v", i, snap.Summary)
		}
	}
	if most > 4 {
		t.Fatalf("the manifest list reached %d manifests, want at most 4", most)
	}
	v := scan(t, root, "t")
	wantRows(t, "after merging appends", v.Current, 1, 30)
}

// Column statistics: each file's manifest entry has value and null counts
// and bounds by field id, from its Parquet footer, kept through a
// compaction (whose files get their own); pyiceberg prunes by them.
func TestColumnStats(t *testing.T) {
	t.Parallel()
	c, root := localCatalog(t)
	smallTable(t, c, "t", 8, 3, 8) // each file: 3 offsets of one partition
	tbl, err := c.Load("t")
	if err != nil {
		t.Fatal(err)
	}
	live, err := c.LiveFiles(tbl.Metadata.Current())
	if err != nil {
		t.Fatal(err)
	}
	off, _ := tbl.Metadata.CurrentSchema().Field("_offset")
	v, _ := tbl.Metadata.CurrentSchema().Field("v")
	for _, e := range live {
		_, _, first, last, _ := OffsetRange(path.Base(e.File.Path))
		lo, hi := bound(e.File.LowerBounds, off.ID), bound(e.File.UpperBounds, off.ID)
		if lo == nil || hi == nil || int64(binary.LittleEndian.Uint64(lo)) != first || int64(binary.LittleEndian.Uint64(hi)) != last {
			t.Fatalf("%s: _offset bounds %x-%x, want %d-%d", e.File.Path, lo, hi, first, last)
		}
		if s := bound(e.File.LowerBounds, v.ID); !strings.HasPrefix(string(s), "event-") {
			t.Fatalf("%s: string bound %q", e.File.Path, s)
		}
	}
	// Offsets 0-2 of both partitions: 2 of the 8 files.
	view := scanArgs(t, root, "t", "filter=_offset < 3")
	if view.Filtered.Files != 2 || view.Filtered.Rows != 6 {
		t.Fatalf("pyiceberg plans %d files (%d rows) for _offset < 3, want 2 (6)", view.Filtered.Files, view.Filtered.Rows)
	}
}

func bound(kbs *[]KB, id int) []byte {
	if kbs == nil {
		return nil
	}
	for _, kb := range *kbs {
		if int(kb.Key) == id {
			return kb.Value
		}
	}
	return nil
}

// countingFS counts the reads of a compaction's prefetch.
type countingFS struct {
	FS
	mu    sync.Mutex
	reads int
}

func (f *countingFS) ReadFile(name string) ([]byte, error) {
	f.mu.Lock()
	f.reads++
	f.mu.Unlock()
	return f.FS.ReadFile(name)
}

// Compaction's read-ahead is bounded by bytes, not only by file count
// (review 4): with a budget of 2.5 files and a reader that takes nothing,
// only 2 files are read; each one handed over and released lets one more
// in.
func TestPrefetchBytes(t *testing.T) {
	t.Parallel()
	c, _ := localCatalog(t)
	var g []Entry
	var size int64
	for i := range 12 {
		f := writeSmall(t, c.FS, "t", 0, int64(10*i), int64(10*i+10), baseHour)
		size = max(size, f.Bytes)
		g = append(g, Entry{File: DataFile{Path: c.Location(f.Path), SizeBytes: f.Bytes}})
	}
	cfs := &countingFS{FS: c.FS}
	cc := &Catalog{FS: cfs, prefetchBytes: size * 5 / 2}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := cc.prefetch(ctx, g)
	reads := func() int {
		time.Sleep(200 * time.Millisecond) // what a read ahead would do, it has done by then
		cfs.mu.Lock()
		defer cfs.mu.Unlock()
		return cfs.reads
	}
	if n := reads(); n != 2 {
		t.Fatalf("%d files read ahead with a budget of 2.5 files, want 2", n)
	}
	f := <-in
	if f.err != nil {
		t.Fatal(f.err)
	}
	if n := reads(); n != 2 {
		t.Fatalf("%d files read while the first is still held, want 2", n)
	}
	f.release()
	if n := reads(); n != 3 {
		t.Fatalf("%d files read after the first was released, want 3", n)
	}
	for range 11 {
		f := <-in
		if f.err != nil || len(f.b) == 0 {
			t.Fatalf("a prefetched file: %v", f.err)
		}
		f.release()
	}
}
