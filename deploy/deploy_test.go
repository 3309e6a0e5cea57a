package deploy

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// files are the deploy/ files with one of the extensions, by path.
func files(t *testing.T, exts ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		for _, e := range exts {
			if !d.IsDir() && strings.HasSuffix(path, e) {
				out = append(out, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// yamlDocs parses every document of a YAML file.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return docs
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

func TestYAMLAndJSONParse(t *testing.T) {
	for _, path := range files(t, ".yaml", ".yml") {
		docs := yamlDocs(t, path)
		if len(docs) == 0 {
			t.Errorf("%s: no YAML document", path)
		}
		if strings.HasPrefix(path, "k8s/") {
			for i, d := range docs {
				if d["apiVersion"] == nil || d["kind"] == nil || dig(d, "metadata", "name") == nil {
					t.Errorf("%s: document %d lacks apiVersion, kind or metadata.name", path, i+1)
				}
			}
		}
	}
	for _, path := range files(t, ".json") {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// dig walks nested maps.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// commandLine is one way deploy/ starts the binary: its arguments (the
// binary itself left out), its TRIBUTARY_* environment, and the config
// files it names, mapped to files the test can read.
type commandLine struct {
	where string
	args  []string
	env   []string
}

var cli struct {
	once    sync.Once
	known   map[string]bool // command paths, "tracker", "jobs serve"
	checked map[string]bool // command paths with --check-config
}

// commandInfo learns from the binary's help which commands exist and
// which can check their configuration.
func commandInfo(t *testing.T, bin string, path []string) (exists, checks bool) {
	key := strings.Join(path, " ")
	out, err := exec.Command(bin, append(path, "--help")...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tributary "+key) {
		return false, false
	}
	return true, strings.Contains(string(out), "--check-config")
}

// TestCommandLinesAndConfigs runs every command line of the systemd units,
// the compose file and the Kubernetes manifests, with every example config
// (deploy/config, and the ConfigMaps), through the real loader: the daemon
// with --check-config, which loads the file, the environment and the flags
// as a start does and refuses an unknown key or flag, or, for a daemon
// without it, --help, which still refuses an unknown flag.
func TestCommandLinesAndConfigs(t *testing.T) {
	bin := testbroker.Binary(t)
	configs := t.TempDir()
	// /etc/tributary/<name> in units and containers is a deploy/config
	// example or a ConfigMap's file.
	for _, p := range files(t, ".yaml") {
		if strings.HasPrefix(p, "config/") {
			copyFile(t, p, filepath.Join(configs, filepath.Base(p)))
		}
	}
	var lines []commandLine
	lines = append(lines, systemdLines(t)...)
	lines = append(lines, composeLines(t)...)
	lines = append(lines, k8sLines(t, configs)...)
	// Every example config, with the daemon its name says.
	for _, p := range files(t, ".yaml") {
		if strings.HasPrefix(p, "config/") {
			daemon := strings.TrimSuffix(filepath.Base(p), ".yaml")
			args := []string{daemon, "--config=/etc/tributary/" + filepath.Base(p)}
			if daemon == "jobs" {
				args = []string{"jobs", "serve", args[1]}
			}
			lines = append(lines, commandLine{where: p, args: args})
		}
	}
	if len(lines) < 10 {
		t.Fatalf("found only %d command lines in deploy/", len(lines))
	}
	for _, l := range lines {
		var path []string
		for _, a := range l.args {
			if strings.HasPrefix(a, "-") {
				break
			}
			path = append(path, a)
		}
		exists, checks := commandInfo(t, bin, path)
		if !exists {
			t.Errorf("%s: no command %q", l.where, strings.Join(path, " "))
			continue
		}
		args := make([]string, len(l.args))
		for i, a := range l.args {
			args[i] = strings.ReplaceAll(a, "/etc/tributary/", configs+"/")
		}
		if checks {
			args = append(args, "--check-config")
		} else {
			args = append(args, "--help")
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(cleanEnv(), l.env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: tributary %s: %v\n%s", l.where, strings.Join(args, " "), err, out)
		}
	}
}

// cleanEnv is the test's environment without TRIBUTARY_* variables, which
// would change what a command line means.
func cleanEnv() []string {
	var out []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "TRIBUTARY_") {
			out = append(out, e)
		}
	}
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

const binPath = "/usr/local/bin/tributary"

func systemdLines(t *testing.T) []commandLine {
	var out []commandLine
	for _, p := range files(t, ".service") {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if !ok || !strings.HasPrefix(k, "ExecStart") {
				continue
			}
			f := strings.Fields(v)
			if len(f) == 0 || f[0] != binPath {
				t.Errorf("%s: %s runs %q, want %s", p, k, v, binPath)
				continue
			}
			out = append(out, commandLine{where: p + " " + k, args: f[1:]})
		}
	}
	return out
}

func composeLines(t *testing.T) []commandLine {
	var out []commandLine
	for _, p := range files(t, "docker-compose.yml") {
		docs := yamlDocs(t, p)
		if len(docs) != 1 {
			continue
		}
		services, _ := docs[0]["services"].(map[string]any)
		for name, svc := range services {
			if img, _ := dig(svc, "image").(string); !strings.HasPrefix(img, "tributary") {
				continue
			}
			var args []string
			for _, a := range dig(svc, "command").([]any) {
				args = append(args, fmt.Sprint(a))
			}
			var env []string
			if m, ok := dig(svc, "environment").(map[string]any); ok {
				for k, v := range m {
					env = append(env, k+"="+fmt.Sprint(v))
				}
			}
			out = append(out, commandLine{where: p + " " + name, args: args, env: env})
		}
	}
	if len(out) < 5 {
		t.Errorf("compose: %d tributary services, want 3 brokers, the tracker and jobs", len(out))
	}
	return out
}

var k8sVar = regexp.MustCompile(`\$\(([A-Z_]+)\)`)

// k8sLines are the containers' args and env; ConfigMap files are written to
// dir, where /etc/tributary points.
func k8sLines(t *testing.T, dir string) []commandLine {
	var out []commandLine
	for _, p := range files(t, ".yaml") {
		if !strings.HasPrefix(p, "k8s/") {
			continue
		}
		for _, d := range yamlDocs(t, p) {
			switch d["kind"] {
			case "ConfigMap":
				for name, v := range dig(d, "data").(map[string]any) {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(v.(string)), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			case "StatefulSet", "Deployment":
				for _, c := range dig(d, "spec", "template", "spec", "containers").([]any) {
					vars := map[string]string{}
					var env []string
					for _, e := range dig(c, "env").([]any) {
						name := dig(e, "name").(string)
						v, ok := dig(e, "value").(string)
						if !ok {
							v = "0" // from the downward API: a pod index, a name
						}
						vars[name] = v
						if strings.HasPrefix(name, "TRIBUTARY_") {
							env = append(env, name+"="+v)
						}
					}
					var args []string
					for _, a := range dig(c, "args").([]any) {
						args = append(args, k8sVar.ReplaceAllStringFunc(a.(string), func(m string) string {
							return vars[k8sVar.FindStringSubmatch(m)[1]]
						}))
					}
					out = append(out, commandLine{where: fmt.Sprintf("%s %s/%s", p, d["kind"], dig(d, "metadata", "name")), args: args, env: env})
				}
			}
		}
	}
	return out
}

// The units pass systemd-analyze verify: no unknown key, no bad value, no
// missing binary. It prints warnings and still exits 0, so any output fails.
func TestSystemdUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	testbroker.Require(t, err == nil, "systemd-analyze", "apt-get install systemd (Debian)")
	bin := testbroker.Binary(t)
	dir := t.TempDir()
	units := files(t, ".service")
	if len(units) < 3 {
		t.Fatalf("%d units in deploy/systemd, want broker, tracker and jobs", len(units))
	}
	var paths []string
	for _, p := range units {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Restart=", "LimitNOFILE=", "NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=", "TimeoutStopSec="} {
			if !bytes.Contains(data, []byte("\n"+want)) {
				t.Errorf("%s lacks %s", p, want)
			}
		}
		// verify checks that the binary exists: point it at the test's.
		data = bytes.ReplaceAll(data, []byte(binPath), []byte(bin))
		out := filepath.Join(dir, filepath.Base(p))
		if err := os.WriteFile(out, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, out)
	}
	out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, paths...)...).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// The build stage's go build runs as a plain shell command and makes a
// static binary, which the distroless runtime stage needs; the runtime stage
// runs as non-root and probes itself with a command that exists.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("docker/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	// Join continuation lines, then split into instructions by stage.
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	var stage string
	var build, healthcheck, user, runtimeBase string
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			stage = f[len(f)-1]
			if len(f) == 2 {
				runtimeBase, stage = f[1], "runtime"
			}
		case "RUN":
			if stage == "build" && strings.Contains(line, "go build") {
				build = strings.TrimSpace(line[strings.Index(line, "RUN")+3:])
			}
		case "HEALTHCHECK":
			healthcheck = line
		case "USER":
			if stage == "runtime" {
				user = f[1]
			}
		}
	}
	if build == "" {
		t.Fatal("no RUN ... go build in the stage named build")
	}
	if !strings.Contains(runtimeBase, "distroless") || user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
		t.Errorf("runtime stage: base %q, user %q; want distroless, non-root", runtimeBase, user)
	}

	out := t.TempDir()
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(build, "/out/", out+"/"))
	cmd.Dir = testbroker.RepoRoot()
	cmd.Env = append(os.Environ(), "VERSION=v0.0.0-dockerfile-test")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the build stage's command: %s\n%v\n%s", build, err, b)
	}
	bin := filepath.Join(out, "tributary")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary is dynamically linked; distroless/static has no libc")
		}
	}
	f.Close()
	if v, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.Contains(string(v), "v0.0.0-dockerfile-test") {
		t.Errorf("tributary version: %v %s; want the VERSION build argument", err, v)
	}

	// The HEALTHCHECK runs the binary: the command it names must exist.
	hc := regexp.MustCompile(`CMD \[(.*)\]`).FindStringSubmatch(healthcheck)
	if hc == nil {
		t.Fatalf("HEALTHCHECK %q: want the exec form CMD [...]", healthcheck)
	}
	var args []string
	if err := json.Unmarshal([]byte("["+hc[1]+"]"), &args); err != nil || len(args) < 2 || args[0] != binPath {
		t.Fatalf("HEALTHCHECK %q: want CMD [%q, ...]", healthcheck, binPath)
	}
	if b, err := exec.Command(bin, append(args[1:], "--help")...).CombinedOutput(); err != nil {
		t.Errorf("HEALTHCHECK's command %v: %v\n%s", args[1:], err, b)
	}
}

// metricName finds the metric names in a PromQL expression.
var metricName = regexp.MustCompile(`\b(tributary_[a-z_]+|process_[a-z_]+|go_[a-z_]+)\b`)

// dashboardMetrics is every metric name a dashboard's queries use.
func dashboardMetrics(t *testing.T, path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d any
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, sub := range v {
				if s, ok := sub.(string); ok && (k == "expr" || k == "query" || k == "definition") {
					for _, m := range metricName.FindAllString(s, -1) {
						seen[m] = true
					}
				}
				walk(sub)
			}
		case []any:
			for _, sub := range v {
				walk(sub)
			}
		}
	}
	walk(d)
	var out []string
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// The dashboards name only metrics that a live broker and tracker serve,
// after the traffic they are made to show.
func TestGrafanaDashboardsUseServedMetrics(t *testing.T) {
	b := testbroker.Start(t)
	trafficThroughBroker(t, b.Addr())
	trackerAdmin := startTracker(t, b.Addr())

	served := map[string]map[string]bool{
		"grafana/broker.json":  scrapeNames(t, "http://"+b.AdminAddr()+"/metrics"),
		"grafana/tracker.json": scrapeNames(t, "http://"+trackerAdmin+"/metrics"),
	}
	for _, p := range files(t, ".json") {
		names, ok := served[p]
		if !ok {
			t.Errorf("%s: no daemon to check it against", p)
			continue
		}
		used := dashboardMetrics(t, p)
		if len(used) < 5 {
			t.Errorf("%s names only %d metrics", p, len(used))
		}
		for _, m := range used {
			if !names[m] {
				t.Errorf("%s uses %s, which /metrics does not serve", p, m)
			}
		}
	}
}

// scrapeNames is the set of metric names a /metrics page has.
func scrapeNames(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		names[name] = true
	}
	return names
}

// trafficThroughBroker produces, consumes in a group and commits.
func trafficThroughBroker(t *testing.T, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("dash"),
		kgo.ConsumerGroup("dash-group"), kgo.ConsumeTopics("dash"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "dash"); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "event %d", i)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for got := 0; got < 50; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
}

// startTracker runs the tracker against the broker, sends it an accepted
// and a rejected event, and returns its admin address.
func startTracker(t *testing.T, bootstrap string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var log bytes.Buffer
	var mu sync.Mutex
	cmd := exec.Command(testbroker.Binary(t), "tracker", "--write-key", "dash-key", "--listen", addr,
		"--admin-listen", "127.0.0.1:0", "--bootstrap", bootstrap, "--spool-dir", filepath.Join(t.TempDir(), "spool"))
	cmd.Env = cleanEnv()
	cmd.Stderr = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return log.Write(p) })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	logged := func() string { mu.Lock(); defer mu.Unlock(); return log.String() }
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logged(), "tracker ready"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("tracker not ready after 30s:\n%s", logged())
		}
	}
	post := func(body string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/track", strings.NewReader(body))
		req.SetBasicAuth("dash-key", "")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(`{"userId":"u1","event":"Signed Up"}`); code != 200 {
		t.Fatalf("a valid event: %d", code)
	}
	if code := post(`{"userId":"u1"}`); code != 400 {
		t.Fatalf("an event without a name: %d, want 400", code)
	}
	admin := testbroker.LoggedAdminAddr(logged())
	if admin == "" {
		t.Fatalf("the tracker logged no admin address:\n%s", logged())
	}
	return admin
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
