package testbroker

// Finding what a broker under test hides: the race detector and the Go
// runtime report on stderr and the process may well keep running (a race
// report does not stop it) or be killed before anyone looks (kill -9 in a
// fault scenario). So a test broker's stderr is kept for every incarnation,
// and at the end of the test it is scanned for these reports, which fail
// the test with the report itself.

import (
	"fmt"
	"strings"
)

// Crash is one report found in a broker's log: a data race, a panic or a
// fatal runtime error, with the lines that explain it.
type Crash struct {
	Kind    string // "DATA RACE", "panic" or "fatal error"
	Line    int    // 1-based, in the log scanned
	Excerpt string
}

// Report sizes: a race report is two or three stacks; a panic's first
// goroutine (the one that panicked) comes first, and 80 lines show it.
const (
	maxExcerptLines = 80
	maxCrashes      = 5
)

// FindCrashes returns the data races, panics and fatal runtime errors
// reported in log, in order, each with an excerpt: a race report from its
// "WARNING: DATA RACE" line to the closing row of '=' signs, a panic or
// fatal error from its first line on. Lines a logger wrote (slog's
// "time=... msg=panic: x") do not count: the runtime writes these reports
// at the start of a line.
func FindCrashes(log string) []Crash {
	lines := strings.Split(log, "\n")
	var out []Crash
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		var kind string
		switch {
		case strings.HasPrefix(line, "WARNING: DATA RACE"):
			kind = "DATA RACE"
		case strings.HasPrefix(line, "panic:"):
			kind = "panic"
		case strings.HasPrefix(line, "fatal error:"):
			kind = "fatal error"
		default:
			continue
		}
		end := min(len(lines), i+maxExcerptLines)
		if kind == "DATA RACE" {
			for j := i + 1; j < end; j++ {
				if strings.HasPrefix(lines[j], "==================") {
					end = j
					break
				}
			}
		}
		out = append(out, Crash{Kind: kind, Line: i + 1, Excerpt: strings.Join(lines[i:end], "\n")})
		i = end - 1
	}
	return out
}

// crashReport is FindCrashes' findings for a test failure: the first few
// in full, and how many more there were.
func crashReport(name string, crashes []Crash) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s reported %d crash(es) (data race, panic or fatal error) in its log:", name, len(crashes))
	for i, c := range crashes {
		if i == maxCrashes {
			fmt.Fprintf(&b, "\n... and %d more", len(crashes)-maxCrashes)
			break
		}
		fmt.Fprintf(&b, "\n--- %s at log line %d:\n%s", c.Kind, c.Line, c.Excerpt)
	}
	return b.String()
}
