//go:build testhooks

package loader

// The crash points are compiled only into test binaries (go build -tags
// testhooks, which internal/testbroker's Binary passes): a production
// loader must not die because an environment variable says so.
// crash_off.go is the no-op every other build gets.

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// crashEnv names a point at which the loader kills its own process with
// SIGKILL, as `kill -9` would, for the crash tests: "<point>" or
// "<point>#<n>" for its n-th passage (from 1). The points are the edges of
// the commit protocol, where a crash is most likely to break it.
const crashEnv = "TRIBUTARY_LOADER_CRASH_AT"

var (
	crashMu     sync.Mutex
	crashPassed = map[string]int{}
)

// crashPoint dies here if the environment asks for it.
func crashPoint(point string) {
	want := os.Getenv(crashEnv)
	if want == "" {
		return
	}
	name, nth, _ := strings.Cut(want, "#")
	if name != point {
		return
	}
	n := 1
	if nth != "" {
		n, _ = strconv.Atoi(nth)
	}
	crashMu.Lock()
	crashPassed[point]++
	hit := crashPassed[point] == n
	crashMu.Unlock()
	if hit {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}
