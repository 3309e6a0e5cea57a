//go:build !testhooks

package txn

// firstEpoch is the epoch of a new producer id; tests move it
// (testhooks_on.go).
const firstEpoch int16 = 0
