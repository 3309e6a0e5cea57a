package loader_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

func TestMain(m *testing.M) { testhdfs.Main(m) }

// sized is a test's record count: the count its issue names under `make
// test-long` (TRIBUTARY_TEST_LONG=1), a fifth of it in `make test`, where
// the race-built loader writes about 2,000 records a second and the full
// counts took most of the package's 12 minutes. Unit sizes scale with it,
// so that a run has as many units, and crash points as many steps, in both.
func sized(full int) int {
	if os.Getenv("TRIBUTARY_TEST_LONG") != "" {
		return full
	}
	return full / 5
}

// activitySchema is the standard activity schema the loads use.
var activitySchema = filepath.Join(testbroker.RepoRoot(), "formats", "schema", "activity.yaml")

// event is what a test produced and expects to read back.
type event struct {
	MessageID string `json:"messageId"`
	Event     string `json:"event"`
	UserID    string `json:"userId"`
	Timestamp string `json:"timestamp"`
	Context   struct {
		Page struct {
			Path string `json:"path"`
		} `json:"page"`
	} `json:"context"`
}

// produced are the events of a test by messageId, and how many bad records
// went with them.
type produced struct {
	events map[string]event
	bad    int
}

// produce sends activity events number from to from+n-1 to topic with the
// tributary binary (one line, one record). Every badEvery-th record (0:
// none) is malformed instead, alternately not JSON and a schema violation.
func produce(t *testing.T, addr, topic string, from, n, badEvery int, into *produced) {
	t.Helper()
	if into.events == nil {
		into.events = map[string]event{}
	}
	var in bytes.Buffer
	var line []byte
	for i := from; i < from+n; i++ {
		if badEvery > 0 && i%badEvery == badEvery-1 {
			into.bad++
			if (i/badEvery)%2 == 0 {
				fmt.Fprintf(&in, "not json %d {\n", i)
			} else {
				fmt.Fprintf(&in, `{"type":"track","messageId":"bad-%d","timestamp":"yesterday-ish"}`+"\n", i)
			}
			continue
		}
		line = decode.ActivityEvent(line[:0], i)
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		into.events[e.MessageID] = e
		in.Write(line)
		in.WriteByte('\n')
	}
	cmd := exec.Command(testbroker.Binary(t), "produce", topic, "-b", addr)
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tributary produce: %v\n%s", err, out)
	}
}

// tributary runs the binary with args and returns its output; env adds
// variables.
func tributary(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testbroker.Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustLoad(t *testing.T, args ...string) string {
	t.Helper()
	out, err := tributary(t, nil, append([]string{"load", "run"}, args...)...)
	if err != nil {
		t.Fatalf("load run %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// lakeRow is one row as pyarrow read it back.
type lakeRow struct {
	File      string `json:"file"`
	Partition int32  `json:"_partition"`
	Offset    int64  `json:"_offset"`
	MessageID string `json:"messageId"`
	Event     string `json:"event"`
	UserID    string `json:"userId"`
	Timestamp int64  `json:"timestamp"`
	Context   struct {
		Page struct {
			Path string `json:"path"`
		} `json:"page"`
	} `json:"context"`
}

// badLine is one line of an _errors file.
type badLine struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Reason    string `json:"reason"`
	Field     string `json:"field"`
	Value     string `json:"value"`
}

// lake is what a target holds for a topic, read by a second implementation
// (pyarrow) from a local copy.
type lake struct {
	dir  string // the local copy
	rows []lakeRow
	bad  []badLine
}

// readLake copies the topic's files (and its _errors) out of the target
// and reads every Parquet file with pyarrow.
func readLake(t *testing.T, target, topic string) *lake {
	t.Helper()
	return readLakeWith(t, target, topic, fsys.Options{User: testhdfs.DefaultUser})
}

// readLakeWith is readLake with the target opened with opts.
func readLakeWith(t *testing.T, target, topic string, opts fsys.Options) *lake {
	t.Helper()
	fs, err := fsys.Open(target, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	l := &lake{dir: t.TempDir()}
	copyTree(t, fs, topic, l.dir)
	copyTree(t, fs, "_errors/"+topic, filepath.Join(l.dir, "_errors"))
	py := testbroker.Python(t, "pyarrow")
	script := filepath.Join(testbroker.RepoRoot(), "loader", "testdata", "read_lake.py")
	cmd := exec.Command(py, script, filepath.Join(l.dir, topic), "_partition,_offset,messageId,event,userId,timestamp,context")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("read_lake.py: %v\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r lakeRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		l.rows = append(l.rows, r)
	}
	errFiles, _ := filepath.Glob(filepath.Join(l.dir, "_errors", "*.jsonl"))
	for _, f := range errFiles {
		b, _ := os.ReadFile(f)
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var e badLine
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			l.bad = append(l.bad, e)
		}
	}
	return l
}

func copyTree(t *testing.T, fs fsys.FS, dir, local string) {
	t.Helper()
	ents, err := fs.ReadDir(dir)
	if fsys.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(local, filepath.FromSlash(path.Base(dir)))
	if dir == "_errors/"+path.Base(dir) {
		dst = local
	}
	os.MkdirAll(dst, 0o755)
	for _, e := range ents {
		p := path.Join(dir, e.Name())
		if e.IsDir() {
			copyTree(t, fs, p, dst)
			continue
		}
		b, err := fs.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkExactlyOnce checks that the lake holds every offset below the high
// watermarks exactly once, as a row or as a bad record, that every row
// equals the event produced, and that every file sits in the hour of its
// rows' event times.
func checkExactlyOnce(t *testing.T, l *lake, want *produced, hwm map[int32]int64) {
	t.Helper()
	seen := map[[2]int64]string{}
	ids := map[string]bool{}
	for _, r := range l.rows {
		k := [2]int64{int64(r.Partition), r.Offset}
		if prev, dup := seen[k]; dup {
			t.Fatalf("partition %d offset %d is in the lake twice: %s and %s", r.Partition, r.Offset, prev, r.File)
		}
		seen[k] = r.File
		if ids[r.MessageID] {
			t.Fatalf("messageId %s is in the lake twice", r.MessageID)
		}
		ids[r.MessageID] = true
		e, ok := want.events[r.MessageID]
		if !ok {
			t.Fatalf("row %+v was never produced", r)
		}
		ts, _ := time.Parse(time.RFC3339Nano, e.Timestamp)
		if r.Event != e.Event || r.UserID != e.UserID || r.Timestamp != ts.UnixMilli() || r.Context.Page.Path != e.Context.Page.Path {
			t.Fatalf("row %+v differs from the event produced %+v", r, e)
		}
		if dir := ts.UTC().Format("dt=2006-01-02/hr=15"); path.Dir(filepath.ToSlash(r.File)) != dir {
			t.Fatalf("row %s (event time %s) is in %s, want %s", r.MessageID, e.Timestamp, r.File, dir)
		}
	}
	for _, b := range l.bad {
		k := [2]int64{int64(b.Partition), b.Offset}
		if prev, dup := seen[k]; dup {
			t.Fatalf("partition %d offset %d is both in %s and in _errors", b.Partition, b.Offset, prev)
		}
		seen[k] = "_errors"
		if b.Reason == "" {
			t.Fatalf("bad record without a reason: %+v", b)
		}
	}
	if len(ids) != len(want.events) {
		t.Fatalf("the lake has %d of the %d events produced", len(ids), len(want.events))
	}
	if len(l.bad) != want.bad {
		t.Fatalf("_errors has %d records, %d bad ones were produced", len(l.bad), want.bad)
	}
	var total int64
	for p, end := range hwm {
		for o := int64(0); o < end; o++ {
			if _, ok := seen[[2]int64{int64(p), o}]; !ok {
				t.Fatalf("partition %d offset %d (high watermark %d) is missing", p, o, end)
			}
		}
		total += end
	}
	if int64(len(seen)) != total {
		t.Fatalf("the lake has %d offsets, the topic %d", len(seen), total)
	}
}

// files lists the Parquet files under a local lake copy.
func files(t *testing.T, dir string) []string {
	var out []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}
