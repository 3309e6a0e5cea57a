package jobs

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/loader"
)

// The binary goes back to the cache before DistributedShell's AM deletes
// the application's directory: a fake RM (and NodeManager) plays the
// application, and deletes the directory the moment it first reports
// FINISHED, as the AM does right after it unregisters. With the workers'
// NodeManager saying RUNNING, the copy is in bin/<sha256>/ afterwards and
// the record says so; with it saying LOCALIZING throughout, it is not
// given back early (the workers could still need it), and the AM's
// delete takes it.
func TestYARNBinaryGivenBackBeforeTheAMEnds(t *testing.T) {
	t.Parallel()
	c := testhdfs.Get(t)
	root := "hdfs://" + c.NameNode + testhdfs.Dir(t)
	opts := fsys.Options{User: testhdfs.DefaultUser}
	tmp := t.TempDir()
	bin, jar := filepath.Join(tmp, "tributary"), filepath.Join(tmp, "dshell.jar")
	data := make([]byte, 4096)
	rand.Read(data)
	os.WriteFile(bin, data, 0o755)
	os.WriteFile(jar, []byte("jar"), 0o644)
	info, err := binaryInfo(bin)
	if err != nil {
		t.Fatal(err)
	}
	for i, nmState := range []string{"RUNNING", "LOCALIZING"} {
		staging := fmt.Sprintf("%s/s%d", root, i)
		fs, err := fsys.Open(staging, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		appID := fmt.Sprintf("application_1_%04d", i+1)
		var mu sync.Mutex
		polls := 0
		var srv *httptest.Server
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			p := r.URL.Path
			reply := func(v any) { json.NewEncoder(w).Encode(v) }
			switch {
			case strings.HasSuffix(p, "/new-application"):
				reply(map[string]string{"application-id": appID})
			case p == "/ws/v1/cluster/apps" && r.Method == http.MethodPost:
				w.WriteHeader(http.StatusAccepted)
			case p == "/ws/v1/cluster/apps/"+appID:
				polls++
				state := "RUNNING"
				if polls > 4 {
					state = "FINISHED"
				}
				if polls == 5 {
					// The AM: unregistered, then its cleanup.
					if err := fs.RemoveAll(path.Join(yarnAppName, appID)); err != nil {
						t.Error(err)
					}
				}
				reply(map[string]any{"app": map[string]any{"state": state, "finalStatus": "SUCCEEDED", "runningContainers": 3}})
			case strings.HasSuffix(p, "/appattempts"):
				reply(map[string]any{"appAttempts": map[string]any{"appAttempt": []map[string]string{{"appAttemptId": "appattempt_1_0001_000001"}}}})
			case strings.HasSuffix(p, "/containers"):
				var cs []map[string]string
				for _, n := range []string{"000001", "000002", "000003"} {
					cs = append(cs, map[string]string{"containerId": "container_1_0001_01_" + n, "nodeHttpAddress": srv.URL})
				}
				reply(map[string]any{"container": cs})
			case strings.HasPrefix(p, "/ws/v1/node/containers/"):
				reply(map[string]any{"container": map[string]string{"id": path.Base(p), "state": nmState}})
			default:
				http.Error(w, "unexpected "+r.Method+" "+p, http.StatusNotFound)
			}
		}))
		defer srv.Close()
		var last Application
		e := &yarnExecutor{cfg: YARN{ResourceManager: srv.URL, AMJar: jar, Staging: staging, Binary: bin, MaxContainers: 2,
			ContainerMemoryMB: 256, ContainerVCores: 1, AMMemoryMB: 256},
			target: root, opts: opts, hdfsUser: testhdfs.DefaultUser, poll: 10 * time.Millisecond,
			log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
			record: func(a Application) { last = a }}
		plan := &loader.Plan{Run: "r1", Job: "j", Units: make([]loader.Unit, 2)}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.execute(ctx, plan, 2); err != nil {
			t.Fatalf("NodeManager says %s: %v", nmState, err)
		}
		_, statErr := fs.Stat(path.Join("bin", info.hash, appID))
		if nmState == "RUNNING" && (statErr != nil || !last.BinaryReturned) {
			t.Errorf("workers running: the binary was not given back before the AM deleted its dir (%v; record says returned %v)", statErr, last.BinaryReturned)
		}
		if nmState == "LOCALIZING" && (statErr == nil || last.BinaryReturned) {
			t.Errorf("workers still localizing: the binary was given back (record says returned %v)", last.BinaryReturned)
		}
	}
}
