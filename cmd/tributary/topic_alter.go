package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

func newTopicAlterConfigCommand(bootstrap *string) *cobra.Command {
	var sets, deletes []string
	cmd := &cobra.Command{
		Use:   "alter-config NAME...",
		Short: "Set or delete topic configs",
		Long: `Change topic configs incrementally (the IncrementalAlterConfigs request):
--set name=value sets a config, --delete name removes the topic's own value
so the broker default applies again; configs not named stay as they are.
Both can be repeated; a name may not be both set and deleted.

Prints each topic with OK or the broker's reason (an unknown topic, an
unknown config, a bad value) and fails if any topic was not changed.
"tributary topic describe" shows the result.`,
		Example: `  # Keep one day, compact as well as delete.
  tributary topic alter-config orders --set retention.ms=86400000 --set cleanup.policy=compact,delete

  # Back to the broker's retention.
  tributary topic alter-config orders --delete retention.ms`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			if len(sets) == 0 && len(deletes) == 0 {
				return errors.New("nothing to change: give --set name=value or --delete name")
			}
			var kvs [][2]string
			seen := map[string]bool{}
			for _, s := range sets {
				k, v, err := kafkacli.ParseKV("set", s)
				if err != nil {
					return err
				}
				kvs = append(kvs, [2]string{k, v})
				seen[k] = true
			}
			for _, d := range deletes {
				if d == "" {
					return errors.New(`--delete "": want a config name`)
				}
				if seen[d] {
					return fmt.Errorf("--delete %s: %s is also set with --set", d, d)
				}
			}
			return withCluster(cmd, *bootstrap, func(ctx context.Context, cl *kafkacli.Cluster) error {
				errs, err := cl.AlterTopicConfig(ctx, names, kvs, deletes)
				if err != nil {
					return fmt.Errorf("altering configs: %w", err)
				}
				return reportTopics(cmd.OutOrStdout(), names, errs, nil)
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&sets, "set", nil, "config to set, name=value (repeatable)")
	f.StringArrayVar(&deletes, "delete", nil, "config to revert to its default, by name (repeatable)")
	// kafka-configs.sh --alter --entity-type topics --entity-name T
	// --add-config a=1,b=[x,y] --delete-config c,d: lists of the same.
	var adds, dels []string
	f.StringArrayVar(&adds, "add-config", nil, "configs to set, comma-separated name=value, a list value in [] (Kafka's form of --set)")
	f.StringSliceVar(&dels, "delete-config", nil, "configs to revert, comma-separated (Kafka's form of --delete)")
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, names []string) error {
		for _, a := range adds {
			sets = append(sets, splitKafkaConfigs(a)...)
		}
		deletes = append(deletes, dels...)
		return run(cmd, names)
	}
	kafkaArgFlag(cmd, "entity-name", "a topic to change", true)
	mirrorKafka(cmd, "kafka-configs.sh --alter --entity-type topics", map[string]string{"entity-name": "entity-name",
		"add-config": "add-config", "delete-config": "delete-config"})
	return cmd
}

func newTopicAddPartitionsCommand(bootstrap *string) *cobra.Command {
	var count, total int
	cmd := &cobra.Command{
		Use:   "add-partitions NAME...",
		Short: "Add partitions to topics",
		Long: `Add partitions to existing topics (the CreatePartitions request).
--count N adds N partitions to each topic, as rpk's add-partitions does;
--total N grows each topic to N partitions in all, as kafka-topics.sh
--alter --partitions does. Give exactly one. Partitions can only be added:
a topic never shrinks.

Records with a key are placed by hashing it over the partition count, so
adding partitions moves where new records of a key go.`,
		Example: `  # Two more partitions.
  tributary topic add-partitions orders --count 2

  # Twelve partitions in all.
  tributary topic add-partitions orders --total 12`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			switch {
			case count != 0 && total != 0:
				return errors.New("give --count (partitions to add) or --total (partitions in all), not both")
			case count == 0 && total == 0:
				return errors.New("give --count N (partitions to add) or --total N (partitions in all)")
			case count < 0:
				return fmt.Errorf("--count %d: want at least 1 partition to add", count)
			case total < 0:
				return fmt.Errorf("--total %d: want a partition count above the current one", total)
			}
			return withCluster(cmd, *bootstrap, func(ctx context.Context, cl *kafkacli.Cluster) error {
				current := map[string]int{}
				totals := map[string]int{}
				for _, n := range names {
					t, err := cl.Topic(ctx, n)
					if err != nil {
						return err
					}
					current[n] = len(t.Partitions)
					if count > 0 {
						totals[n] = current[n] + count
					} else if total <= current[n] {
						return fmt.Errorf("--total %d: topic %q already has %d partitions; partitions can only be added", total, n, current[n])
					} else {
						totals[n] = total
					}
				}
				errs, err := cl.CreatePartitions(ctx, totals)
				if err != nil {
					return fmt.Errorf("adding partitions: %w", err)
				}
				return reportTopics(cmd.OutOrStdout(), names, errs, func(n string) string {
					if n == "" {
						return "PARTITIONS"
					}
					return fmt.Sprintf("%d -> %d", current[n], totals[n])
				})
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&count, "count", 0, "number of partitions to add to each topic")
	f.IntVar(&total, "total", 0, "number of partitions each topic should have in all")
	kafkaArgFlag(cmd, "topic", "a topic to add partitions to", true)
	mirrorKafka(cmd, "kafka-topics.sh --alter", map[string]string{"topic": "topic", "partitions": "total"})
	return cmd
}

// splitKafkaConfigs splits kafka-configs.sh's --add-config value at the
// commas outside square brackets, and drops the brackets of a list value
// (cleanup.policy=[compact,delete] is cleanup.policy=compact,delete).
func splitKafkaConfigs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	out = append(out, s[start:])
	for i, kv := range out {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
			out[i] = k + "=" + v[1:len(v)-1]
		}
	}
	return out
}
