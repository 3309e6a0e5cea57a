package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

func newTopicDescribeCommand(bootstrap *string) *cobra.Command {
	var internal bool
	cmd := &cobra.Command{
		Use:   "describe [REGEX...]",
		Short: "Show topics' partitions, replicas, offsets and configs",
		Long: `Describe topics: name, topic id, partition count, replication factor, the
configs that differ from the defaults (with where each value comes from,
as DescribeConfigs reports it), then one line per partition: leader,
leader epoch, replicas, in-sync replicas, offline replicas, log start
offset, high watermark and last stable offset (where read_committed
consumers stop: below the high watermark while a transaction is open).
For a topic with remote.storage.enable (tiered storage), a second table
shows each partition's local log start offset (below it only remote
storage holds the records) and last tiered offset (the last one in remote
storage, -1 for none).

Each REGEX must match whole topic names, as in "tributary topic list"; a
REGEX that matches no topic is an error naming it. Without one, every topic
is described. Internal topics only with --internal.`,
		Example: `  tributary topic describe orders
  tributary topic describe 'orders.*' --bootstrap kafka-1:9092

  # Kafka's own internal topic.
  tributary topic describe __consumer_offsets --internal`,
		RunE: func(cmd *cobra.Command, exprs []string) error {
			res, err := kafkacli.CompileTopicRegexps(exprs)
			if err != nil {
				return err
			}
			return withCluster(cmd, *bootstrap, func(ctx context.Context, cl *kafkacli.Cluster) error {
				all, err := cl.Topics(ctx)
				if err != nil {
					return err
				}
				for i := range res {
					if len(kafkacli.MatchTopics(all, res[i:i+1], internal)) == 0 {
						why := "no topic name matches it"
						if len(kafkacli.MatchTopics(all, res[i:i+1], true)) > 0 {
							why = "only internal topics match it: add --internal"
						}
						return fmt.Errorf("topic %q %w (%s)", exprs[i], kafkacli.ErrUnknownTopic, why)
					}
				}
				topics := kafkacli.MatchTopics(all, res, internal)
				return describeTopics(ctx, cmd, cl, topics)
			})
		},
	}
	cmd.Flags().BoolVarP(&internal, "internal", "i", false, "include internal topics (__consumer_offsets, ...)")
	kafkaArgFlag(cmd, "topic", "a topic (a regular expression) to describe", true)
	mirrorKafka(cmd, "kafka-topics.sh --describe", map[string]string{"topic": "topic"})
	return cmd
}

func describeTopics(ctx context.Context, cmd *cobra.Command, cl *kafkacli.Cluster, topics []kafkacli.TopicInfo) error {
	if err := cl.TopicIDs(ctx, topics); err != nil {
		return fmt.Errorf("topic ids: %w", err)
	}
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	configs, configErrs, err := cl.TopicConfigs(ctx, names)
	if err != nil {
		return fmt.Errorf("describing configs: %w", err)
	}
	w := cmd.OutOrStdout()
	for i, t := range topics {
		if i > 0 {
			fmt.Fprintln(w)
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "NAME\t%s\n", t.Name)
		fmt.Fprintf(tw, "ID\t%s\n", kafkacli.FormatTopicID(t.ID))
		if t.Internal {
			fmt.Fprintf(tw, "INTERNAL\ttrue\n")
		}
		fmt.Fprintf(tw, "PARTITIONS\t%d\n", len(t.Partitions))
		fmt.Fprintf(tw, "REPLICAS\t%d\n", t.ReplicationFactor())
		if t.Err != nil {
			fmt.Fprintf(tw, "ERROR\t%v\n", t.Err)
		}
		label := "CONFIGS"
		if err := configErrs[t.Name]; err != nil {
			fmt.Fprintf(tw, "%s\terror: %v\n", label, err)
		} else {
			entries := configs[t.Name]
			sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
			n := 0
			for _, e := range entries {
				if e.Source == kafkacli.SourceDefault {
					continue
				}
				v := e.Value
				if e.Sensitive {
					v = "(sensitive)"
				}
				fmt.Fprintf(tw, "%s\t%s=%s\t(%s)\n", label, e.Name, v, e.Source)
				label, n = "", n+1
			}
			if n == 0 {
				fmt.Fprintf(tw, "%s\t(all defaults)\n", label)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}

		offsets, err := cl.Offsets(ctx, t.Name, t.PartitionIndexes())
		if err != nil {
			offsets = nil // shown as "-" below; the partition table is still worth printing
		}
		stable, err := cl.StableOffsets(ctx, t.Name, t.PartitionIndexes())
		if err != nil {
			stable = nil
		}
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tOFFLINE\tLOG-START-OFFSET\tHIGH-WATERMARK\tLAST-STABLE-OFFSET")
		for _, p := range t.Partitions {
			start, end, lso := "-", "-", "-"
			if r, ok := offsets[p.Index]; ok && r.Err == nil {
				start, end = fmt.Sprint(r.Start), fmt.Sprint(r.End)
			}
			if r, ok := stable[p.Index]; ok && r.Err == nil {
				lso = fmt.Sprint(r.End)
			}
			epoch := "-"
			if p.LeaderEpoch >= 0 {
				epoch = fmt.Sprint(p.LeaderEpoch)
			}
			leader := "none"
			if p.Leader >= 0 {
				leader = fmt.Sprint(p.Leader)
			}
			line := fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", p.Index, leader, epoch, joinInts(p.Replicas), joinInts(p.ISR), joinInts(p.OfflineReplicas), start, end, lso)
			if p.Err != nil {
				line += "\t" + p.Err.Error()
			}
			fmt.Fprintln(tw, line)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if tieredTopic(configs[t.Name]) {
			if err := describeTier(ctx, w, cl, t); err != nil {
				return err
			}
		}
	}
	return nil
}

func tieredTopic(entries []kafkacli.ConfigEntry) bool {
	for _, e := range entries {
		if e.Name == "remote.storage.enable" && e.Value == "true" {
			return true
		}
	}
	return false
}

// describeTier shows where a tiered topic's partitions are: below
// LOCAL-LOG-START-OFFSET only remote storage holds the records, up to
// LAST-TIERED-OFFSET they are remote (docs/tiered-storage.md).
func describeTier(ctx context.Context, w io.Writer, cl *kafkacli.Cluster, t kafkacli.TopicInfo) error {
	tier, err := cl.TierOffsets(ctx, t.Name, t.PartitionIndexes())
	if err != nil {
		tier = nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION	LOCAL-LOG-START-OFFSET	LAST-TIERED-OFFSET")
	for _, p := range t.Partitions {
		local, tiered := "-", "-"
		if o, ok := tier[p.Index]; ok && o.Err == nil {
			local, tiered = fmt.Sprint(o.LocalStart), fmt.Sprint(o.LastTiered)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", p.Index, local, tiered)
	}
	return tw.Flush()
}
