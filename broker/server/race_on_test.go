//go:build race

package server_test

// raceBuild: internal/testbroker builds the broker under test with -race
// too, whose shadow memory multiplies what a test measures of its RSS.
const raceBuild = true
