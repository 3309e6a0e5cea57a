package jobs

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/loader"
)

// apiServer records a Kubernetes API server's side of the executor: it
// checks each request as the batch/v1 Job API would (path, token, the
// Job's shape), then answers with the Job's status in turn.
type apiServer struct {
	t        *testing.T
	mu       sync.Mutex
	job      map[string]any
	created  int
	gets     int
	deleted  bool
	conflict bool   // answer the create with 409, as for a Job that exists
	final    string // the condition the second GET reports: Complete or Failed
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer sa-token" {
		http.Error(w, `{"kind":"Status","code":401}`, http.StatusUnauthorized)
		a.t.Errorf("%s %s without the service account's token", r.Method, r.URL.Path)
		return
	}
	const base = "/apis/batch/v1/namespaces/loads/jobs"
	switch {
	case r.Method == http.MethodPost && r.URL.Path == base:
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &a.job); err != nil {
			a.t.Errorf("the Job is not JSON: %v", err)
		}
		a.created++
		if a.conflict {
			http.Error(w, `{"kind":"Status","reason":"AlreadyExists","code":409}`, http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write(b)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, base+"/"):
		a.gets++
		st := `{"active":2}`
		if a.gets > 1 {
			st = `{"conditions":[{"type":"` + a.final + `","status":"True","message":"index 1 failed 4 times"}]}`
		}
		w.Write([]byte(`{"kind":"Job","status":` + st + `}`))
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, base+"/"):
		a.deleted = true
		w.Write([]byte(`{"kind":"Status","status":"Success"}`))
	default:
		a.t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	}
}

// The kubernetes executor renders deploy/k8s/loader-job.yaml for a plan
// and follows the Job: its parallelism and completions are the plan's
// workers, each pod's arguments the plan; a completed Job succeeds, a
// failed one fails the attempt and is deleted (so the retry starts fresh
// pods), and a Job that exists already (a resumed run) is followed, not
// created twice.
func TestKubernetesExecutor(t *testing.T) {
	t.Parallel()
	token := filepath.Join(t.TempDir(), "token")
	os.WriteFile(token, []byte("sa-token\n"), 0o600)
	p := &loader.Plan{Run: "clicks-20261202T070000.1Z-abc123", Job: "clicks", Units: make([]loader.Unit, 5)}
	for _, tc := range []struct {
		final    string
		conflict bool
		fails    bool
	}{{"Complete", false, false}, {"Failed", false, true}, {"Complete", true, false}} {
		a := &apiServer{t: t, final: tc.final, conflict: tc.conflict}
		srv := httptest.NewServer(a)
		var apps []Application
		e := &k8sExecutor{
			cfg: Kubernetes{APIServer: srv.URL, Namespace: "loads", TokenFile: token, Template: "../deploy/k8s/loader-job.yaml",
				Image: "registry.example/tributary:1.2", ServiceAccount: "loader", CPU: "2", Memory: "3Gi"},
			target: "hdfs://nn:8020/lake", client: srv.Client(), log: slog.New(slog.DiscardHandler),
			record: func(app Application) { apps = append(apps, app) }, poll: 10 * time.Millisecond,
		}
		err := e.execute(context.Background(), p, 3)
		srv.Close()
		if (err != nil) != tc.fails {
			t.Fatalf("%s: execute: %v", tc.final, err)
		}
		if a.created != 1 || a.deleted != tc.fails {
			t.Errorf("%s: %d creates, deleted %v", tc.final, a.created, a.deleted)
		}
		spec := a.job["spec"].(map[string]any)
		pod := spec["template"].(map[string]any)["spec"].(map[string]any)
		c := pod["containers"].([]any)[0].(map[string]any)
		args, _ := json.Marshal(c["args"])
		meta := a.job["metadata"].(map[string]any)
		if a.job["apiVersion"] != "batch/v1" || a.job["kind"] != "Job" || meta["name"] != "tl-clicks-20261202t070000-1z-abc123" ||
			spec["completionMode"] != "Indexed" || spec["completions"] != 3.0 || spec["parallelism"] != 3.0 ||
			spec["backoffLimitPerIndex"] == nil || pod["restartPolicy"] != "Never" {
			t.Errorf("the Job: %v", a.job)
		}
		if string(args) != `["load","worker","--plan=hdfs://nn:8020/lake/_tributary/plans/`+p.Run+`.json","--count=3"]` {
			t.Errorf("the pods' args: %s", args)
		}
		req := c["resources"].(map[string]any)["requests"].(map[string]any)
		if c["image"] != "registry.example/tributary:1.2" || pod["serviceAccountName"] != "loader" || req["cpu"] != "2" || req["memory"] != "3Gi" {
			t.Errorf("image %v, service account %v, requests %v", c["image"], pod["serviceAccountName"], req)
		}
		if len(apps) == 0 || apps[len(apps)-1].ID != "job/loads/tl-clicks-20261202t070000-1z-abc123" {
			t.Errorf("the run record's Job: %+v", apps)
		}
	}
}

// A job name or target with YAML in it stays one string of the Job: it
// cannot add a container, a volume or a field the template does not have.
func TestKubernetesRenderHostile(t *testing.T) {
	t.Parallel()
	hostile := "x\"]\n          securityContext: {privileged: true}\n#"
	e := &k8sExecutor{cfg: Kubernetes{Template: "../deploy/k8s/loader-job.yaml"}, target: "hdfs://nn/lake" + hostile}
	p := &loader.Plan{Run: "r-1", Job: "clicks\nspec: {hostPID: true}"}
	job, err := e.render(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	spec := job["spec"].(map[string]any)
	c := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	args := c["args"].([]any)
	labels := job["metadata"].(map[string]any)["labels"].(map[string]any)
	if len(args) != 4 || args[2] != "--plan=hdfs://nn/lake"+hostile+"/_tributary/plans/r-1.json" || c["securityContext"].(map[string]any)["privileged"] != nil ||
		labels["tributary.io/job"] != p.Job || spec["hostPID"] != nil || spec["parallelism"] != 2 || spec["completions"] != 2 {
		t.Errorf("the rendered Job: %v", job)
	}
}
