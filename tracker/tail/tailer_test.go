package tail

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A line written in two parts is one record, sent once its newline is
// written.
func TestPartialLineWaits(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	appendFile(t, log, "one\ntw")
	p := &producer{}
	run(t, testConfig(dir, Input{Paths: []string{log}}), p)
	p.waitValues(t, 1)
	time.Sleep(50 * time.Millisecond) // ten polls
	equal(t, p.values(), []string{"one"})
	appendFile(t, log, "o\n")
	equal(t, p.waitValues(t, 2), []string{"one", "two"})
}

// Stopped and started again, the tailer continues where the broker's
// acknowledgement left it: nothing twice, nothing skipped.
func TestRestartContinues(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	appendFile(t, log, lines("a", 0, 100))
	cfg := testConfig(dir, Input{Paths: []string{log}})
	p := &producer{}
	_, stop := run(t, cfg, p)
	p.waitValues(t, 100)
	stop()
	appendFile(t, log, lines("a", 100, 150))
	cfg.Registerer = nil
	_, stop = run(t, cfg, p)
	got := p.waitValues(t, 150)
	time.Sleep(50 * time.Millisecond)
	equal(t, p.values(), want("a", 0, 150))
	_ = got
	stop()
	saved := savedPositions(t, cfg.PositionsFile)
	fi, _ := os.Stat(log)
	if len(saved) != 1 || saved[0].Offset != fi.Size() || saved[0].Path != log || saved[0].FPBytes != 1024 {
		t.Fatalf("positions %+v, file of %d bytes", saved, fi.Size())
	}
}

// The position moves only once the broker acknowledged: while the first
// produce call is held, the positions file says 0.
func TestPositionAfterAck(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	appendFile(t, log, lines("a", 0, 10))
	cfg := testConfig(dir, Input{Paths: []string{log}})
	p := &producer{gate: make(chan struct{}), fail: 2}
	_, stop := run(t, cfg, p)
	defer stop()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		p.mu.Lock()
		calls := p.calls
		p.mu.Unlock()
		if calls > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no produce call")
		}
	}
	if saved := savedPositions(t, cfg.PositionsFile); len(saved) > 0 && saved[0].Offset != 0 {
		t.Fatalf("positions while the broker has not acknowledged: %+v", saved)
	}
	p.gate <- struct{}{} // fails
	p.gate <- struct{}{} // fails
	time.Sleep(20 * time.Millisecond)
	if saved := savedPositions(t, cfg.PositionsFile); len(saved) > 0 && saved[0].Offset != 0 {
		t.Fatalf("positions after failed produce calls: %+v", saved)
	}
	close(p.gate)
	equal(t, p.waitValues(t, 10), want("a", 0, 10))
	fi, _ := os.Stat(log)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if saved := savedPositions(t, cfg.PositionsFile); len(saved) == 1 && saved[0].Offset == fi.Size() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("positions after the acknowledgement: %+v", savedPositions(t, cfg.PositionsFile))
		}
	}
}

// A file rewritten in place while the tailer was down keeps its inode but
// not its first bytes: it is another file and is read from 0, even though
// it is longer than the saved offset.
func TestInodeReuseReadFromStart(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	appendFile(t, log, lines("old", 0, 100))
	cfg := testConfig(dir, Input{Paths: []string{log}})
	p := &producer{}
	_, stop := run(t, cfg, p)
	p.waitValues(t, 100)
	stop()
	before, _ := os.Stat(log)
	if err := os.WriteFile(log, []byte(lines("new", 0, 200)), 0o644); err != nil { // O_TRUNC: same inode
		t.Fatal(err)
	}
	after, _ := os.Stat(log)
	if inode(before) != inode(after) || after.Size() <= before.Size() {
		t.Fatalf("inode %d -> %d, size %d -> %d", inode(before), inode(after), before.Size(), after.Size())
	}
	cfg.Registerer = nil
	run(t, cfg, p)
	got := p.waitValues(t, 300)
	equal(t, got[100:], want("new", 0, 200))
}

// Truncated in place (copytruncate) while followed: detected because the
// file is shorter than what was read, and read again from 0.
func TestCopyTruncateDetected(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	appendFile(t, log, lines("a", 0, 100))
	cfg := testConfig(dir, Input{Paths: []string{log}})
	p := &producer{}
	tl, _ := run(t, cfg, p)
	p.waitValues(t, 100)
	if err := os.Truncate(log, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	appendFile(t, log, lines("b", 0, 10))
	got := p.waitValues(t, 110)
	time.Sleep(30 * time.Millisecond)
	equal(t, p.values(), append(want("a", 0, 100), want("b", 0, 10)...))
	_ = got
	if n := counter(t, tl.m.rotations.WithLabelValues(log, rotateTruncate)); n != 1 {
		t.Errorf("%v truncations counted", n)
	}
}

// copytruncate while the tailer lags (here: its broker is slow): the lines
// it had not read before the truncation are read from the copy, which the
// glob finds, starting where the original was; nothing twice.
func TestCopyTruncateReadsTheCopy(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	appendFile(t, log, lines("a", 0, 200))
	cfg := testConfig(dir, Input{Paths: []string{log + "*"}})
	cfg.BatchLines = 10
	p := &producer{gate: make(chan struct{})}
	tl, _ := run(t, cfg, p)
	p.gate <- struct{}{} // the first ten lines
	p.waitValues(t, 10)
	// logrotate's copytruncate, while the second batch waits for the broker.
	data, _ := os.ReadFile(log)
	os.WriteFile(log+".1", data, 0o644)
	os.Truncate(log, 0)
	appendFile(t, log, lines("b", 0, 5))
	close(p.gate)
	p.waitValues(t, 205)
	time.Sleep(100 * time.Millisecond)
	got := p.values()
	if len(got) != 205 {
		t.Fatalf("%d records, want 205", len(got))
	}
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for _, w := range append(want("a", 0, 200), want("b", 0, 5)...) {
		if seen[w] != 1 {
			t.Errorf("%s sent %d times", w, seen[w])
		}
	}
	if n := counter(t, tl.m.rotations.WithLabelValues(log+"*", rotateCopy)); n != 1 {
		t.Errorf("%v copies recognised", n)
	}
}

// Rotation by rename: the old file is read to its end, also what its
// writer appends after the rename, then dropped; the new file at the path
// is read from 0.
func TestRenameRotation(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	appendFile(t, log, lines("a", 0, 50))
	cfg := testConfig(dir, Input{Paths: []string{log}})
	p := &producer{}
	tl, _ := run(t, cfg, p)
	p.waitValues(t, 50)
	w, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	os.Rename(log, log+".1")
	appendFile(t, log, lines("b", 0, 20))
	time.Sleep(40 * time.Millisecond) // two scans: the old file left the glob
	w.WriteString(lines("a", 50, 60) + "tail without newline")
	w.Close()
	got := p.waitValues(t, 81)
	seen := map[string]bool{}
	for _, v := range got {
		seen[v] = true
	}
	for _, w := range append(append(want("a", 0, 60), want("b", 0, 20)...), "tail without newline") {
		if !seen[w] {
			t.Errorf("%q not sent", w)
		}
	}
	if len(got) != 81 {
		t.Errorf("%d records, want 81", len(got))
	}
	for deadline := time.Now().Add(30 * time.Second); counter(t, tl.m.files.WithLabelValues(log)) != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the rotated file is still followed")
		}
	}
	for deadline := time.Now().Add(30 * time.Second); len(savedPositions(t, cfg.PositionsFile)) != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("positions %+v", savedPositions(t, cfg.PositionsFile))
		}
	}
}

// Rotated by rename while the tailer was down, to a name the glob does not
// match: the old file is found by inode and its rest is read.
func TestRenameWhileDown(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	appendFile(t, log, lines("a", 0, 100))
	cfg := testConfig(dir, Input{Paths: []string{log}})
	p := &producer{}
	_, stop := run(t, cfg, p)
	p.waitValues(t, 100)
	stop()
	appendFile(t, log, lines("a", 100, 120))
	os.Rename(log, log+".1")
	appendFile(t, log, lines("b", 0, 10))
	cfg.Registerer = nil
	run(t, cfg, p)
	p.waitValues(t, 130)
	time.Sleep(50 * time.Millisecond)
	got := p.values()
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for _, w := range append(want("a", 0, 120), want("b", 0, 10)...) {
		if seen[w] != 1 {
			t.Errorf("%s sent %d times", w, seen[w])
		}
	}
}

// The glob is evaluated again: a file created later is followed from its
// first line.
func TestGlobPicksUpNewFiles(t *testing.T) {
	dir := t.TempDir()
	appendFile(t, filepath.Join(dir, "a.log"), "a1\n")
	p := &producer{}
	run(t, testConfig(dir, Input{Paths: []string{filepath.Join(dir, "*.log")}}), p)
	p.waitValues(t, 1)
	appendFile(t, filepath.Join(dir, "b.log"), "b1\nb2\n")
	appendFile(t, filepath.Join(dir, "c.txt"), "not matched\n")
	equal(t, p.waitValues(t, 3), []string{"a1", "b1", "b2"})
	var paths []string
	for _, m := range p.messages() {
		for _, h := range m.Headers {
			if h.Key == HeaderFile {
				paths = append(paths, filepath.Base(string(h.Value)))
			}
		}
	}
	if strings.Join(paths, ",") != "a.log,b.log,b.log" {
		t.Errorf("file headers %v", paths)
	}
}

// start_at end on the very first start skips what the file holds.
func TestStartAtEnd(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	appendFile(t, log, lines("old", 0, 10))
	p := &producer{}
	run(t, testConfig(dir, Input{Paths: []string{log}, StartAt: StartEnd}), p)
	time.Sleep(50 * time.Millisecond)
	appendFile(t, log, "new\n")
	equal(t, p.waitValues(t, 1), []string{"new"})
}

func TestLongLineCut(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	appendFile(t, log, strings.Repeat("x", 100)+"\nshort\n")
	cfg := testConfig(dir, Input{Paths: []string{log}})
	cfg.MaxLineBytes = 10
	p := &producer{}
	tl, _ := run(t, cfg, p)
	equal(t, p.waitValues(t, 2), []string{"xxxxxxxxxx", "short"})
	m := p.messages()[0]
	if len(m.Headers) != 3 || m.Headers[2].Key != HeaderCut {
		t.Errorf("headers of the cut line %v", m.Headers)
	}
	if n := counter(t, tl.m.errors.WithLabelValues(log, ReasonLineTooLong)); n != 1 {
		t.Errorf("%v cut lines counted", n)
	}
}

func TestJSONLines(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "app.json")
	appendFile(t, log, `{"user":{"id":"u1"},"n":1}`+"\nnot json\n\n[1,2]\n"+`{"user":{"id":7},"n":2}`+"\n")
	cfg := testConfig(dir, Input{Paths: []string{log}, Format: FormatJSON, Key: "user.id", SendInvalid: true})
	p := &producer{}
	tl, _ := run(t, cfg, p)
	p.waitValues(t, 4)
	var got []string
	for _, m := range p.messages() {
		got = append(got, m.Topic+" "+string(m.Key)+" "+string(m.Value))
	}
	equal(t, []string{strings.Join(got, "|")}, []string{`logs u1 {"user":{"id":"u1"},"n":1}|logs.invalid  not json|logs.invalid  [1,2]|logs 7 {"user":{"id":7},"n":2}`})
	if n := counter(t, tl.m.errors.WithLabelValues(log, ReasonInvalidJSON)); n != 2 {
		t.Errorf("%v invalid lines counted", n)
	}
	if n := counter(t, tl.m.read.WithLabelValues(log)); n != 5 {
		t.Errorf("%v lines read", n)
	}
}

// Without send_invalid, invalid lines are counted and dropped, and the
// position moves past them.
func TestInvalidDropped(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	appendFile(t, log, "garbage\n"+combinedLine+"\n")
	p := &producer{}
	tl, _ := run(t, testConfig(dir, Input{Paths: []string{log}, Format: FormatCombined, Key: "remote_addr"}), p)
	p.waitValues(t, 1)
	m := p.messages()[0]
	if string(m.Key) != "127.0.0.1" || !m.Time.Equal(time.Date(2000, 10, 10, 20, 55, 36, 0, time.UTC)) || !strings.Contains(string(m.Value), `"status":200`) {
		t.Errorf("record key %q time %v value %s", m.Key, m.Time, m.Value)
	}
	if n := counter(t, tl.m.errors.WithLabelValues(log, ReasonInvalidCombined)); n != 1 {
		t.Errorf("%v invalid lines counted", n)
	}
}

func TestPositionsFile(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir, Input{Paths: []string{filepath.Join(dir, "*.log")}})
	tl, err := New(cfg, &producer{})
	if err != nil {
		t.Fatal(err)
	}
	second := cfg
	second.Registerer = nil
	if _, err := New(second, &producer{}); err == nil || !strings.Contains(err.Error(), "held by another tailer") {
		t.Errorf("second tailer on one positions file: %v", err)
	}
	tl.close()
	cfg.Registerer = nil
	os.WriteFile(cfg.PositionsFile, []byte(`{"version":2,"files":[]}`), 0o644)
	if _, err := New(cfg, &producer{}); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("positions of version 2: %v", err)
	}
}
