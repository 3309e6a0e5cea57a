package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

// Share groups (KIP-932) through franz-go's kadm: kafka-go has none of
// their APIs.

func newShareGroupCommand() *cobra.Command {
	var bootstrap string
	cmd := &cobra.Command{
		Use:     "share-group",
		Aliases: []string{"share-groups"},
		Short:   "List, describe, reset the offsets of and delete share groups (KIP-932)",
		Long: `Manage the share groups of a cluster over the Kafka protocol, as
kafka-share-groups.sh does: it works against Tributary and Apache Kafka
alike. Share groups are the queues of KIP-932: the members of a group read
the same partitions, each record is given to one member at a time and
acknowledged on its own.

Every subcommand connects to --bootstrap (default localhost:9092; also
TRIBUTARY_BOOTSTRAP or "bootstrap:" in the --config file).`,
		Example: `  tributary share-group list
  tributary share-group describe orders-workers
  tributary share-group reset-offsets orders-workers --topic orders --to-earliest --execute
  tributary share-group delete orders-workers`,
	}
	addBootstrapFlag(cmd.PersistentFlags(), &bootstrap)
	cmd.AddCommand(
		newShareGroupListCommand(&bootstrap),
		newShareGroupDescribeCommand(&bootstrap),
		newShareGroupResetCommand(&bootstrap),
		newShareGroupDeleteCommand(&bootstrap),
	)
	return cmd
}

// withShareAdmin runs fn with a kadm client on the cluster.
func withShareAdmin(cmd *cobra.Command, bootstrap string, fn func(context.Context, *kadm.Client) error) error {
	brokers, err := kafkacli.ParseBootstrap(bootstrap)
	if err != nil {
		return err
	}
	opts, err := kafkacli.ClientOpts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ClientID(kafkacli.ClientID), kgo.DialTimeout(10 * time.Second)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), adminTimeout)
	defer cancel()
	return fn(ctx, kadm.NewClient(cl))
}

func newShareGroupListCommand(bootstrap *string) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List share groups with their state",
		Long: `List the share groups of every broker (ListGroups with the "share"
type), sorted by id, with their state: Empty (no members; the group's
offsets are kept) or Stable.`,
		Example: `  tributary share-group list`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withShareAdmin(cmd, *bootstrap, func(ctx context.Context, adm *kadm.Client) error {
				groups, err := adm.ListGroupsByType(ctx, []string{"share"})
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "GROUP\tSTATE")
				for _, g := range groups.Sorted() {
					fmt.Fprintf(tw, "%s\t%s\n", g.Group, dash(g.State))
				}
				return tw.Flush()
			})
		},
	}
}

func newShareGroupDescribeCommand(bootstrap *string) *cobra.Command {
	return &cobra.Command{
		Use:   "describe GROUP",
		Short: "Show a share group's members, start offsets and lag",
		Long: `Describe a share group: its state and epoch, its members with the
partitions assigned to them, and for every partition the group has read:

  START-OFFSET   the share-partition start offset: every record below it
                 is acknowledged or archived ("-": the group never read it)
  LAG            records not yet acknowledged or archived

An unknown group is an error.`,
		Example: `  tributary share-group describe orders-workers`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			group := args[0]
			return withShareAdmin(cmd, *bootstrap, func(ctx context.Context, adm *kadm.Client) error {
				ds, err := adm.DescribeShareGroups(ctx, group)
				if err != nil {
					return err
				}
				d, ok := ds[group]
				if !ok {
					return fmt.Errorf("share group %q: no answer", group)
				}
				if d.Err != nil {
					return fmt.Errorf("share group %q: %w", group, d.Err)
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "GROUP %s  STATE %s  EPOCH %d  ASSIGNOR %s  MEMBERS %d\n\n", group, d.GroupState, d.GroupEpoch, d.Assignor, len(d.Members))
				offs, err := adm.DescribeShareGroupOffsets(ctx, group)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TOPIC\tPARTITION\tSTART-OFFSET\tLAG")
				var rows []kadm.ShareOffset
				for _, ps := range offs[group].Offsets {
					for _, o := range ps {
						rows = append(rows, o)
					}
				}
				sort.Slice(rows, func(i, j int) bool {
					if rows[i].Topic != rows[j].Topic {
						return rows[i].Topic < rows[j].Topic
					}
					return rows[i].Partition < rows[j].Partition
				})
				num := func(n int64) string {
					if n < 0 {
						return "-"
					}
					return strconv.FormatInt(n, 10)
				}
				for _, o := range rows {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", o.Topic, o.Partition, num(o.StartOffset), num(o.Lag))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if len(d.Members) == 0 {
					return nil
				}
				fmt.Fprintln(out)
				tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "MEMBER-ID\tEPOCH\tCLIENT-ID\tHOST\tASSIGNMENT")
				for _, m := range d.Members {
					var parts []string
					for _, t := range m.Assignment.Sorted() {
						parts = append(parts, fmt.Sprintf("%s:%v", t.Topic, t.Partitions))
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", m.MemberID, m.MemberEpoch, m.ClientID, strings.TrimPrefix(m.ClientHost, "/"), dash(strings.Join(parts, " ")))
				}
				return tw.Flush()
			})
		},
	}
}

func newShareGroupResetCommand(bootstrap *string) *cobra.Command {
	var topics []string
	var earliest, latest, execute bool
	var toOffset int64 = -1
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP --topic TOPIC (--to-earliest | --to-latest | --to-offset N) [--execute]",
		Short: "Move an inactive share group's start offsets",
		Long: `Reset where an empty share group (no members: stop its consumers first)
starts delivering, for every partition of the --topic topics: the log start
(--to-earliest), the end (--to-latest) or an offset (--to-offset). Records
in flight are forgotten. Without --execute it only prints the plan, as
kafka-share-groups.sh --reset-offsets --dry-run does.`,
		Example: `  tributary share-group reset-offsets orders-workers --topic orders --to-earliest
  tributary share-group reset-offsets orders-workers --topic orders --to-offset 1200 --execute`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			group := args[0]
			n := 0
			for _, b := range []bool{earliest, latest, toOffset >= 0} {
				if b {
					n++
				}
			}
			if n != 1 {
				return fmt.Errorf("give exactly one of --to-earliest, --to-latest and --to-offset (N >= 0)")
			}
			if len(topics) == 0 {
				return fmt.Errorf("--topic is required")
			}
			return withShareAdmin(cmd, *bootstrap, func(ctx context.Context, adm *kadm.Client) error {
				var listed kadm.ListedOffsets
				var err error
				if latest {
					listed, err = adm.ListEndOffsets(ctx, topics...)
				} else {
					listed, err = adm.ListStartOffsets(ctx, topics...)
				}
				if err != nil {
					return err
				}
				if err := listed.Error(); err != nil {
					return err
				}
				offsets := kadm.Offsets{}
				listed.Each(func(o kadm.ListedOffset) {
					at := o.Offset
					if toOffset >= 0 {
						at = toOffset
					}
					offsets.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: at})
				})
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TOPIC\tPARTITION\tNEW-OFFSET")
				for _, o := range offsets.Sorted() {
					fmt.Fprintf(tw, "%s\t%d\t%d\n", o.Topic, o.Partition, o.At)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if !execute {
					fmt.Fprintln(cmd.OutOrStdout(), "(dry run: add --execute to apply)")
					return nil
				}
				resps, err := adm.AlterShareGroupOffsets(ctx, group, offsets)
				if err != nil {
					return fmt.Errorf("share group %q: %w", group, err)
				}
				return resps.Error()
			})
		},
	}
	cmd.Flags().StringSliceVar(&topics, "topic", nil, "topics to reset (repeatable or comma-separated)")
	cmd.Flags().BoolVar(&earliest, "to-earliest", false, "to the log start offset")
	cmd.Flags().BoolVar(&latest, "to-latest", false, "to the log end offset")
	cmd.Flags().Int64Var(&toOffset, "to-offset", -1, "to this offset")
	cmd.Flags().BoolVar(&execute, "execute", false, "apply the reset (default: print the plan)")
	return cmd
}

func newShareGroupDeleteCommand(bootstrap *string) *cobra.Command {
	return &cobra.Command{
		Use:   "delete GROUP...",
		Short: "Delete empty share groups and their offsets",
		Long: `Delete share groups that have no members, with their start offsets and
in-flight state, as kafka-share-groups.sh --delete. A group with members is
refused (NON_EMPTY_GROUP): stop its consumers first.`,
		Example: `  tributary share-group delete orders-workers`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withShareAdmin(cmd, *bootstrap, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.DeleteGroups(ctx, args...)
				if err != nil {
					return err
				}
				failed := false
				for _, g := range args {
					r, ok := resps[g]
					switch {
					case !ok:
						fmt.Fprintf(cmd.OutOrStdout(), "%s: no answer\n", g)
						failed = true
					case r.Err != nil:
						fmt.Fprintf(cmd.OutOrStdout(), "%s: %v\n", g, r.Err)
						failed = true
					default:
						fmt.Fprintf(cmd.OutOrStdout(), "%s: deleted\n", g)
					}
				}
				if failed {
					return fmt.Errorf("not every share group was deleted")
				}
				return nil
			})
		},
	}
}
