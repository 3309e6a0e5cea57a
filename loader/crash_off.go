//go:build !crashpoints

package loader

// crashPoint is a no-op without the crashpoints build tag (crash.go).
func crashPoint(string) {}
