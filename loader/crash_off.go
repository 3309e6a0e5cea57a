//go:build !testhooks

package loader

// crashPoint is a no-op without the testhooks build tag (crash.go).
func crashPoint(string) {}
