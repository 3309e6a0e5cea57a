package testcluster

import "time"

// HangBound is the least a waiting helper (Controller, Leaders, AwaitAck)
// waits before it fails the test. The timeout a test passes is what it
// expects of an idle machine; CI runs the race detector on 2 cores beside
// other packages' brokers and JVMs, where an election can wait out a
// session timeout and a controller request's timeout before it settles
// (CI saw a registration take over 5 s). A wait is a hang detector, not a
// speed assertion: speed targets are benchmarks (BenchmarkFailoverResume).
const HangBound = 60 * time.Second

// hangBound is the bound a helper given timeout waits for.
func hangBound(timeout time.Duration) time.Duration { return max(timeout, HangBound) }
