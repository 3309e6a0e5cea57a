package jobs_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/internal/testyarn"
	"github.com/tributary-io/tributary/jobs"
)

// testyarn.Main stops the YARN of the yarn executor's tests, then HDFS.
func TestMain(m *testing.M) { testyarn.Main(m) }

var activitySchema = filepath.Join(testbroker.RepoRoot(), "formats", "schema", "activity.yaml")

// server is a `tributary jobs serve` process.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	mu     sync.Mutex
	log    bytes.Buffer
	addr   string
	done   chan struct{}
	client *jobs.Client
}

// serve starts `tributary jobs serve --config file` and waits for its API.
func serve(t *testing.T, file string, env ...string) *server {
	t.Helper()
	s := &server{t: t, done: make(chan struct{})}
	s.cmd = exec.Command(testbroker.Binary(t), "jobs", "serve", "--config", file, "--listen", "127.0.0.1:0",
		"--hdfs-user", testhdfs.DefaultUser, "--reload-interval", "300ms", "--log-level", "debug")
	s.cmd.Env = append(os.Environ(), env...)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if strings.Contains(line, "jobs API ready") {
				if _, rest, ok := strings.Cut(line, " addr="); ok {
					a, _, _ := strings.Cut(rest, " ")
					ready <- a
				}
			}
		}
		s.cmd.Wait()
		close(s.done)
	}()
	select {
	case s.addr = <-ready:
	case <-s.done:
		t.Fatalf("jobs serve exited:\n%s", s.Log())
	case <-time.After(60 * time.Second):
		s.cmd.Process.Kill()
		t.Fatalf("jobs serve not ready after 60s:\n%s", s.Log())
	}
	s.client = jobs.NewClient(s.addr)
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("jobs serve %s log:\n%s", s.addr, lastLines(s.Log(), 80))
		}
	})
	return s
}

func (s *server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

func (s *server) running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// stop ends the scheduler with SIGTERM and waits.
func (s *server) stop() {
	if !s.running() {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// kill ends it with SIGKILL.
func (s *server) kill() {
	s.cmd.Process.Kill()
	<-s.done
}

// waitDone waits for the process to end by itself (a crash point).
func (s *server) waitDone(d time.Duration) {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(d):
		s.t.Fatalf("jobs serve still running after %v", d)
	}
}

// writeConfig writes a jobs file.
func writeConfig(t *testing.T, file, text string) {
	t.Helper()
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it holds or the time is up.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// history reads a job's history straight from the target, oldest first.
func history(t *testing.T, target, job string) []*jobs.Record {
	t.Helper()
	fs := openTarget(t, target)
	defer fs.Close()
	recs, err := jobs.ReadHistory(fs, job, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(recs)-1; i < j; i, j = i+1, j-1 {
		recs[i], recs[j] = recs[j], recs[i]
	}
	return recs
}

func openTarget(t *testing.T, target string) fsys.FS {
	t.Helper()
	fs, err := fsys.Open(target, fsys.Options{User: testhdfs.DefaultUser})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func countOutcome(recs []*jobs.Record, outcome string) int {
	n := 0
	for _, r := range recs {
		if r.Outcome == outcome {
			n++
		}
	}
	return n
}

func hdfsTarget(t *testing.T) string { return "hdfs://" + testhdfs.Get(t).NameNode + testhdfs.Dir(t) }

// producer writes activity events to a topic with `tributary produce`.
type producer struct {
	t     *testing.T
	addr  string
	topic string
	next  int
}

func (p *producer) produce(n int) {
	p.t.Helper()
	var in bytes.Buffer
	var line []byte
	for i := p.next; i < p.next+n; i++ {
		line = decode.ActivityEvent(line[:0], i)
		in.Write(line)
		in.WriteByte('\n')
	}
	p.next += n
	cmd := exec.Command(testbroker.Binary(p.t), "produce", p.topic, "-b", p.addr)
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("tributary produce: %v\n%s", err, out)
	}
}

// row is one row of the lake as pyarrow read it.
type row struct {
	File      string `json:"file"`
	Partition int32  `json:"_partition"`
	Offset    int64  `json:"_offset"`
	MessageID string `json:"messageId"`
}

// readLake copies a topic's files out of the target and reads them all
// with pyarrow, a second Parquet implementation.
func readLake(t *testing.T, target, topic string) []row {
	t.Helper()
	return readLakeWith(t, target, topic, fsys.Options{User: testhdfs.DefaultUser})
}

// readLakeWith is readLake with the HDFS client's options (Kerberos).
func readLakeWith(t *testing.T, target, topic string, opts fsys.Options) []row {
	t.Helper()
	fs, err := fsys.Open(target, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	dir := t.TempDir()
	copyTree(t, fs, topic, filepath.Join(dir, topic))
	py := testbroker.Python(t, "pyarrow")
	script := filepath.Join(testbroker.RepoRoot(), "loader", "testdata", "read_lake.py")
	cmd := exec.Command(py, script, filepath.Join(dir, topic), "_partition,_offset,messageId")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("read_lake.py: %v\n%s", err, stderr.String())
	}
	var rows []row
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
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
	os.MkdirAll(local, 0o755)
	for _, e := range ents {
		p := path.Join(dir, e.Name())
		if e.IsDir() {
			copyTree(t, fs, p, filepath.Join(local, e.Name()))
			continue
		}
		b, err := fs.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(local, e.Name()), b, 0o644)
	}
}

// checkExactlyOnce checks that the rows hold every offset below the high
// watermarks once, and the messageIds the producer sent once each.
func checkExactlyOnce(t *testing.T, rows []row, hwm map[int32]int64, produced int) {
	t.Helper()
	seen := map[[2]int64]string{}
	ids := map[string]bool{}
	for _, r := range rows {
		k := [2]int64{int64(r.Partition), r.Offset}
		if prev, dup := seen[k]; dup {
			t.Fatalf("partition %d offset %d is in the lake twice: %s and %s", r.Partition, r.Offset, prev, r.File)
		}
		seen[k] = r.File
		if ids[r.MessageID] {
			t.Fatalf("messageId %s is in the lake twice", r.MessageID)
		}
		ids[r.MessageID] = true
	}
	var total int64
	for p, end := range hwm {
		for o := int64(0); o < end; o++ {
			if _, ok := seen[[2]int64{int64(p), o}]; !ok {
				t.Fatalf("partition %d offset %d (high watermark %d) is not in the lake", p, o, end)
			}
		}
		total += end
	}
	if int64(len(seen)) != total || len(ids) != produced {
		t.Fatalf("the lake has %d offsets and %d events; the topic %d offsets, %d produced", len(seen), len(ids), total, produced)
	}
}

// checkContiguous checks that each committed load of the history starts,
// per partition, where the previous one ended: no offset loaded twice or
// skipped between runs.
func checkContiguous(t *testing.T, recs []*jobs.Record) (loads int) {
	t.Helper()
	next := map[[2]any]int64{}
	for _, r := range recs {
		for _, l := range r.Loads {
			loads++
			for _, rg := range l.Ranges {
				k := [2]any{rg.Topic, rg.Partition}
				want, ok := next[k]
				if ok && rg.From != want {
					t.Fatalf("run %s (load %s) covers %s/%d from %d; the previous load ended at %d", r.ID, l.Run, rg.Topic, rg.Partition, rg.From, want)
				}
				if !ok && rg.From != 0 {
					t.Fatalf("run %s: the first load of %s/%d starts at %d", r.ID, rg.Topic, rg.Partition, rg.From)
				}
				next[k] = rg.To
			}
		}
	}
	return loads
}

// checkNoOverlap checks that no two attempts of the history held the job
// at once.
func checkNoOverlap(t *testing.T, recs []*jobs.Record) {
	t.Helper()
	type span struct {
		run, owner string
		from, to   time.Time
	}
	var spans []span
	for _, r := range recs {
		for _, a := range r.Attempts {
			if a.Lease == 0 {
				continue // failed before it held the lease
			}
			end := a.Ended
			if end.IsZero() {
				end = time.Now()
			}
			spans = append(spans, span{r.ID, a.Owner, a.Started, end})
		}
	}
	for i := range spans {
		for j := i + 1; j < len(spans); j++ {
			a, b := spans[i], spans[j]
			if a.from.Before(b.to) && b.from.Before(a.to) {
				t.Fatalf("two attempts ran at once: run %s by %s [%s, %s] and run %s by %s [%s, %s]",
					a.run, a.owner, a.from.Format(time.StampMilli), a.to.Format(time.StampMilli),
					b.run, b.owner, b.from.Format(time.StampMilli), b.to.Format(time.StampMilli))
			}
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// jobYAML is a job definition for the tests' files.
// Unless extra sets them, a job retries 5 times after 1 s, 2 s, 4 s ....
func jobYAML(name, topic, target, extra string) string {
	if !strings.Contains(extra, "retries:") {
		extra = "    retries: 5\n    backoff: 1s\n    max_backoff: 4s\n" + extra
	}
	return fmt.Sprintf(`  - name: %s
    topics: [%s]
    target: %s
    schema: %s
    time_field: timestamp
    max_records_per_unit: 1500
%s`, name, topic, target, activitySchema, extra)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
