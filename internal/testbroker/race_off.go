//go:build !race

package testbroker

const raceEnabled = false
