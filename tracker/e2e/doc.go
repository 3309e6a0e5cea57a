// Package e2e holds the tracker's tests with real clients: headless
// Chromium running tracker.js from a page (chromedp), and Segment's own
// Node libraries, each sending to the `tributary tracker` binary, which
// delivers to the real broker binary; the tests read the topic back.
//
// The outside parts are Debian's chromium and Node 20+ with the packages of
// scripts/node-deps.sh. Without them a test is skipped, or fails under
// CI=true (testbroker.Require).
package e2e
