package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/cluster"
)

// addScram is `tributary broker --add-scram`, KIP-900's bootstrap SCRAM
// users (kafka-storage format --add-scram): users that exist from the
// cluster's first start, so that no client needs a PLAINTEXT listener to
// create the first one.
var addScram []string

func addScramFlag(f *pflag.FlagSet) {
	f.StringArrayVar(&addScram, "add-scram", nil, "a SCRAM user created when the cluster does not have it yet, as kafka-storage format --add-scram takes it: "+
		"'SCRAM-SHA-256=[name=alice,password=alice-secret]' (iterations=N optional, 4096 by default; repeatable), or @FILE for such lines read from FILE, which keeps passwords out of the command line. "+
		"Give it to every controller; applied once in the cluster's life: an existing user is never reset, and a user deleted later does not come back")
}

// parseAddScram reads KIP-900's form: MECHANISM=[name=...,password=...,iterations=...]
// or with salt=<base64> and saltedpassword=<base64> instead of password.
// A spec @FILE stands for the lines of FILE (blank lines and # comments
// aside).
func parseAddScram(args []string) ([]cluster.ScramChange, error) {
	var specs []string
	for _, a := range args {
		file, ok := strings.CutPrefix(a, "@")
		if !ok {
			specs = append(specs, a)
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--add-scram: %w", err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				specs = append(specs, l)
			}
		}
	}
	var out []cluster.ScramChange
	for _, spec := range specs {
		shown := redactScram(spec)
		mechName, rest, ok := strings.Cut(spec, "=")
		m, known := auth.ScramMechanismByName(strings.ToUpper(strings.TrimSpace(mechName)))
		if !ok || !known {
			return nil, fmt.Errorf("--add-scram %q: want SCRAM-SHA-256=[name=...,password=...] or SCRAM-SHA-512=[...]", shown)
		}
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
			return nil, fmt.Errorf("--add-scram %q: the settings go in brackets: %s=[name=...,password=...]", shown, m.Name)
		}
		kv := map[string]string{}
		for _, p := range strings.Split(rest[1:len(rest)-1], ",") {
			k, v, ok := strings.Cut(p, "=")
			if !ok {
				return nil, fmt.Errorf("--add-scram %q: a setting is not key=value (a comma in a value?)", shown)
			}
			kv[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
		}
		ch := cluster.ScramChange{User: kv["name"], Mechanism: m, Iterations: auth.ScramMinIterations, IfAbsent: true}
		if ch.User == "" {
			return nil, fmt.Errorf("--add-scram %q: name= is missing", shown)
		}
		if it, ok := kv["iterations"]; ok {
			n, err := strconv.Atoi(it)
			if err != nil || checkScramIterations(n) != nil {
				return nil, fmt.Errorf("--add-scram %q: iterations must be %d to %d", shown, auth.ScramMinIterations, auth.ScramMaxIterations)
			}
			ch.Iterations = int32(n)
		}
		switch pw, salted := kv["password"], kv["saltedpassword"]; {
		case pw != "":
			var salt []byte
			if s, ok := kv["salt"]; ok {
				var err error
				if salt, err = base64.StdEncoding.DecodeString(s); err != nil {
					return nil, fmt.Errorf("--add-scram %q: salt is not base64", shown)
				}
			}
			ch.Salt, ch.SaltedPassword = saltScram(m, pw, salt, ch.Iterations)
		case salted != "":
			var err error
			if ch.SaltedPassword, err = base64.StdEncoding.DecodeString(salted); err != nil {
				return nil, fmt.Errorf("--add-scram %q: saltedpassword is not base64", shown)
			}
			if ch.Salt, err = base64.StdEncoding.DecodeString(kv["salt"]); err != nil || len(ch.Salt) == 0 {
				return nil, fmt.Errorf("--add-scram %q: saltedpassword needs salt=<base64>", shown)
			}
		default:
			return nil, fmt.Errorf("--add-scram %q: password= (or salt= and saltedpassword=) is missing", shown)
		}
		out = append(out, ch)
	}
	return out, nil
}

// saltScram is a SCRAM credential of password: its salt (random when salt
// is nil) and salted password. The broker and Kafka's tools store only
// these, never the password.
func saltScram(m auth.ScramMechanism, password string, salt []byte, iterations int32) ([]byte, []byte) {
	if salt == nil {
		salt = make([]byte, 24)
		rand.Read(salt)
	}
	return salt, m.SaltPassword(password, salt, int(iterations))
}

// checkScramIterations holds iterations to Kafka's bounds (4096 to 16384):
// fewer make a stolen credential cheap to crack.
func checkScramIterations(n int) error {
	if n < auth.ScramMinIterations || n > auth.ScramMaxIterations {
		return fmt.Errorf("iterations %d: must be %d to %d", n, auth.ScramMinIterations, auth.ScramMaxIterations)
	}
	return nil
}

// redactScram is a spec as errors may show it: its passwords and salted
// passwords starred out, since errors end up in logs and terminals.
func redactScram(spec string) string {
	return scramSecret.ReplaceAllString(spec, "${1}=*****")
}

var scramSecret = regexp.MustCompile(`(?i)\b(password|saltedpassword)\s*=\s*("[^"]*"|[^,\]]*)`)
