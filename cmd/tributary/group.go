package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

func newGroupCommand() *cobra.Command {
	var bootstrap string
	cmd := &cobra.Command{
		Use:     "group",
		Aliases: []string{"groups"},
		Short:   "List, describe, reset the offsets of and delete consumer groups",
		Long: `Manage the consumer groups of a cluster over the Kafka protocol, as
kafka-consumer-groups.sh does: it works against Tributary and Apache Kafka
alike.

Every subcommand connects to --bootstrap (default localhost:9092; also
TRIBUTARY_BOOTSTRAP or "bootstrap:" in the --config file). Groups are the
classic (JoinGroup) consumer groups that kafka-go, librdkafka and the Java
client with group.protocol=classic form.`,
		Example: `  tributary group list --state Stable
  tributary group describe orders-app
  tributary group reset-offsets orders-app --topic orders --to-earliest --execute
  tributary group delete orders-app`,
	}
	addBootstrapFlag(cmd.PersistentFlags(), &bootstrap)
	cmd.AddCommand(
		newGroupListCommand(&bootstrap),
		newGroupDescribeCommand(&bootstrap),
		newGroupResetOffsetsCommand(&bootstrap),
		newGroupDeleteCommand(&bootstrap),
	)
	return cmd
}

func newGroupListCommand(bootstrap *string) *cobra.Command {
	var states []string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List consumer groups with their state and protocol type",
		Long: `List the groups of every broker (ListGroups) with their state
(DescribeGroups), sorted by id.

STATE is the coordinator's: Empty (no members, offsets kept), Stable,
PreparingRebalance, CompletingRebalance, or Dead. PROTOCOL-TYPE is
"consumer" for consumer groups; it is empty for a group that only ever had
offsets committed (a consumer without group management, or reset-offsets
on a new group).

--state keeps the groups in any of the given states (repeatable or
comma-separated, case-insensitive), as kafka-consumer-groups.sh --list
--state.`,
		Example: `  # Every group.
  tributary group list

  # Groups no consumer is running for.
  tributary group list --state Empty

  # Groups consuming or about to.
  tributary group list --state stable,preparingrebalance,completingrebalance`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			want := map[string]bool{}
			for _, s := range states {
				s = strings.ToLower(strings.TrimSpace(s))
				if !slices.Contains([]string{"empty", "stable", "preparingrebalance", "completingrebalance", "dead", "assigning", "reconciling"}, s) {
					return fmt.Errorf("--state %q: want Empty, Stable, PreparingRebalance, CompletingRebalance or Dead", s)
				}
				want[s] = true
			}
			return withCluster(cmd, *bootstrap, func(ctx context.Context, cl *kafkacli.Cluster) error {
				groups, err := cl.ListGroups(ctx)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL-TYPE")
				for _, g := range groups {
					if len(want) > 0 && !want[strings.ToLower(g.State)] {
						continue
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", g.ID, dash(g.State), dash(g.ProtocolType))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringSliceVarP(&states, "state", "s", nil, "only groups in these states (repeatable or comma-separated)")
	mirrorKafka(cmd, "kafka-consumer-groups.sh --list", map[string]string{"state": "state"})
	return cmd
}

func newGroupDescribeCommand(bootstrap *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe GROUP",
		Short: "Show a group's members, committed offsets and lag",
		Long: `Describe a consumer group: its state, its members and their assigned
partitions, and for every partition that is assigned or has a committed
offset the numbers kafka-consumer-groups.sh --describe shows:

  CURRENT-OFFSET   the group's committed offset ("-": none)
  LOG-END-OFFSET   the partition's high watermark
  LAG              LOG-END-OFFSET - CURRENT-OFFSET ("-" if either is unknown)
  CONSUMER-ID      the member the partition is assigned to ("-": none)

Where an open transaction holds a partition's last stable offset below its
log end, a second table shows it, with STABLE-LAG = LAST-STABLE-OFFSET -
CURRENT-OFFSET: all that a read_committed consumer (the loader among them)
can read now. Kafka's tool shows no such table.

A consumer-protocol (KIP-848) group shows its group epoch and, per member,
its PROTOCOL (consumer, or classic for a member still using JoinGroup in a
group migrating between the protocols), its EPOCH, the PARTITIONS it owns
and its TARGET assignment (they differ while it reconciles).

Rows are sorted by topic and partition. An unknown group is an error.`,
		Example: `  tributary group describe orders-app

  # Total lag of a group.
  tributary group describe orders-app | awk '$5 ~ /^[0-9]+$/ && NF >= 6 { s += $5 } END { print s }'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withCluster(cmd, *bootstrap, func(ctx context.Context, cl *kafkacli.Cluster) error {
				d, rows, err := cl.GroupLag(ctx, args[0])
				if err != nil {
					return err
				}
				return printGroup(cmd.OutOrStdout(), d, rows)
			})
		},
	}
	kafkaArgFlag(cmd, "group", "the group to describe", false)
	mirrorKafka(cmd, "kafka-consumer-groups.sh --describe", map[string]string{"group": "group"})
	return cmd
}

func printGroup(w io.Writer, d *kafkacli.GroupDescription, rows []kafkacli.PartitionLag) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL-TYPE\tASSIGNOR\tMEMBERS")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", d.ID, dash(d.State), dash(d.ProtocolType), dash(d.Protocol), len(d.Members))
	tw.Flush()

	fmt.Fprintln(w)
	if len(d.Members) == 0 {
		fmt.Fprintf(w, "Group %q has no active members.\n", d.ID)
	} else if d.Epoch > 0 {
		// A KIP-848 group: each member's epoch and its target beside what
		// it owns now (they differ while it reconciles).
		fmt.Fprintf(w, "Group epoch %d.\n", d.Epoch)
		// PROTOCOL: classic for a member that still joins with JoinGroup
		// (a group migrating between the protocols).
		fmt.Fprintln(tw, "MEMBER-ID\tCLIENT-ID\tHOST\tPROTOCOL\tEPOCH\tPARTITIONS\tTARGET")
		for _, m := range d.Members {
			t := kafkacli.GroupMember{Assignment: m.Target}
			proto := "consumer"
			if m.Classic {
				proto = "classic"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", m.ID, dash(m.ClientID), dash(m.Host), proto, m.Epoch, m.AssignedPartitions(), t.AssignedPartitions())
		}
		tw.Flush()
	} else {
		fmt.Fprintln(tw, "MEMBER-ID\tCLIENT-ID\tHOST\tPARTITIONS")
		for _, m := range d.Members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.ID, dash(m.ClientID), dash(m.Host), m.AssignedPartitions())
		}
		tw.Flush()
	}

	fmt.Fprintln(w)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID")
	var errs []error
	for _, r := range rows {
		consumer := "-"
		if r.Member != nil {
			consumer = r.Member.ID
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", r.Topic, r.Partition, offsetOrDash(r.Committed), offsetOrDash(r.LogEnd), lagOrDash(r), consumer)
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("log end offset of %q partition %d: %w", r.Topic, r.Partition, r.Err))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printHeldBack(w, rows); err != nil {
		return err
	}
	return errors.Join(errs...)
}

func newGroupResetOffsetsCommand(bootstrap *string) *cobra.Command {
	var (
		topics                []string
		toEarliest, toLatest  bool
		toDatetime            string
		toOffset, shiftBy     int64
		execute, dryRun       bool
		toOffsetSet, shiftSet bool
	)
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP --topic TOPIC[:PARTITIONS] (--to-earliest | --to-latest | --to-datetime T | --to-offset N | --shift-by N)",
		Short: "Move a group's committed offsets",
		Long: `Set the committed offsets of GROUP in the partitions of the --topic
flags, as kafka-consumer-groups.sh --reset-offsets does.

--topic TOPIC takes every partition of TOPIC; TOPIC:0,2 only partitions 0
and 2. It can be repeated.

Give exactly one target:
  --to-earliest       the oldest offset the partition still holds
  --to-latest         the log end offset: skip everything not yet read
  --to-datetime T     the first record at or after T (RFC 3339, e.g.
                      2024-05-01T09:00:00Z); the log end if none is
  --to-offset N       offset N
  --shift-by N        the committed offset plus N (N may be negative); the
                      partition must have a committed offset
A new offset outside the partition's range is moved to its nearest end, as
Kafka does.

It prints the plan (TOPIC, PARTITION, CURRENT-OFFSET, NEW-OFFSET) and, with
--execute, commits it; without --execute (or with --dry-run) nothing
changes. Offsets can only be reset while the group has no active members:
stop its consumers first, otherwise the command refuses, as Kafka does. A
group that does not exist yet is created with the new offsets.`,
		Example: `  # See what replaying orders from the start would do, then do it.
  tributary group reset-offsets orders-app --topic orders --to-earliest
  tributary group reset-offsets orders-app --topic orders --to-earliest --execute

  # Skip the backlog of partitions 0 and 3.
  tributary group reset-offsets orders-app --topic orders:0,3 --to-latest --execute

  # Re-read the last 100 records of every partition, and everything since 9:00.
  tributary group reset-offsets orders-app --topic orders --shift-by -100 --execute
  tributary group reset-offsets billing --topic payments --to-datetime 2024-05-01T09:00:00Z --execute`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			group := args[0]
			toOffsetSet, shiftSet = cmd.Flags().Changed("to-offset"), cmd.Flags().Changed("shift-by")
			var target kafkacli.ResetTarget
			var given []string
			if toEarliest {
				given, target = append(given, "--to-earliest"), kafkacli.ResetTarget{Kind: kafkacli.ResetEarliest}
			}
			if toLatest {
				given, target = append(given, "--to-latest"), kafkacli.ResetTarget{Kind: kafkacli.ResetLatest}
			}
			if toDatetime != "" {
				t, err := parseTimestamp(toDatetime)
				if err != nil {
					return fmt.Errorf("--to-datetime %q: want RFC 3339, e.g. 2024-05-01T09:00:00Z", toDatetime)
				}
				given, target = append(given, "--to-datetime"), kafkacli.ResetTarget{Kind: kafkacli.ResetTime, Time: t}
			}
			if toOffsetSet {
				if toOffset < 0 {
					return fmt.Errorf("--to-offset %d: want an offset, 0 or more", toOffset)
				}
				given, target = append(given, "--to-offset"), kafkacli.ResetTarget{Kind: kafkacli.ResetOffset, Offset: toOffset}
			}
			if shiftSet {
				given, target = append(given, "--shift-by"), kafkacli.ResetTarget{Kind: kafkacli.ResetShift, Offset: shiftBy}
			}
			if len(given) != 1 {
				what := "none"
				if len(given) > 1 {
					what = strings.Join(given, " and ")
				}
				return fmt.Errorf("give exactly one of --to-earliest, --to-latest, --to-datetime, --to-offset and --shift-by (got %s)", what)
			}
			if execute && dryRun {
				return errors.New("--execute and --dry-run: give at most one")
			}
			if len(topics) == 0 {
				return errors.New("--topic is required: the topic whose offsets to reset, as TOPIC or TOPIC:0,1,2")
			}
			parts := map[string][]int{}
			for _, s := range topics {
				name, ps, err := parseTopicPartitions(s)
				if err != nil {
					return err
				}
				if old, seen := parts[name]; seen && (len(old) == 0 || len(ps) == 0) {
					parts[name] = nil // all partitions
				} else {
					parts[name] = append(old, ps...)
				}
			}
			for name, ps := range parts {
				slices.Sort(ps)
				parts[name] = slices.Compact(ps)
			}
			return withCluster(cmd, *bootstrap, func(ctx context.Context, cl *kafkacli.Cluster) error {
				descs, err := cl.DescribeGroups(ctx, []string{group})
				if err != nil {
					return err
				}
				d := descs[group]
				if d.Err != nil && !errors.Is(d.Err, kafkacli.ErrUnknownGroup) {
					return d.Err
				}
				if d.Active() {
					return fmt.Errorf("offsets of group %q can only be reset while it is inactive, but its state is %s with %d member(s): stop its consumers first (tributary group describe %s shows them)", group, d.State, len(d.Members), group)
				}
				plan, err := cl.PlanReset(ctx, group, parts, target)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TOPIC\tPARTITION\tCURRENT-OFFSET\tNEW-OFFSET")
				for _, r := range plan {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", r.Topic, r.Partition, offsetOrDash(r.Current), r.New)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if !execute {
					fmt.Fprintln(cmd.ErrOrStderr(), "dry run: nothing committed; add --execute to commit these offsets")
					return nil
				}
				if err := cl.CommitOffsets(ctx, group, plan); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "committed %d offset(s) for group %q\n", len(plan), group)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&topics, "topic", "t", nil, "TOPIC or TOPIC:0,1,2 whose offsets to reset (repeatable)")
	f.BoolVar(&toEarliest, "to-earliest", false, "reset to the oldest offset still kept")
	f.BoolVar(&toLatest, "to-latest", false, "reset to the log end offset")
	f.StringVar(&toDatetime, "to-datetime", "", "reset to the first offset at or after this time (RFC 3339)")
	f.Int64Var(&toOffset, "to-offset", 0, "reset to this offset")
	f.Int64Var(&shiftBy, "shift-by", 0, "move the committed offset by this many records (negative: back)")
	f.BoolVar(&execute, "execute", false, "commit the new offsets (default: only print the plan)")
	f.BoolVar(&dryRun, "dry-run", false, "only print the plan (the default)")
	kafkaArgFlag(cmd, "group", "the group whose offsets to reset", false)
	mirrorKafka(cmd, "kafka-consumer-groups.sh --reset-offsets", map[string]string{"group": "group", "topic": "topic",
		"to-earliest": "to-earliest", "to-latest": "to-latest", "to-datetime": "to-datetime", "to-offset": "to-offset",
		"shift-by": "shift-by", "execute": "execute", "dry-run": "dry-run"})
	return cmd
}

// parseTopicPartitions reads TOPIC or TOPIC:0,1,2; no partitions means all.
func parseTopicPartitions(s string) (string, []int, error) {
	name, list, hasList := strings.Cut(s, ":")
	if name == "" {
		return "", nil, fmt.Errorf("--topic %q: want TOPIC or TOPIC:0,1,2", s)
	}
	if !hasList {
		return name, nil, nil
	}
	var ps []int
	for _, f := range strings.Split(list, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 0 || p > math.MaxInt32 {
			return "", nil, fmt.Errorf("--topic %q: %q is not a partition number; want TOPIC or TOPIC:0,1,2", s, f)
		}
		ps = append(ps, p)
	}
	return name, ps, nil
}

func newGroupDeleteCommand(bootstrap *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete GROUP...",
		Short: "Delete consumer groups and their committed offsets",
		Long: `Delete groups by exact id (DeleteGroups): their committed offsets go
away. Only groups with no active members can be deleted: stop their
consumers first.

Prints each group with OK or the coordinator's reason, and fails if any
group could not be deleted (an unknown group included).`,
		Example: `  tributary group delete orders-app
  tributary group delete old-app-1 old-app-2 --bootstrap kafka-1:9092`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			return withCluster(cmd, *bootstrap, func(ctx context.Context, cl *kafkacli.Cluster) error {
				errs, err := cl.DeleteGroups(ctx, ids)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "GROUP\tSTATUS")
				var failed []error
				for _, id := range ids {
					status := "OK"
					if err := errs[id]; err != nil {
						status = err.Error()
						failed = append(failed, fmt.Errorf("group %q: %w", id, err))
					}
					fmt.Fprintf(tw, "%s\t%s\n", id, status)
				}
				tw.Flush()
				return errors.Join(failed...)
			})
		},
	}
	kafkaArgFlag(cmd, "group", "a group to delete", false)
	mirrorKafka(cmd, "kafka-consumer-groups.sh --delete", map[string]string{"group": "group"})
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func offsetOrDash(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

func lagOrDash(r kafkacli.PartitionLag) string {
	if r.Committed < 0 || r.LogEnd < 0 {
		return "-"
	}
	return strconv.FormatInt(r.Lag, 10)
}
