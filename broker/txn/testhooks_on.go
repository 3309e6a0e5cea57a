//go:build testhooks

package txn

import (
	"os"
	"strconv"
)

// The tests' broker binary is built with -tags testhooks
// (internal/testbroker); no other build has these hooks.

// firstEpoch is the epoch InitProducerId gives a new producer id, so that
// a test reaches the last epochs (32766, 32767) in a few transactions.
var firstEpoch = func() int16 {
	e, _ := strconv.ParseInt(os.Getenv("TRIBUTARY_TEST_TXN_FIRST_EPOCH"), 10, 16)
	return int16(max(e, 0))
}()
