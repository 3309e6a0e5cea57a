package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestACLFlagErrors: mistakes in the flags are refused before anything is
// sent (the bootstrap address reaches nothing), with a message that says
// what to give.
func TestACLFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"acl", "create", "--operation", "Read", "--topic", "t"}, "--allow-principal or --deny-principal"},
		{[]string{"acl", "create", "--allow-principal", "User:a", "--topic", "t"}, "give --operation"},
		{[]string{"acl", "create", "--allow-principal", "User:a", "--operation", "Read"}, "give a resource"},
		{[]string{"acl", "create", "--allow-principal", "alice", "--operation", "Read", "--topic", "t"}, "TYPE:NAME"},
		{[]string{"acl", "create", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"}, `--operation "Fly"`},
		{[]string{"acl", "create", "--allow-principal", "User:a", "--operation", "Read", "--topic", "t", "--resource-pattern-type", "match"}, "any and match are for list and delete"},
		{[]string{"acl", "list", "--resource-pattern-type", "fuzzy"}, `--resource-pattern-type "fuzzy"`},
		{[]string{"acl", "list", "--permission", "maybe"}, `--permission "maybe"`},
		{[]string{"acl", "delete"}, "no filter given"},
	} {
		_, _, err := execute(t, newRootCommand(), append(tc.args, "-b", "127.0.0.1:1")...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

func TestOpenListeners(t *testing.T) {
	for _, tc := range []struct {
		listeners, protocols, controllers string
		want                              []string
	}{
		{"PLAINTEXT://0.0.0.0:9092", "", "", []string{"PLAINTEXT://0.0.0.0:9092"}},
		{"PLAINTEXT://:9092", "", "", []string{"PLAINTEXT://:9092"}},
		{"PLAINTEXT://127.0.0.1:9092,CONTROLLER://0.0.0.0:9093", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT", "CONTROLLER", nil},
		{"INTERNAL://10.0.0.1:9092,SASL_SSL://0.0.0.0:9093", "INTERNAL:PLAINTEXT,SASL_SSL:SASL_SSL", "", []string{"INTERNAL://10.0.0.1:9092"}},
		{"PLAINTEXT://localhost:9092", "", "", nil},
	} {
		got := openListeners(tc.listeners, tc.protocols, tc.controllers)
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: %v, want %v", tc.listeners, got, tc.want)
		}
	}
}

// TestClusterDescribeWarnsOfOpenListener: a broker on every interface in
// PLAINTEXT with no authorizer is named in cluster describe.
func TestClusterDescribeWarnsOfOpenListener(t *testing.T) {
	port := testbroker.FreePort(t)
	b := testbroker.StartConfig(t, testbroker.Config{Dir: t.TempDir(), Port: port, Listeners: fmt.Sprintf("PLAINTEXT://0.0.0.0:%d", port)})
	out := mustRunCLI(t, "", "cluster", "describe", "-b", b.Addr())
	if !strings.Contains(out, fmt.Sprintf("WARNING     broker 1: listener PLAINTEXT://0.0.0.0:%d accepts anyone", port)) {
		t.Errorf("no warning:\n%s", out)
	}
}
