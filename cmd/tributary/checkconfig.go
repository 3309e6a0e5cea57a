package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	brokercfg "github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/tracker/collect"
)

// --check-config loads a daemon's configuration with the loader the daemon
// itself uses (file, environment and flags), reports what is wrong, and
// exits without opening data or ports: what an operator runs before a
// restart (as nginx -t), what systemd's ExecStartPre and the deploy tests
// run on the example configs.

func addCheckConfigFlag(f *pflag.FlagSet, check *bool) {
	f.BoolVar(check, "check-config", false, "load and check the configuration (file, environment, flags), print it, and exit without starting")
}

// printBrokerCheck reports a broker configuration that ParseBroker
// accepted: the properties set, secrets hidden.
func printBrokerCheck(w io.Writer, cfg *brokercfg.Broker) {
	var set []string
	for _, v := range cfg.Values() {
		if v.Source != brokercfg.SourceStaticBroker {
			continue
		}
		val := v.Value
		if v.Def.Sensitive || v.Def.Type == brokercfg.Password {
			val = "(hidden)"
		}
		set = append(set, "  "+v.Def.Name+"="+val)
	}
	fmt.Fprintf(w, "broker configuration ok: %d properties set, the rest Kafka's defaults\n", len(set))
	if len(set) > 0 {
		fmt.Fprintln(w, strings.Join(set, "\n"))
	}
}

// checkFileKeys refuses a --config file key that nothing reads. viper
// applies the keys of flags and ignores the rest, and the sections are
// decoded without strictness, so without this a misspelt key would
// silently do nothing. sections is a pointer to a struct of the file's
// sections with yaml tags (nil for none); a key outside it must be a flag's.
func checkFileKeys(cmd *cobra.Command, sections any) error {
	file, _ := cmd.Flags().GetString("config")
	if file == "" {
		file = os.Getenv(env("config"))
	}
	if file == "" {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var tree map[string]any
	if err := yaml.Unmarshal(data, &tree); err != nil {
		return fmt.Errorf("config file %s: %w", file, err)
	}
	flags := map[string]bool{}
	visit := func(f *pflag.Flag) { flags[key(f.Name)] = true }
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	sectionNames := map[string]bool{}
	if sections != nil {
		// The flags' keys are not in sections: decode a copy without them.
		rest := map[string]any{}
		for k, v := range tree {
			if !isFlagKey(k, v, flags) {
				rest[k] = v
			}
		}
		b, _ := yaml.Marshal(rest)
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(sections); err != nil && !errors.Is(err, io.EOF) {
			// yaml names the Go type; the reader wants the key. The line
			// numbers are of the file without the flags' keys, so drop them.
			msg := notFoundIn.ReplaceAllString(err.Error(), "unknown key $1")
			msg = lineNo.ReplaceAllString(msg, "")
			return fmt.Errorf("config file %s: %s", file, msg)
		}
		for k := range rest {
			sectionNames[k] = true
		}
	}
	var unknown []string
	for k, v := range tree {
		if !isFlagKey(k, v, flags) && !sectionNames[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("config file %s: unknown keys %s (see --help for the flags; their keys are the names with dots for dashes)", file, strings.Join(unknown, ", "))
	}
	return nil
}

// isFlagKey says whether the top-level key k with value v holds only flag
// keys: "admin.listen: x", or "admin: {listen: x}".
func isFlagKey(k string, v any, flags map[string]bool) bool {
	flat := map[string]string{}
	flatten(k, v, flat)
	if len(flat) == 0 {
		return flags[k]
	}
	for name := range flat {
		if !flags[name] {
			return false
		}
	}
	return true
}

var (
	notFoundIn = regexp.MustCompile(`field (\S+) not found in type .*`)
	lineNo     = regexp.MustCompile(`line \d+: `)
)

// trackerSections are the tracker file's sections beyond its flags' keys.
type trackerSections struct {
	trackerFile `yaml:",inline"`
	Tail        *tailSection `yaml:"tail"`
}

// checkTrackerConfig reports a tracker configuration that trackerConfig
// accepted, after checking the file's keys and its tail: section.
func checkTrackerConfig(cmd *cobra.Command, cfg collect.Config) error {
	if err := checkFileKeys(cmd, &trackerSections{}); err != nil {
		return err
	}
	ts, err := readTailSection(cmd)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "tracker configuration ok: %d sources\n", len(cfg.Sources))
	for _, s := range cfg.Sources {
		fmt.Fprintf(w, "  source %s -> topic %s\n", s.Name, s.Topic)
	}
	if ts != nil {
		fmt.Fprintf(w, "  tail: %d file groups\n", len(ts.Files))
	}
	return nil
}
