package main

import (
	"strings"
	"testing"
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
