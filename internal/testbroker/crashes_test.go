package testbroker

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// Reports as the race detector and the Go runtime write them, among a
// broker's slog lines.
const raceReport = `time=2026-12-01T20:00:00Z level=INFO msg="broker ready"
==================
WARNING: DATA RACE
Write at 0x00c000123456 by goroutine 42:
  github.com/tributary-io/tributary/broker/log.(*Log).Append()
      /src/broker/log/log.go:120 +0x1c4

Previous read at 0x00c000123456 by goroutine 17:
  github.com/tributary-io/tributary/broker/log.(*Log).Read()
      /src/broker/log/log.go:200 +0x88
==================
time=2026-12-01T20:00:01Z level=INFO msg="still serving"
`

const panicReport = `time=2026-12-01T20:00:00Z level=INFO msg="broker ready"
panic: runtime error: index out of range [3] with length 3

goroutine 7 [running]:
github.com/tributary-io/tributary/broker/server.(*conn).serve(0xc0001)
	/src/broker/server/conn.go:99 +0x1d
`

func TestFindCrashes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		log   string
		kinds []string
		has   string // in the first excerpt
		lacks string // not in the first excerpt
	}{
		{"clean", "time=x level=INFO msg=\"broker ready\"\ntime=y level=INFO msg=\"broker stopped\" clean=true\n", nil, "", ""},
		{"a logged word is no report", `time=x level=ERROR msg="request failed" err="panic: recovered" text="WARNING: DATA RACE"` + "\n", nil, "", ""},
		{"race", raceReport, []string{"DATA RACE"}, "(*Log).Read()", "still serving"},
		{"panic", panicReport, []string{"panic"}, "conn.go:99", ""},
		{"fatal error", "fatal error: concurrent map writes\n\ngoroutine 1 [running]:\n", []string{"fatal error"}, "concurrent map writes", ""},
		{"race then panic after a restart", raceReport + "=== testbroker: restart, incarnation 2 ===\n" + panicReport, []string{"DATA RACE", "panic"}, "WARNING: DATA RACE", "index out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FindCrashes(tc.log)
			var kinds []string
			for _, c := range got {
				kinds = append(kinds, c.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(tc.kinds, ",") {
				t.Fatalf("FindCrashes found %q, want %q", kinds, tc.kinds)
			}
			if len(got) == 0 {
				return
			}
			if !strings.Contains(got[0].Excerpt, tc.has) || (tc.lacks != "" && strings.Contains(got[0].Excerpt, tc.lacks)) {
				t.Errorf("excerpt should hold %q and not %q:\n%s", tc.has, tc.lacks, got[0].Excerpt)
			}
		})
	}
}

// recordingTB catches what Finish reports instead of failing the test.
type recordingTB struct {
	testing.TB
	errs []string
}

func (r *recordingTB) Helper()           {}
func (r *recordingTB) Error(args ...any) { r.errs = append(r.errs, fmt.Sprint(args...)) }

// A broker that dies by itself (SIGQUIT makes the Go runtime dump its
// goroutines and exit with status 2) fails the test at cleanup, though the
// test never looked; one stopped by SIGTERM passes.
func TestFinishReportsAnExitNobodyAskedFor(t *testing.T) {
	b := Start(t)
	if err := b.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	<-b.done
	rec := &recordingTB{TB: t}
	b.t = rec
	b.Finish()
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "exited by itself with status 2") {
		t.Errorf("Finish after SIGQUIT reported %q, want one error about status 2", rec.errs)
	}

	rec.errs = nil
	b.Restart()
	b.Finish()
	if len(rec.errs) != 0 {
		t.Errorf("Finish of a broker stopped by SIGTERM reported %q", rec.errs)
	}
	b.t = t
}
