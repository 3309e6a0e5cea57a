package jobs

// The kubernetes executor: a plan's units as one Kubernetes Indexed Job,
// submitted through the API server over plain HTTPS (no client-go: two
// endpoints of batch/v1 are all it needs).
//
// The Job is deploy/k8s/loader-job.yaml (or the job's own template) with
// ${TRIBUTARY_K8S_JOB}, ${TRIBUTARY_PLAN}, ${TRIBUTARY_JOB} and
// ${TRIBUTARY_PARALLELISM} filled in, as deploy/k8s/run-plan.sh does, and
// the image, service account and resources of the job's `kubernetes:`
// block set on it. Pod i runs units i, i+n, ... (JOB_COMPLETION_INDEX);
// a failed pod is retried by Kubernetes (backoffLimitPerIndex in the
// template), and a unit it left half done is redone from scratch.
//
// The Job's name comes from the run: a scheduler that resumes the run
// finds the Job (409 AlreadyExists) and follows it instead of starting a
// second one. A Job that fails is deleted, so the next attempt starts
// fresh pods, which skip the units already done.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tributary-io/tributary/loader"
)

// ExecKubernetes runs a plan's units as one Kubernetes Indexed Job.
const ExecKubernetes = "kubernetes"

// In-cluster defaults, as client-go's rest.InClusterConfig reads them.
const (
	k8sServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// Kubernetes is a job's `kubernetes:` block.
type Kubernetes struct {
	// APIServer is https://host:port; default the in-cluster address
	// (KUBERNETES_SERVICE_HOST/PORT).
	APIServer string `yaml:"api_server" json:"apiServer,omitempty"`
	// Namespace of the Job; default the service account's namespace.
	Namespace string `yaml:"namespace" json:"namespace,omitempty"`
	// TokenFile and CAFile default to the pod's service account's.
	TokenFile string `yaml:"token_file" json:"tokenFile,omitempty"`
	CAFile    string `yaml:"ca_file" json:"caFile,omitempty"`
	// Template is the Indexed Job (deploy/k8s/loader-job.yaml).
	Template       string `yaml:"template" json:"template"`
	Image          string `yaml:"image" json:"image,omitempty"`
	ServiceAccount string `yaml:"service_account" json:"serviceAccount,omitempty"`
	CPU            string `yaml:"cpu" json:"cpu,omitempty"`
	Memory         string `yaml:"memory" json:"memory,omitempty"`
}

func (k *Kubernetes) validate() error {
	if k.Template == "" {
		return fmt.Errorf("kubernetes.template: want the Indexed Job template's path (deploy/k8s/loader-job.yaml)")
	}
	if k.APIServer != "" && !strings.HasPrefix(k.APIServer, "https://") && !strings.HasPrefix(k.APIServer, "http://") {
		return fmt.Errorf("kubernetes.api_server %q: want https://host:port", k.APIServer)
	}
	return nil
}

type k8sExecutor struct {
	cfg    Kubernetes
	target string
	client *http.Client
	log    *slog.Logger
	record func(Application)
	poll   time.Duration
}

// k8sJobName is a DNS-1123 name of at most 63 characters, unique per run
// (run-plan.sh's rule).
func k8sJobName(run string) string {
	s := strings.NewReplacer("_", "-", ".", "-").Replace(strings.ToLower(run))
	s = regexp.MustCompile(`[^a-z0-9-]`).ReplaceAllString(s, "")
	if len(s) > 48 {
		s = s[len(s)-48:]
	}
	return "tl-" + s
}

// fillTemplate expands ${VAR} in every string value of a parsed template.
// A value that is the parallelism and nothing else becomes a number, as
// completions: and parallelism: want one.
func fillTemplate(v any, vars map[string]string, n int) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = fillTemplate(e, vars, n)
		}
	case []any:
		for i, e := range x {
			x[i] = fillTemplate(e, vars, n)
		}
	case string:
		if x == "${TRIBUTARY_PARALLELISM}" || x == "$TRIBUTARY_PARALLELISM" {
			return n
		}
		return os.Expand(x, func(k string) string {
			if v, ok := vars[k]; ok {
				return v
			}
			return "${" + k + "}"
		})
	}
	return v
}

// render fills the template in for a plan of n pods.
func (e *k8sExecutor) render(p *loader.Plan, n int) (map[string]any, error) {
	text, err := os.ReadFile(e.cfg.Template)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: the Job template: %w", err)
	}
	vars := map[string]string{
		"TRIBUTARY_K8S_JOB":     k8sJobName(p.Run),
		"TRIBUTARY_PLAN":        loader.PlanURI(e.target, p.Run),
		"TRIBUTARY_JOB":         p.Job,
		"TRIBUTARY_PARALLELISM": fmt.Sprint(n),
	}
	// The values go into the parsed template's strings, never into its
	// text: a job name or target with a quote, a colon or a line break
	// stays one string value and cannot add fields to the Job.
	var job map[string]any
	if err := yaml.Unmarshal(text, &job); err != nil {
		return nil, fmt.Errorf("kubernetes: the Job template %s: %w", e.cfg.Template, err)
	}
	job, _ = fillTemplate(job, vars, n).(map[string]any)
	spec, _ := job["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pod, _ := tmpl["spec"].(map[string]any)
	ctrs, _ := pod["containers"].([]any)
	if job["kind"] != "Job" || spec == nil || pod == nil || len(ctrs) == 0 || spec["completionMode"] != "Indexed" {
		return nil, fmt.Errorf("kubernetes: the template %s is not an Indexed Job with a container", e.cfg.Template)
	}
	if e.cfg.ServiceAccount != "" {
		pod["serviceAccountName"] = e.cfg.ServiceAccount
	}
	c, _ := ctrs[0].(map[string]any)
	if e.cfg.Image != "" {
		c["image"] = e.cfg.Image
	}
	if e.cfg.CPU != "" || e.cfg.Memory != "" {
		res, _ := c["resources"].(map[string]any)
		if res == nil {
			res = map[string]any{}
			c["resources"] = res
		}
		req, _ := res["requests"].(map[string]any)
		if req == nil {
			req = map[string]any{}
			res["requests"] = req
		}
		if e.cfg.CPU != "" {
			req["cpu"] = e.cfg.CPU
		}
		if e.cfg.Memory != "" {
			req["memory"] = e.cfg.Memory
		}
	}
	return job, nil
}

func (e *k8sExecutor) execute(ctx context.Context, p *loader.Plan, parallelism int) error {
	n := max(1, min(parallelism, len(p.Units)))
	job, err := e.render(p, n)
	if err != nil {
		return err
	}
	if e.poll == 0 {
		e.poll = 2 * time.Second
	}
	api, ns, token, err := e.endpoint()
	if err != nil {
		return err
	}
	name := k8sJobName(p.Run)
	jobs := api + "/apis/batch/v1/namespaces/" + ns + "/jobs"
	body, _ := json.Marshal(job)
	start := time.Now()
	status, resp, err := e.call(ctx, http.MethodPost, jobs, token, body)
	switch {
	case err != nil:
		return err
	case status == http.StatusConflict:
		e.log.Info("Kubernetes Job exists (a resumed run): following it", "job", name)
	case status/100 != 2:
		return fmt.Errorf("kubernetes: creating Job %s/%s: %d: %s", ns, name, status, resp)
	}
	app := Application{ID: "job/" + ns + "/" + name, State: "SUBMITTED", Containers: n, Started: start.UTC(), Submitted: time.Now().UTC()}
	e.record(app)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(e.poll):
		}
		status, resp, err := e.call(ctx, http.MethodGet, jobs+"/"+name, token, nil)
		if err != nil || status/100 != 2 {
			e.log.Warn("reading the Kubernetes Job", "job", name, "status", status, "err", err)
			continue
		}
		var st struct {
			Status struct {
				Active     int `json:"active"`
				Conditions []struct {
					Type    string `json:"type"`
					Status  string `json:"status"`
					Message string `json:"message"`
				} `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal(resp, &st); err != nil {
			return fmt.Errorf("kubernetes: Job %s: %w", name, err)
		}
		if st.Status.Active > 0 && app.FirstContainer.IsZero() {
			app.FirstContainer, app.State = time.Now().UTC(), "RUNNING"
			e.record(app)
		}
		for _, c := range st.Status.Conditions {
			if c.Status != "True" {
				continue
			}
			switch c.Type {
			case "Complete":
				app.State, app.FinalStatus, app.Ended = "FINISHED", "SUCCEEDED", time.Now().UTC()
				e.record(app)
				return nil
			case "Failed":
				app.State, app.FinalStatus, app.Diagnostics, app.Ended = "FINISHED", "FAILED", c.Message, time.Now().UTC()
				e.record(app)
				// Deleted, so that the next attempt starts fresh pods.
				e.call(context.Background(), http.MethodDelete, jobs+"/"+name, token, []byte(`{"propagationPolicy":"Background"}`))
				return fmt.Errorf("kubernetes: Job %s/%s failed (the plan stays open; the next attempt resumes it): %s", ns, name, c.Message)
			}
		}
	}
}

// endpoint is the API server, the namespace and the bearer token.
func (e *k8sExecutor) endpoint() (api, ns, token string, err error) {
	api = e.cfg.APIServer
	if api == "" {
		h, p := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
		if h == "" {
			return "", "", "", fmt.Errorf("kubernetes: no api_server, and not in a pod (KUBERNETES_SERVICE_HOST unset)")
		}
		api = "https://" + h + ":" + p
	}
	ns = e.cfg.Namespace
	if ns == "" {
		b, _ := os.ReadFile(k8sServiceAccountDir + "/namespace")
		ns = strings.TrimSpace(string(b))
	}
	if ns == "" {
		ns = "default"
	}
	tf := e.cfg.TokenFile
	if tf == "" {
		tf = k8sServiceAccountDir + "/token"
	}
	// Read at each run: projected tokens are rotated.
	if b, rerr := os.ReadFile(tf); rerr == nil {
		token = strings.TrimSpace(string(b))
	} else if e.cfg.TokenFile != "" {
		return "", "", "", fmt.Errorf("kubernetes: token_file: %w", rerr)
	}
	if e.client == nil {
		e.client = &http.Client{Timeout: 30 * time.Second}
		ca := e.cfg.CAFile
		if ca == "" {
			ca = k8sServiceAccountDir + "/ca.crt"
		}
		if pem, rerr := os.ReadFile(ca); rerr == nil {
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(pem)
			e.client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
		}
	}
	return strings.TrimRight(api, "/"), ns, token, nil
}

func (e *k8sExecutor) call(ctx context.Context, method, u, token string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("kubernetes: the API server does not answer: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, nil
}
