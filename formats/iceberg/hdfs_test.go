package iceberg

import (
	"context"
	"io"
	iofs "io/fs"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

// testhdfs.Main stops the HDFS TestCompactHDFS started, if it did.
func TestMain(m *testing.M) { testhdfs.Main(m) }

// Compaction of 1,000 small files on HDFS, the long form only (make
// test-long, LONG=loader): the rate docs/PERFORMANCE.md reports, and the
// table's rows and files before and after. (TestMaintenanceJob in jobs/
// runs compaction, expiry and orphan removal on HDFS in make test; pyiceberg
// reads that table.)
func TestCompactHDFS(t *testing.T) {
	if os.Getenv("TRIBUTARY_TEST_LONG") == "" {
		t.Skip("the long form only: TRIBUTARY_TEST_LONG=1 (make test-long LONG=loader)")
	}
	fs, err := fsys.Open("hdfs://"+testhdfs.Get(t).NameNode+testhdfs.Dir(t), fsys.Options{User: testhdfs.DefaultUser})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	c := &Catalog{FS: fs}
	t0 := time.Now()
	smallTable(t, c, "t", 1000, 5, 100)
	t.Logf("1,000 files and 10 appends on HDFS in %v", time.Since(t0))
	t0 = time.Now()
	_, snap, err := c.RewriteManifests("t")
	if err != nil || snap == nil {
		t.Fatal(snap, err)
	}
	t.Logf("merged 10 manifests of 1,000 entries in %v", time.Since(t0))
	res, err := c.CompactTable(context.Background(), "t", Compact{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compacted %d files (%d rows) into %d on HDFS in %.2fs: %.0f files/s", res.Rewritten, res.Rows, res.Written, res.Seconds, float64(res.Rewritten)/res.Seconds)
	live, err := c.LiveFiles(res.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, e := range live {
		rows += e.File.Records
	}
	if res.Rewritten != 1000 || len(live) != 4 || rows != 5000 {
		t.Fatalf("after compaction: %d files rewritten, %d live with %d rows; want 1000, 4, 5000", res.Rewritten, len(live), rows)
	}
	later := *c
	later.Now = func() time.Time { return time.Now().Add(time.Hour) }
	t0 = time.Now()
	exp, err := later.ExpireSnapshots("t", Expire{MaxAge: time.Minute, MinKeep: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("expired %d snapshots, deleted %d files in %v", len(exp.Expired), len(exp.Deleted), time.Since(t0))
	if len(exp.Deleted) < 1000 {
		t.Fatalf("the expiry deleted %d files, want the 1,000 small ones and their manifests", len(exp.Deleted))
	}
}

// BenchmarkAppendHDFS is a load run's table commit on the test HDFS: an
// append of 4 new Parquet files (their footers read for the column
// statistics) to a table of a growing history, as the loader commits one
// per run and topic.
//
//	go test -run '^$' -bench BenchmarkAppendHDFS -benchtime 20x ./formats/iceberg/
func BenchmarkAppendHDFS(b *testing.B) {
	fs, err := fsys.Open("hdfs://"+testhdfs.Get(b).NameNode+testhdfs.Dir(b), fsys.Options{User: testhdfs.DefaultUser})
	if err != nil {
		b.Fatal(err)
	}
	defer fs.Close()
	c := &Catalog{FS: fs}
	var files []NewFile
	for i := range 4 {
		files = append(files, writeSmall(b, fs, "t", int32(i%2), int64(i*100), int64(i*100+100), baseHour))
	}
	if _, _, err := c.Append(Append{Dir: "t", Schema: smallSchema, TimeColumn: "_event_time", Files: files}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := c.Append(Append{Dir: "t", Schema: smallSchema, TimeColumn: "_event_time", Files: files}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendHDFSSteps is BenchmarkAppendHDFS with the time of each
// file system call summed by kind (a Create counts until its Close): where
// a commit's time goes on HDFS.
//
//	go test -run '^$' -bench BenchmarkAppendHDFSSteps -benchtime 20x -v ./formats/iceberg/
func BenchmarkAppendHDFSSteps(b *testing.B) {
	fs, err := fsys.Open("hdfs://"+testhdfs.Get(b).NameNode+testhdfs.Dir(b), fsys.Options{User: testhdfs.DefaultUser})
	if err != nil {
		b.Fatal(err)
	}
	defer fs.Close()
	tf := &timedFS{FS: fs, total: map[string]time.Duration{}, n: map[string]int{}}
	c := &Catalog{FS: tf}
	var files []NewFile
	for i := range 4 {
		files = append(files, writeSmall(b, fs, "t", int32(i%2), int64(i*100), int64(i*100+100), baseHour))
	}
	if _, _, err := c.Append(Append{Dir: "t", Schema: smallSchema, TimeColumn: "_event_time", Files: files}); err != nil {
		b.Fatal(err)
	}
	tf.reset()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := c.Append(Append{Dir: "t", Schema: smallSchema, TimeColumn: "_event_time", Files: files}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	tf.mu.Lock()
	defer tf.mu.Unlock()
	for k, d := range tf.total {
		b.Logf("%-16s %3d calls/commit %6.1f ms/commit (summed, concurrent calls overlap)", k, tf.n[k]/b.N, float64(d.Microseconds())/1000/float64(b.N))
	}
}

type timedFS struct {
	FS
	mu    sync.Mutex
	total map[string]time.Duration
	n     map[string]int
}

func (f *timedFS) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total, f.n = map[string]time.Duration{}, map[string]int{}
}

func (f *timedFS) add(k string, t0 time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total[k] += time.Since(t0)
	f.n[k]++
}

func (f *timedFS) ReadFile(name string) ([]byte, error) {
	defer f.add("ReadFile", time.Now())
	return f.FS.ReadFile(name)
}

func (f *timedFS) Open(name string) (io.ReadCloser, error) {
	defer f.add("Open(footer)", time.Now())
	return f.FS.Open(name)
}

func (f *timedFS) Stat(name string) (iofs.FileInfo, error) {
	defer f.add("Stat", time.Now())
	return f.FS.Stat(name)
}

func (f *timedFS) WriteFileAtomic(name string, b []byte) error {
	defer f.add("WriteFileAtomic", time.Now())
	return f.FS.WriteFileAtomic(name, b)
}

func (f *timedFS) RenameNoReplace(a, b string) error {
	defer f.add("RenameNoReplace", time.Now())
	return f.FS.RenameNoReplace(a, b)
}

func (f *timedFS) Create(name string) (io.WriteCloser, error) {
	t0 := time.Now()
	w, err := f.FS.Create(name)
	if err != nil {
		f.add("Create", t0)
		return nil, err
	}
	return &timedWriter{w, f, t0}, nil
}

type timedWriter struct {
	io.WriteCloser
	f  *timedFS
	t0 time.Time
}

func (w *timedWriter) Close() error {
	defer w.f.add("Create..Close", w.t0)
	return w.WriteCloser.Close()
}
