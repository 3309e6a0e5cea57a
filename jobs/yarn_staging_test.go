package jobs

import (
	"context"
	"io"
	iofs "io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/loader"
)

// A staging root that the group or others can write is refused before
// anything is uploaded or submitted, with its path and mode in the error;
// a missing one or a 0755 one is taken.
func TestYARNStagingRootWritable(t *testing.T) {
	t.Parallel()
	c := testhdfs.Get(t)
	root := "hdfs://" + c.NameNode + testhdfs.Dir(t)
	opts := fsys.Options{User: testhdfs.DefaultUser}
	fs, err := fsys.Open(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	var submits atomic.Int32
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/new-application") {
			io.WriteString(w, `{"application-id":"application_1_0001"}`)
			return
		}
		submits.Add(1)
		http.Error(w, "unexpected", http.StatusInternalServerError)
	}))
	defer rm.Close()
	plan := &loader.Plan{Run: "r1", Job: "j", Units: make([]loader.Unit, 2)}
	for _, tc := range []struct {
		dir  string
		perm iofs.FileMode
		want string
	}{
		{"open", 0o777, "has mode drwxrwxrwx (0777): it is group- or other-writable"},
		{"group", 0o775, "has mode drwxrwxr-x (0775): it is group- or other-writable"},
		{"other", 0o703, "has mode drwx----wx (0703)"},
	} {
		if err := fsys.MkdirAll(fs, tc.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Chmod(fs, tc.dir, tc.perm); err != nil {
			t.Fatal(err)
		}
		staging := root + "/" + tc.dir
		e := &yarnExecutor{cfg: YARN{ResourceManager: rm.URL, AMJar: "/nonexistent/dshell.jar", Staging: staging, MaxContainers: 1},
			target: root, opts: opts, hdfsUser: testhdfs.DefaultUser, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			record: func(Application) {}}
		err := e.execute(context.Background(), plan, 1)
		if err == nil || !strings.Contains(err.Error(), "the staging dir "+staging+" "+tc.want) {
			t.Fatalf("%s: got %v, want the staging dir's path and %q", tc.dir, err, tc.want)
		}
		if ents, _ := fs.ReadDir(tc.dir); len(ents) != 0 {
			t.Fatalf("%s: %d entries staged into a refused dir", tc.dir, len(ents))
		}
	}
	if n := submits.Load(); n != 0 {
		t.Fatalf("%d submissions with a writable staging dir", n)
	}

	// Missing: created 0755 by fsys.Open, and taken; 0755: taken.
	for _, tc := range []struct {
		dir  string
		make bool
		want iofs.FileMode
	}{{"fresh/yarn", false, 0o755}, {"shared", true, 0o755}} {
		if tc.make {
			fsys.MkdirAll(fs, tc.dir, 0o755)
			fsys.Chmod(fs, tc.dir, 0o755)
		}
		sub, err := fsys.Open(root+"/"+tc.dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkStagingRoot(sub, root+"/"+tc.dir); err != nil {
			t.Fatalf("%s: %v", tc.dir, err)
		}
		sub.Close()
		if _, perm, err := fsys.Owner(fs, tc.dir); err != nil || perm != tc.want {
			t.Fatalf("%s: mode %v (%v), want %v", tc.dir, perm, err, tc.want)
		}
	}
}
