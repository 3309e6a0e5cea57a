//go:build testhooks

package server

import "os"

// The tests' broker binary is built with -tags testhooks
// (internal/testbroker); no other build has these hooks.

// panicClientID makes every request from this client id panic in its
// handler, to test that a panic closes only its connection.
var panicClientID = os.Getenv("TRIBUTARY_TEST_PANIC_CLIENT_ID")

func testHook(c *conn) {
	if panicClientID != "" && c.clientID == panicClientID {
		panic("test hook: TRIBUTARY_TEST_PANIC_CLIENT_ID=" + panicClientID)
	}
}
