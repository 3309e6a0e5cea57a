// testsummary reads `go test -json` on stdin and writes what a plain `go
// test` would have shown (a line per package, and the whole output of each
// failed test) to stdout, then counts the tests. Its last line says what
// could not run: the tests that skipped because an outside part was
// missing (testbroker.Require marks those skips), grouped by the part.
//
//	go test -race -json ./... 2>&1 | go run ./scripts/testsummary -summary summary.txt
//
// With -summary the last line goes to that file instead of stdout, for
// `make test` to print after the fuzz runs. Lines that are not JSON (a
// build error from the go command, say) are passed through. The exit
// status is 1 if a test or package failed, so a pipeline with pipefail
// fails even if the go command's own status is lost.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail
	Test       string
	Output     string
}

// missingRe finds testbroker.Require's skip message: the part is quoted
// with %q, so that any name parses back.
var missingRe = regexp.MustCompile(`missing dependency ("(?:[^"\\]|\\.)*")`)

type summary struct {
	out io.Writer

	passed, failed, skipped int
	failedPkgs              []string
	// buffered holds the output of each top-level test still running,
	// by package and name, printed only if it fails.
	buffered map[string][]string
	// missing is the tests skipped for each missing part.
	missing map[string][]string
}

func newSummary(out io.Writer) *summary {
	return &summary{out: out, buffered: map[string][]string{}, missing: map[string][]string{}}
}

func topLevel(test string) string {
	name, _, _ := strings.Cut(test, "/")
	return name
}

func (s *summary) line(raw string) {
	var e event
	if !strings.HasPrefix(raw, "{") || json.Unmarshal([]byte(raw), &e) != nil {
		fmt.Fprintln(s.out, raw)
		return
	}
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.out, e.Output)
		return
	case "build-fail":
		return
	}
	if e.Test == "" {
		s.packageEvent(e)
		return
	}
	key := e.Package + " " + topLevel(e.Test)
	switch e.Action {
	case "output":
		if strings.HasPrefix(e.Output, "=== ") {
			return // RUN, PAUSE, CONT, NAME: go test without -v shows none
		}
		s.buffered[key] = append(s.buffered[key], e.Output)
	case "pass":
		s.passed++
		if e.Test == topLevel(e.Test) {
			delete(s.buffered, key)
		}
	case "skip":
		s.skipped++
		s.noteMissing(e, s.buffered[key])
		if e.Test == topLevel(e.Test) {
			delete(s.buffered, key)
		}
	case "fail":
		s.failed++
		if e.Test == topLevel(e.Test) {
			s.flush(key)
		}
	}
}

// noteMissing finds the part a skipped test missed in its output (the
// test's own lines, among its parent's when it is a subtest).
func (s *summary) noteMissing(e event, lines []string) {
	for i := len(lines) - 1; i >= 0; i-- {
		m := missingRe.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		what, err := strconv.Unquote(m[1])
		if err != nil {
			what = m[1]
		}
		s.missing[what] = append(s.missing[what], e.Test)
		return
	}
}

func (s *summary) flush(key string) {
	for _, l := range s.buffered[key] {
		fmt.Fprint(s.out, l)
	}
	delete(s.buffered, key)
}

func (s *summary) packageEvent(e event) {
	switch e.Action {
	case "output":
		if e.Output == "PASS\n" {
			return // plain go test prints only the "ok" line
		}
		fmt.Fprint(s.out, e.Output)
	case "fail":
		s.failedPkgs = append(s.failedPkgs, e.Package)
		// A test binary that crashed or timed out leaves its running
		// tests without an end: show what they said.
		prefix := e.Package + " "
		var keys []string
		for k := range s.buffered {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			s.flush(k)
		}
	}
}

// last is the summary line.
func (s *summary) last() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tests: %d passed, %d failed, %d skipped", s.passed, s.failed, s.skipped)
	if len(s.failedPkgs) > 0 {
		fmt.Fprintf(&b, "; failed packages: %s", strings.Join(s.failedPkgs, " "))
	}
	if len(s.missing) == 0 {
		b.WriteString("; nothing skipped for a missing dependency")
		return b.String()
	}
	whats := make([]string, 0, len(s.missing))
	for w := range s.missing {
		whats = append(whats, w)
	}
	sort.Strings(whats)
	var parts []string
	for _, w := range whats {
		tests := s.missing[w]
		sort.Strings(tests)
		if len(tests) <= 2 {
			parts = append(parts, fmt.Sprintf("%s (%s)", w, strings.Join(tests, ", ")))
		} else {
			parts = append(parts, fmt.Sprintf("%s (%d tests: %s, ...)", w, len(tests), tests[0]))
		}
	}
	fmt.Fprintf(&b, "; NOT RUN for a missing dependency: %s", strings.Join(parts, "; "))
	return b.String()
}

func main() {
	summaryFile := flag.String("summary", "", "write the summary line to this file instead of stdout")
	flag.Parse()
	s := newSummary(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		s.line(sc.Text())
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	last := s.last()
	if *summaryFile != "" {
		if err := os.WriteFile(*summaryFile, []byte(last+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(2)
		}
	} else {
		fmt.Println(last)
	}
	if s.failed > 0 || len(s.failedPkgs) > 0 {
		os.Exit(1)
	}
}
