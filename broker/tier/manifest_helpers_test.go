package tier_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/broker/tier"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// newestVersion is the path of the partition's newest manifest version
// under a file:// root.
func newestVersion(t testing.TB, root string) string {
	t.Helper()
	fs, err := fsys.Open("file://"+root, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	dir := tier.RemoteDir("t", "id", 0)
	vs, err := remotelog.Versions(fs, dir)
	if err != nil || len(vs) == 0 {
		t.Fatalf("no manifest version in %s (%v)", dir, err)
	}
	return filepath.Join(root, dir, remotelog.ManifestName(vs[len(vs)-1].Seq))
}

// breakManifest makes the newest manifest version unreadable (a
// directory in its place), as HDFS trouble would.
func breakManifest(t testing.TB, root string) {
	t.Helper()
	man := newestVersion(t, root)
	if err := os.Rename(man, man+".saved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(man, 0o755); err != nil {
		t.Fatal(err)
	}
}
