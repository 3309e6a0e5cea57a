package main

import (
	"strings"
	"testing"
)

// A bad --add-scram names what is wrong without showing the password:
// errors end up in logs and terminals.
func TestAddScramErrorsHidePasswords(t *testing.T) {
	for _, spec := range []string{
		"SCRAM-SHA-512=[name=alice,password=hunter2,iterations=12]",
		"SCRAM-SHA-512=[password=hunter2]",
		"SCRAM-SHA-999=[name=alice,password=hunter2]",
		"SCRAM-SHA-256=[name=alice,saltedpassword=aHVudGVyMg==]",
	} {
		_, err := parseAddScram([]string{spec})
		if err == nil {
			t.Errorf("%s: accepted", spec)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "aHVudGVyMg") {
			t.Errorf("%s: the error shows the secret: %v", spec, err)
		}
		if !strings.Contains(err.Error(), "*****") {
			t.Errorf("%s: the error does not show where the secret was: %v", spec, err)
		}
	}
}
