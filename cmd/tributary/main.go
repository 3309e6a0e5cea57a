// Command tributary is the one binary of Tributary: the broker, the tracker,
// the loader and the tools around them, as noun-verb commands in the style of
// Redpanda's rpk (`tributary log dump`, later `tributary topic create`).
//
// This package is thin: it turns flags and configuration into calls of the
// packages that do the work.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/tributary-io/tributary/loader/lease"
)

func main() {
	root := newRootCommand()
	if err := root.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "tributary: %v\n", err)
		var busy *lease.BusyError
		if errors.As(err, &busy) {
			os.Exit(exitBusy)
		}
		os.Exit(1)
	}
}
