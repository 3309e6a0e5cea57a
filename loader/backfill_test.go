package loader_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// A backfill reloads a range and replaces the files that held it, with the
// same names; every other file is left untouched, and the lake still holds
// each offset once.
func TestLoadBackfill(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "events", 2)
	var want produced
	produce(t, b.Addr(), "events", 0, 20_000, 0, &want)
	dir := t.TempDir()
	target := "file://" + dir
	common := []string{"-b", b.Addr(), "--schema", activitySchema, "--time-field", "timestamp", "--target", target, "--max-records-per-unit", "2500"}
	mustLoad(t, append([]string{"--topics", "events"}, common...)...)

	before := map[string]time.Time{}
	walk(dir, func(p string, info os.FileInfo) { before[p] = info.ModTime() })
	time.Sleep(20 * time.Millisecond) // so that a rewrite shows in the mtime

	out, err := tributary(t, nil, append([]string{"load", "backfill", "--topic", "events", "--partition", "1", "--from", "3000", "--to", "4000"}, common...)...)
	if err != nil {
		t.Fatalf("backfill: %v\n%s", err, out)
	}
	rewritten, untouched := 0, 0
	walk(dir, func(p string, info os.FileInfo) {
		old, existed := before[p]
		switch {
		case !existed:
			t.Errorf("the backfill wrote a new name %s; want the names of the files it replaces", p)
		case strings.Contains(filepath.Base(p), "events+1+2500+") && !info.ModTime().Equal(old):
			rewritten++
		case info.ModTime().Equal(old):
			untouched++
		default:
			t.Errorf("%s changed, but it holds none of the backfilled offsets", p)
		}
	})
	if rewritten == 0 || untouched == 0 {
		t.Fatalf("rewritten %d, untouched %d: want some of each", rewritten, untouched)
	}
	checkExactlyOnce(t, readLake(t, target, "events"), &want, testbroker.HighWatermarks(t, b.Addr(), "events"))

	// Beyond the committed offsets is not a backfill's business.
	out, err = tributary(t, nil, append([]string{"load", "backfill", "--topic", "events", "--partition", "1", "--from", "9000", "--to", "99999"}, common...)...)
	if err == nil || !strings.Contains(out, "--to at most") {
		t.Fatalf("a backfill past the committed offset: %v\n%s", err, out)
	}
}

func walk(dir string, fn func(string, os.FileInfo)) {
	filepath.Walk(filepath.Join(dir, "events"), func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") {
			fn(p, info)
		}
		return nil
	})
}
