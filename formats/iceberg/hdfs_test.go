package iceberg

import (
	"context"
	"os"
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
