package remotelog

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/internal/fsys"
)

// TestStaleFirstVersionRefused: a writer that read no manifest and
// stalled while versions 1 to 4 were written and 1 and 2 removed as
// superseded finds version 1's name free again. Its write counts for
// nothing (readers take version 4), so Commit must say so and remove
// it, although there is no version 2 to compare times with.
func TestStaleFirstVersionRefused(t *testing.T) {
	root := t.TempDir()
	fs, err := fsys.Open("file://"+root, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	const dir = "t-id/0"
	same := func(m *Manifest) (*Manifest, error) {
		if m == nil {
			m = &Manifest{Topic: "t", TopicID: "id", LogStartOffset: -1}
		}
		return m, nil
	}
	var base *Manifest
	for range 4 {
		if base, err = Commit(fs, dir, base, 0, same); err != nil {
			t.Fatal(err)
		}
	}
	for _, seq := range []int64{1, 2} {
		if err := os.Remove(filepath.Join(root, dir, ManifestName(seq))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Commit(fs, dir, nil, 0, same); !errors.Is(err, ErrFenced) {
		t.Fatalf("a first version written after versions 1 and 2 were removed and 4 exists: %v, want ErrFenced", err)
	}
	if _, err := os.Stat(filepath.Join(root, dir, ManifestName(1))); !os.IsNotExist(err) {
		t.Errorf("the stale version 1 is still there (%v)", err)
	}
	latest, err := ReadLatest(fs, dir)
	if err != nil || latest.Sequence != 4 {
		t.Fatalf("newest %+v (%v), want version 4", latest, err)
	}
}
