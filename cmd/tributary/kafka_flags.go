package main

// Operators come with runbooks written for Apache Kafka's shell tools. A
// tributary command that mirrors one of them accepts that tool's flag names
// beside its own, so a line of a runbook needs its tool name changed, not
// its flags: --bootstrap-server everywhere, kafka-dump-log.sh's
// --deep-iteration on "log dump", kafka-console-consumer.sh's --topic on
// "consume", and so on. Only names are mapped, to a flag of ours that means
// the same; where Kafka's flag takes a value of another shape (a JSON file,
// a list of properties) it is left out and the command's help says so.

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// kafkaBootstrapNote is what every command with --bootstrap says about it.
const kafkaBootstrapNote = "; Kafka's --bootstrap-server is accepted too"

// mirrorKafka makes cmd accept the flag names of Apache Kafka's tool as
// aliases: names maps each Kafka name to the name of cmd's own flag.
// --bootstrap-server is always mapped to --bootstrap. Call it after the
// flags are defined: each aliased flag's usage names its Kafka alias, and
// cmd's help lists them all, so docs/cli-reference.md documents them.
func mirrorKafka(cmd *cobra.Command, tool string, names map[string]string) {
	all := map[string]string{"bootstrap-server": "bootstrap"}
	for k, v := range names {
		all[k] = v
	}
	fs := cmd.Flags()
	cmd.Annotations = map[string]string{"kafka-tool": tool}
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if ours, ok := all[name]; ok {
			return pflag.NormalizedName(ours)
		}
		return pflag.NormalizedName(name)
	})
	var pairs []string
	// In name order: a flag with two Kafka names lists them the same way
	// in every build of docs/cli-reference.md.
	for _, k := range slices.Sorted(maps.Keys(names)) {
		v := names[k]
		if f := fs.Lookup(v); f != nil && k != v {
			f.Usage += fmt.Sprintf(" (Kafka: --%s)", k)
		}
		if k != v {
			pairs = append(pairs, fmt.Sprintf("--%s (--%s)", k, v))
		} else {
			pairs = append(pairs, "--"+k)
		}
	}
	sort.Strings(pairs)
	if len(pairs) > 0 {
		cmd.Long = strings.TrimRight(cmd.Long, "\n") + fmt.Sprintf("\n\nApache Kafka's %s flag names are accepted too: %s.", tool, strings.Join(pairs, ", "))
	}
}

// kafkaArgFlag adds Kafka's flag name for what cmd takes as arguments (a
// kafka-topics.sh --topic, a kafka-consumer-groups.sh --group): its values,
// repeatable, are taken as arguments after those given on the command line;
// with comma each value is also split at commas (topic names have none).
func kafkaArgFlag(cmd *cobra.Command, name, usage string, comma bool) {
	var vals []string
	if comma {
		cmd.Flags().StringSliceVar(&vals, name, nil, usage+" (Kafka's name for the argument; repeatable)")
	} else {
		cmd.Flags().StringArrayVar(&vals, name, nil, usage+" (Kafka's name for the argument; repeatable)")
	}
	with := func(args []string) []string { return append(append([]string(nil), args...), vals...) }
	if args := cmd.Args; args != nil {
		cmd.Args = func(cmd *cobra.Command, a []string) error { return args(cmd, with(a)) }
	}
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, a []string) error { return run(cmd, with(a)) }
}

// acceptBootstrapServer maps Kafka's --bootstrap-server to --bootstrap on
// every command below root that mirrorKafka has not already set up.
func acceptBootstrapServer(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Annotations["kafka-tool"] == "" {
			c.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
				if name == "bootstrap-server" {
					name = "bootstrap"
				}
				return pflag.NormalizedName(name)
			})
		}
		acceptBootstrapServer(c)
	}
}
