//go:build race

package testbroker

// raceEnabled builds the broker under test with -race when the tests run
// with it, so a data race in the server fails the conformance tests too.
const raceEnabled = true
