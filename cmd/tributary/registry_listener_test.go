package main

import (
	"strings"
	"testing"

	brokercfg "github.com/tributary-io/tributary/broker/config"
)

// The in-process registry connects through the first listener of its
// schema.registry.kafkastore.security.protocol (PLAINTEXT by default) even
// when another comes first, and with none says why instead of never
// becoming ready.
func TestRegistryPicksItsListener(t *testing.T) {
	t.Parallel()
	ls, err := brokercfg.ParseListeners([]string{"SECURE://h:9093", "INTERNAL://127.0.0.1:9094"},
		[]string{"SECURE:SASL_SSL", "INTERNAL:PLAINTEXT"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := registryListener(ls, "PLAINTEXT")
	if err != nil || l.Port != 9094 {
		t.Fatalf("picked %v, %v; want INTERNAL on 9094", l, err)
	}
	if l, err := registryListener(ls, "SASL_SSL"); err != nil || l.Port != 9093 {
		t.Fatalf("SASL_SSL: picked %v, %v; want SECURE on 9093", l, err)
	}
	_, err = registryListener(ls[:1], "PLAINTEXT")
	if err == nil || !strings.Contains(err.Error(), "no advertised listener has it") || !strings.Contains(err.Error(), "SECURE://h:9093 (SASL_SSL)") {
		t.Fatalf("only SASL_SSL: %v", err)
	}
}
