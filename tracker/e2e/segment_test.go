package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

const howToGetNode = "install Node.js 20+ with npm, then run scripts/node-deps.sh " +
	"(Segment's libraries from npm into ~/.cache/tributary), or set TRIBUTARY_NODE_MODULES to its node_modules"

// nodeModules returns node and the node_modules directory of
// scripts/node-deps.sh, running the script unless TRIBUTARY_NODE_MODULES
// names the directory.
func nodeModules(t *testing.T) (node, modules string) {
	t.Helper()
	node, err := lookPath("TRIBUTARY_NODE", "node", "nodejs")
	testbroker.Require(t, err == nil, "node", howToGetNode)
	if modules = os.Getenv("TRIBUTARY_NODE_MODULES"); modules == "" {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", filepath.Join(testbroker.RepoRoot(), "scripts", "node-deps.sh"))
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		testbroker.Require(t, err == nil, "the Node packages of scripts/node-deps.sh", fmt.Sprintf("%s (scripts/node-deps.sh: %v: %s)", howToGetNode, err, stderr.String()))
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		modules = strings.TrimSpace(lines[len(lines)-1])
	}
	_, err = os.Stat(filepath.Join(modules, "@segment", "analytics-node"))
	testbroker.Require(t, err == nil, "@segment/analytics-node in "+modules, howToGetNode)
	return node, modules
}

// line is what testdata/segment.js prints: a call it made (Call and
// Params), or the body of a request a library sent (Wire).
type line struct {
	Library string         `json:"library"`
	Call    string         `json:"call"`
	Params  map[string]any `json:"params"`
	Wire    *struct {
		Batch []map[string]any `json:"batch"`
	} `json:"wire"`
}

// Issue 9, test 2: Segment's Node libraries, pointed at the tracker, send
// track, identify, page, group and alias calls, alone and batched; every
// one is in the topic once, as it was sent.
func TestSegmentLibraries(t *testing.T) {
	node, modules := nodeModules(t)
	s := startStack(t)
	run := fmt.Sprintf("run%d", time.Now().UnixNano())

	cmd := exec.Command(node, filepath.Join("testdata", "segment.js"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "TRACKER_URL="+s.URL, "WRITE_KEY="+writeKey, "RUN="+run)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	started := time.Now()
	select {
	case err := <-done:
		t.Logf("node testdata/segment.js ran %v", time.Since(started).Round(time.Millisecond))
		if err != nil {
			t.Fatalf("node testdata/segment.js: %v\n%s", err, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("node testdata/segment.js still running after 2 minutes\n%s", stderr.String())
	}

	var (
		calls    []line
		wire     = map[string]map[string]any{} // by messageId
		requests = map[string]int{}            // by library
		biggest  = map[string]int{}            // events in the largest request, by library
	)
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("segment.js printed %q: %v", sc.Text(), err)
		}
		if l.Wire != nil {
			requests[l.Library]++
			biggest[l.Library] = max(biggest[l.Library], len(l.Wire.Batch))
			for _, ev := range l.Wire.Batch {
				wire[fmt.Sprint(ev["messageId"])] = ev
			}
			continue
		}
		calls = append(calls, l)
	}
	if len(calls) != 18 {
		t.Fatalf("segment.js made %d calls, want 9 per library:\n%s", len(calls), stdout.String())
	}

	libraryName := map[string]string{"analytics-node-next": "@segment/analytics-node", "analytics-node": "analytics-node"}
	for _, c := range calls {
		id := c.Params["messageId"].(string)
		what := fmt.Sprintf("%s %s %s", c.Library, c.Call, id)
		r := s.records.wait(t, 30*time.Second, what, func(r record) bool { return r.Value["messageId"] == id })
		v := r.Value
		if v["type"] != c.Call {
			t.Errorf("%s: type %v", what, v["type"])
		}
		// What the caller passed, and all the library put on the wire, is
		// in the record as it was; the tracker only adds to it, and moves the
		// sender's timestamp to originalTimestamp.
		want := maps.Clone(c.Params)
		delete(want, "timestamp")
		if !contains(v, want) {
			t.Errorf("%s: the record\n  %s\ndoes not hold the call\n  %s", what, r.Raw, js(want))
		}
		w, ok := wire[id]
		if !ok {
			t.Errorf("%s: not seen on the wire", what)
			continue
		}
		w = maps.Clone(w)
		w["originalTimestamp"] = w["timestamp"]
		delete(w, "timestamp")
		if !contains(v, w) {
			t.Errorf("%s: the record\n  %s\ndoes not hold the event as sent\n  %s", what, r.Raw, js(w))
		}
		for _, k := range []string{"properties", "traits"} {
			if !reflect.DeepEqual(v[k], w[k]) {
				t.Errorf("%s: %s is %s, sent %s", what, k, js(v[k]), js(w[k]))
			}
		}
		// The sender's clock is kept; timestamp is corrected for its skew.
		if v["originalTimestamp"] != c.Params["timestamp"] {
			t.Errorf("%s: originalTimestamp %v, sent timestamp %v", what, v["originalTimestamp"], c.Params["timestamp"])
		}
		if ts, err := time.Parse(time.RFC3339Nano, fmt.Sprint(v["timestamp"])); err != nil || ts.IsZero() {
			t.Errorf("%s: timestamp %v", what, v["timestamp"])
		}
		if lib := dig(v, "context", "library", "name"); lib != libraryName[c.Library] {
			t.Errorf("%s: context.library.name %v", what, lib)
		}
		if v["channel"] != "server" || dig(v, "context", "ip") != "127.0.0.0" {
			t.Errorf("%s: channel %v, context.ip %v", what, v["channel"], dig(v, "context", "ip"))
		}
		if want := firstNonEmpty(c.Params["userId"], c.Params["anonymousId"]); r.Key != want {
			t.Errorf("%s: key %q, want %q", what, r.Key, want)
		}
		if n := s.records.count(func(o record) bool { return o.Value["messageId"] == id }); n != 1 {
			t.Errorf("%s: %d times in the topic", what, n)
		}
	}

	// Each library batched: one request carried the seven calls made
	// together (analytics-node sends the first call of a client at once,
	// the six others in one batch). The tracker accepted every request.
	total := 0
	for lib, n := range requests {
		total += n
		if biggest[lib] < 6 {
			t.Errorf("%s sent at most %d events per request: no batch", lib, biggest[lib])
		}
	}
	if n := s.metric(t, "tributary_tracker_requests_total", `endpoint="/v1/batch"`, `code="200"`); n != float64(total) {
		t.Errorf("%v accepted /v1/batch requests, the libraries sent %d", n, total)
	}
	if n := s.metric(t, "tributary_tracker_events_accepted_total"); n != 18 {
		t.Errorf("%v events accepted, want 18", n)
	}
}

// contains reports whether got holds want: equal values, and for objects,
// every key of want with a value that got's holds.
func contains(got, want any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return reflect.DeepEqual(got, want)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, w := range wm {
		g, ok := gm[k]
		if !ok || !contains(g, w) {
			return false
		}
	}
	return true
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
