package jobs

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/loader"
)

// Review M3: a submission removes the staging dirs (keytab and all) of
// applications the RM does not know or reports ended, once they are old
// enough not to be a submission under way; a running application's dir
// and a fresh one are kept.
func TestYARNSweepsStaleAppDirs(t *testing.T) {
	t.Parallel()
	c := testhdfs.Get(t)
	base := testhdfs.Dir(t)
	root := "hdfs://" + c.NameNode + base
	opts := fsys.Options{User: testhdfs.DefaultUser}
	fs, err := fsys.Open(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	raw, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{c.NameNode}, User: testhdfs.DefaultUser})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	old := time.Now().Add(-time.Hour)
	for _, d := range []struct {
		id  string
		old bool
	}{{"application_1_9999", true}, {"application_1_9998", true}, {"application_1_0002", true}, {"application_1_0001", false}} {
		if err := fs.WriteFileAtomic(yarnAppName+"/"+d.id+"/"+yarnKeytab, []byte("keys")); err != nil {
			t.Fatal(err)
		}
		if d.old {
			if err := raw.Chtimes(base+"/"+yarnAppName+"/"+d.id, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/new-application"):
			io.WriteString(w, `{"application-id":"application_1_0003"}`)
		case strings.HasSuffix(r.URL.Path, "/application_1_0002"):
			io.WriteString(w, `{"app":{"state":"RUNNING"}}`)
		case strings.HasSuffix(r.URL.Path, "/application_1_9998"):
			io.WriteString(w, `{"app":{"state":"KILLED"}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer rm.Close()
	e := &yarnExecutor{cfg: YARN{ResourceManager: rm.URL, AMJar: "/nonexistent/dshell.jar", Staging: root, MaxContainers: 1},
		target: root, opts: opts, hdfsUser: testhdfs.DefaultUser, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		record: func(Application) {}}
	// Fails at the missing jar, after the sweep.
	e.execute(context.Background(), &loader.Plan{Run: "r1", Job: "j", Units: make([]loader.Unit, 1)}, 1)
	for id, want := range map[string]bool{"application_1_9999": false, "application_1_9998": false, "application_1_0002": true, "application_1_0001": true} {
		_, err := fs.Stat(yarnAppName + "/" + id)
		if got := err == nil; got != want {
			t.Errorf("%s: kept %v, want %v (%v)", id, got, want, err)
		}
	}
}
