package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

// adminTimeout bounds one admin command, connecting included, as Kafka's
// default.api.timeout.ms bounds an AdminClient call.
const adminTimeout = 60 * time.Second

// addBootstrapFlag adds --bootstrap, shared by every command that talks to
// a cluster (topic, produce, consume, perf); TRIBUTARY_BOOTSTRAP or
// "bootstrap:" in the config file set it too.
func addBootstrapFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVarP(p, "bootstrap", "b", kafkacli.DefaultBootstrap, "brokers to connect to first, host:port[,host:port...] (env TRIBUTARY_BOOTSTRAP)"+kafkaBootstrapNote)
}

func newTopicCommand() *cobra.Command {
	var bootstrap string
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, configure and delete topics",
		Long: `Manage the topics of a cluster over the Kafka admin protocol: it works
against Tributary and Apache Kafka alike.

Every subcommand connects to --bootstrap (default localhost:9092; also
TRIBUTARY_BOOTSTRAP or "bootstrap:" in the --config file). Subcommands that
take several topics report each topic's outcome and fail if any failed.`,
		Example: `  tributary topic create orders --partitions 6 --replication-factor 3 -c retention.ms=86400000
  tributary topic list 'orders.*'
  tributary topic describe orders
  tributary topic alter-config orders --set cleanup.policy=compact --delete retention.ms
  tributary topic add-partitions orders --count 2
  tributary topic delete orders`,
	}
	addBootstrapFlag(cmd.PersistentFlags(), &bootstrap)
	cmd.AddCommand(
		newTopicCreateCommand(&bootstrap),
		newTopicListCommand(&bootstrap),
		newTopicDescribeCommand(&bootstrap),
		newTopicDeleteCommand(&bootstrap),
		newTopicAlterConfigCommand(&bootstrap),
		newTopicAddPartitionsCommand(&bootstrap),
	)
	return cmd
}

// withCluster runs fn with a connection and the admin timeout.
func withCluster(cmd *cobra.Command, bootstrap string, fn func(context.Context, *kafkacli.Cluster) error) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), adminTimeout)
	defer cancel()
	cl, err := kafkacli.Connect(ctx, bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	err = fn(ctx, cl)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer from %s within %s: %w", bootstrap, adminTimeout, err)
	}
	return err
}

// reportTopics prints a TOPIC/STATUS table of per-topic outcomes in the
// order given, and returns the failures joined.
func reportTopics(w io.Writer, names []string, errs map[string]error, extra func(name string) string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "TOPIC\tSTATUS"
	if extra != nil {
		header = "TOPIC\t" + extra("") + "\tSTATUS"
	}
	fmt.Fprintln(tw, header)
	var failed []error
	for _, n := range names {
		err, answered := errs[n]
		if !answered {
			err = errors.New("the broker did not answer for this topic")
		}
		status := "OK"
		if err != nil {
			status = err.Error()
			failed = append(failed, fmt.Errorf("topic %q: %w", n, err))
		}
		if extra != nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", n, extra(n), status)
		} else {
			fmt.Fprintf(tw, "%s\t%s\n", n, status)
		}
	}
	tw.Flush()
	return errors.Join(failed...)
}

func newTopicCreateCommand(bootstrap *string) *cobra.Command {
	var (
		partitions, replication int
		configs                 []string
	)
	cmd := &cobra.Command{
		Use:   "create NAME...",
		Short: "Create topics",
		Long: `Create one or more topics (the CreateTopics request).

--partitions and --replication-factor default to -1: the broker's
num.partitions and default.replication.factor. -c/--topic-config sets a
topic config (Kafka's topic property names: retention.ms, cleanup.policy,
segment.bytes, ...) and can be repeated. (It is not --config, which names
tributary's own YAML file on every command.)

Prints each topic with OK or the broker's reason, and fails if any topic
could not be created; a topic that already exists is such a failure.`,
		Example: `  # Six partitions, three replicas, one day of retention.
  tributary topic create orders -p 6 -r 3 -c retention.ms=86400000

  # A compacted topic on the broker defaults, on another cluster.
  tributary topic create users -c cleanup.policy=compact --bootstrap kafka-1:9092`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			if partitions == 0 || partitions < -1 {
				return fmt.Errorf("--partitions %d: want at least 1, or -1 for the broker's num.partitions", partitions)
			}
			if replication == 0 || replication < -1 || replication > 32767 {
				return fmt.Errorf("--replication-factor %d: want at least 1, or -1 for the broker's default.replication.factor", replication)
			}
			var entries []kafka.ConfigEntry
			for _, c := range configs {
				k, v, err := kafkacli.ParseKV("topic-config", c)
				if err != nil {
					return err
				}
				entries = append(entries, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
			}
			var topics []kafka.TopicConfig
			for _, n := range names {
				topics = append(topics, kafka.TopicConfig{Topic: n, NumPartitions: partitions, ReplicationFactor: replication, ConfigEntries: entries})
			}
			return withCluster(cmd, *bootstrap, func(ctx context.Context, cl *kafkacli.Cluster) error {
				errs, err := cl.CreateTopics(ctx, topics)
				if err != nil {
					return fmt.Errorf("creating topics: %w", err)
				}
				return reportTopics(cmd.OutOrStdout(), names, errs, nil)
			})
		},
	}
	f := cmd.Flags()
	f.IntVarP(&partitions, "partitions", "p", -1, "number of partitions; -1: the broker's num.partitions")
	f.IntVarP(&replication, "replication-factor", "r", -1, "replicas of each partition; -1: the broker's default.replication.factor")
	f.StringArrayVarP(&configs, "topic-config", "c", nil, "topic config as name=value (repeatable)")
	kafkaArgFlag(cmd, "topic", "a topic to create", true)
	mirrorKafka(cmd, "kafka-topics.sh --create", map[string]string{"topic": "topic",
		"partitions": "partitions", "replication-factor": "replication-factor"})
	return cmd
}

func newTopicListCommand(bootstrap *string) *cobra.Command {
	var internal bool
	cmd := &cobra.Command{
		Use:     "list [REGEX...]",
		Aliases: []string{"ls"},
		Short:   "List topics, optionally those matching regular expressions",
		Long: `List the topics of the cluster with their partition and replica counts,
sorted by name.

Each REGEX (Go regexp syntax) filters the list and must match the whole
topic name, as in kafka-topics.sh --list --topic (KAFKA-1186): 'orders'
matches only orders, 'orders.*' matches orders and orders-eu. With several,
a topic matching any of them is listed. Internal topics such as
__consumer_offsets are hidden unless --internal is given.`,
		Example: `  # Every topic.
  tributary topic list

  # Topics starting with orders or payments, internal ones included.
  tributary topic list 'orders.*' 'payments.*' --internal`,
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
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tPARTITIONS\tREPLICAS")
				for _, t := range kafkacli.MatchTopics(all, res, internal) {
					fmt.Fprintf(tw, "%s\t%d\t%d\n", t.Name, len(t.Partitions), t.ReplicationFactor())
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVarP(&internal, "internal", "i", false, "include internal topics (__consumer_offsets, ...)")
	mirrorKafka(cmd, "kafka-topics.sh --list", nil)
	return cmd
}

func newTopicDeleteCommand(bootstrap *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete topics",
		Long: `Delete topics by exact name (the DeleteTopics request): their partitions
and data go away. Names are not patterns; list first with
"tributary topic list REGEX" to see what a pattern would match.

Prints each topic with OK or the broker's reason, and fails if any topic
could not be deleted (an unknown topic included).`,
		Example: `  tributary topic delete orders
  tributary topic delete orders-eu orders-us --bootstrap kafka-1:9092`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			return withCluster(cmd, *bootstrap, func(ctx context.Context, cl *kafkacli.Cluster) error {
				errs, err := cl.DeleteTopics(ctx, names)
				if err != nil {
					return fmt.Errorf("deleting topics: %w", err)
				}
				return reportTopics(cmd.OutOrStdout(), names, errs, nil)
			})
		},
	}
	kafkaArgFlag(cmd, "topic", "a topic to delete", true)
	mirrorKafka(cmd, "kafka-topics.sh --delete", map[string]string{"topic": "topic"})
	return cmd
}

// joinInts prints broker ids as Kafka's tools do: 1,2,3; "-" for none.
func joinInts(ids []int32) string {
	if len(ids) == 0 {
		return "-"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}
