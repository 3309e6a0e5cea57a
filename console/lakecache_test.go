package console

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestLakeCache: concurrent Pipeline views read the lake once and share
// it, and a manifest over the bound is not read (review 10).
func TestLakeCache(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("_errors/t/a.json", []byte("{}\n"))
	write(lakePlans+"/big.json", []byte(`{"version":1,"run":"big","job":"j","kind":"load","units":[{"index":0,"topic":"t","partition":0,"from":0,"to":1}]}`))
	write(lakeRuns+"/big/"+lakeSuccess, nil)
	write(lakeRuns+"/big/manifest.json", []byte(`{"files":[`+strings.Repeat(" ", lakeMaxPlanSize)+`]}`))
	l, err := openLake("file://" + dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.fs.Close()
	var wg sync.WaitGroup
	views := make([]lakeView, 8)
	for i := range views {
		wg.Add(1)
		go func() { defer wg.Done(); views[i] = l.cachedView() }()
	}
	wg.Wait()
	if l.cache.reads != 1 {
		t.Errorf("8 concurrent views read the lake %d times, want 1", l.cache.reads)
	}
	for i, v := range views {
		if len(v.Errors) != 1 || v.Errors[0].Path != "_errors/t/a.json" {
			t.Fatalf("view %d: errors %+v", i, v.Errors)
		}
	}
	if r := views[0].Runs; len(r) != 1 || !strings.Contains(r[0].Err, "more than the console reads") {
		t.Errorf("a manifest over %d bytes: runs %+v", lakeMaxPlanSize, r)
	}
	// Within lakeCacheFor, a new file waits for the next read.
	write("_errors/t/b.json", []byte("{}\n"))
	if v := l.cachedView(); len(v.Errors) != 1 || l.cache.reads != 1 {
		t.Errorf("a view within %v read the lake again", lakeCacheFor)
	}
}
