package main

import (
	"strings"
	"testing"

	brokercfg "github.com/tributary-io/tributary/broker/config"
)

// The in-process registry has no credentials: it must connect through a
// PLAINTEXT listener even when another comes first, and with none say why
// instead of never becoming ready.
func TestRegistryPicksPlaintextListener(t *testing.T) {
	t.Parallel()
	ls, err := brokercfg.ParseListeners([]string{"SECURE://h:9093", "INTERNAL://127.0.0.1:9094"},
		[]string{"SECURE:SASL_SSL", "INTERNAL:PLAINTEXT"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := plaintextListener(ls)
	if err != nil || l.Port != 9094 {
		t.Fatalf("picked %v, %v; want INTERNAL on 9094", l, err)
	}
	_, err = plaintextListener(ls[:1])
	if err == nil || !strings.Contains(err.Error(), "no advertised listener is PLAINTEXT") || !strings.Contains(err.Error(), "SECURE://h:9093 (SASL_SSL)") {
		t.Fatalf("only SASL_SSL: %v", err)
	}
}
