package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

// withKadm runs fn with a franz-go client and its admin wrapper, bounded by
// timeout (0: no bound but kgo's per-request one). The cluster subcommands
// that need APIs kafka-go lacks (ElectLeaders, partition reassignments, a
// Fetch sent to one chosen replica) use it instead of withCluster. kgo
// connects lazily, so an unreachable cluster shows up as the first
// request's error.
func withKadm(cmd *cobra.Command, bootstrap string, timeout time.Duration, fn func(context.Context, *kgo.Client, *kadm.Client) error) error {
	seeds, err := kafkacli.ParseBootstrap(bootstrap)
	if err != nil {
		return err
	}
	security, err := kafkacli.ClientOpts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID(kafkacli.ClientID),
		kgo.DialTimeout(10 * time.Second),
		// A command is interactive: give up on a dead address after a
		// few seconds, not kgo's default of retrying for 30s per request.
		kgo.RetryTimeout(10 * time.Second),
	}, security...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := cmd.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	err = fn(ctx, cl, kadm.NewClient(cl))
	if timeout > 0 && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer from %s within %s: %w", bootstrap, timeout, err)
	}
	return err
}

// apiError names the request that failed. When the broker does not serve
// the API at all, kgo says "broker is too old"; for Tributary, which is not
// old but may not have the API yet, the request's name and key say more.
// kgo's sentinel for it is unexported, hence the match on its text.
func apiError(name string, key int16, err error) error {
	if strings.Contains(err.Error(), "broker is too old") {
		return fmt.Errorf("%s: the broker does not support this request (API key %d)", name, key)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// resultTable is the report of a cluster command that acts on partitions:
// a row per partition, columns aligned, and an error at the end when any
// row failed.
type resultTable struct {
	tw           *tabwriter.Writer
	rows, failed int
}

// newResultTable starts a table with its header, columns separated by tabs.
func newResultTable(w io.Writer, header string) *resultTable {
	t := &resultTable{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	fmt.Fprintln(t.tw, header)
	return t
}

// row prints one partition's cells; ok false counts it as failed.
func (t *resultTable) row(ok bool, cells ...any) {
	t.rows++
	if !ok {
		t.failed++
	}
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, c)
	}
	fmt.Fprintln(t.tw)
}

// flush prints the rows so far (the columns are aligned over them only).
func (t *resultTable) flush() error { return t.tw.Flush() }

// close flushes the table and, if any row failed, returns
// "<failure> <failed> of <rows> partitions".
func (t *resultTable) close(failure string) error {
	if err := t.flush(); err != nil {
		return err
	}
	if t.failed > 0 {
		return fmt.Errorf("%s %d of %d partitions", failure, t.failed, t.rows)
	}
	return nil
}

// electTargets checks elect-leaders' flags: how is the --type, and
// partitions are allowed only with exactly one --topic (they would be
// ambiguous with several).
func electTargets(topics []string, partitions []int32, how string) (kadm.ElectLeadersHow, error) {
	var h kadm.ElectLeadersHow
	switch strings.ToLower(how) {
	case "preferred":
		h = kadm.ElectPreferredReplica
	case "unclean":
		h = kadm.ElectLiveReplica
	default:
		return 0, fmt.Errorf("--type %q: want preferred or unclean", how)
	}
	for _, t := range topics {
		if t == "" {
			return 0, errors.New(`--topic "": a topic name cannot be empty`)
		}
	}
	for _, p := range partitions {
		if p < 0 {
			return 0, fmt.Errorf("--partition %d: must be >= 0", p)
		}
	}
	if len(partitions) > 0 && len(topics) != 1 {
		return 0, fmt.Errorf("--partition %s: needs exactly one --topic (got %d)", joinInts(partitions), len(topics))
	}
	return h, nil
}

func newClusterElectLeadersCommand(bootstrap *string) *cobra.Command {
	var (
		topics     []string
		partitions []int32
		how        string
	)
	cmd := &cobra.Command{
		Use:   "elect-leaders",
		Short: "Move partition leadership back to the preferred replica (or elect an unclean leader)",
		Long: `Ask the controller to elect leaders (ElectLeaders, KIP-183), as
kafka-leader-election.sh does.

--type preferred (the default) makes each partition's first replica, its
preferred replica, the leader again if it is in sync: run it after a
broker restart to spread leadership back. A partition whose preferred
replica already leads is reported as "not needed", not as an error;
without --topic, as Kafka's controller answers, only the partitions whose
leader changed (or failed to) are listed.
--type unclean elects any live replica for partitions that have no leader
because no in-sync replica is alive: records the new leader never
received are lost, so use it only to bring an offline partition back.

Without --topic every partition of the cluster is a candidate. --topic
(repeatable) limits it to those topics; --partition (repeatable) to those
partitions of the one --topic. Prints each partition's result and fails if
any election failed.`,
		Example: `  # After restarting broker 2: give it back the partitions it led.
  tributary cluster elect-leaders -b 127.0.0.1:9192

  # Only partitions 0 and 3 of orders.
  tributary cluster elect-leaders --topic orders --partition 0 --partition 3

  # Bring an offline partition back, accepting data loss.
  tributary cluster elect-leaders --topic orders --partition 1 --type unclean`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := electTargets(topics, partitions, how)
			if err != nil {
				return err
			}
			return withKadm(cmd, *bootstrap, adminTimeout, func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) error {
				var set kadm.TopicsSet // nil: every partition
				if len(topics) > 0 {
					if set, err = electSet(ctx, adm, topics, partitions); err != nil {
						return err
					}
				}
				res, err := adm.ElectLeaders(ctx, h, set)
				if err != nil {
					return apiError("ElectLeaders", kmsg.ElectLeaders.Int16(), err)
				}
				return reportElections(cmd, res, h)
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&topics, "topic", "t", nil, "only partitions of this topic (repeatable)")
	f.Int32SliceVarP(&partitions, "partition", "p", nil, "only this partition of the one --topic (repeatable or comma-separated)")
	f.StringVar(&how, "type", "preferred", "election type: preferred or unclean")
	var all bool
	f.BoolVar(&all, "all-topic-partitions", false, "every partition of the cluster, the default without --topic (Kafka's tool requires it or --topic)")
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if all && len(topics) > 0 {
			return errors.New("--all-topic-partitions and --topic: give one of them")
		}
		return run(cmd, args)
	}
	mirrorKafka(cmd, "kafka-leader-election.sh", map[string]string{"election-type": "type", "topic": "topic", "partition": "partition"})
	return cmd
}

// electSet names the partitions to elect: the given ones, or all of each
// topic, which ElectLeaders needs listed (an empty list means none). A
// topic or partition that does not exist is an error naming it.
func electSet(ctx context.Context, adm *kadm.Client, topics []string, partitions []int32) (kadm.TopicsSet, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, err
	}
	var set kadm.TopicsSet
	for _, t := range topics {
		td, ok := md.Topics[t]
		if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("--topic %q: %w", t, kafkacli.ErrUnknownTopic)
		}
		if td.Err != nil {
			return nil, fmt.Errorf("--topic %q: %w", t, td.Err)
		}
		if len(partitions) == 0 {
			set.Add(t, td.Partitions.Numbers()...)
			continue
		}
		for _, p := range partitions {
			if _, ok := td.Partitions[p]; !ok {
				return nil, fmt.Errorf("--partition %d: topic %q has %d partitions", p, t, len(td.Partitions))
			}
		}
		set.Add(t, partitions...)
	}
	return set, nil
}

// reportElections prints TOPIC PARTITION RESULT in order and returns the
// failures. ELECTION_NOT_NEEDED is success: the wanted replica leads.
func reportElections(cmd *cobra.Command, res kadm.ElectLeadersResults, asked kadm.ElectLeadersHow) error {
	var all []kadm.ElectLeadersResult
	for _, ps := range res {
		for _, r := range ps {
			all = append(all, r)
		}
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	if len(all) > 0 && all[0].How != asked {
		// ElectLeaders v0 has no election type: the broker did a
		// preferred election whatever was asked.
		fmt.Fprintln(cmd.ErrOrStderr(), "note: the broker only supports preferred election (ElectLeaders v0); that is what it did")
	}
	tab := newResultTable(cmd.OutOrStdout(), "TOPIC\tPARTITION\tRESULT")
	for _, r := range all {
		result, ok := "elected", true
		switch {
		case errors.Is(r.Err, kerr.ElectionNotNeeded) && asked == kadm.ElectPreferredReplica:
			result = "not needed: the preferred replica leads"
		case errors.Is(r.Err, kerr.ElectionNotNeeded):
			result = "not needed: it has a leader"
		case r.Err != nil:
			ok, result = false, "error: "+r.Err.Error()
			if r.ErrMessage != "" && !strings.Contains(result, r.ErrMessage) {
				result += ": " + r.ErrMessage
			}
		}
		tab.row(ok, r.Topic, r.Partition, result)
	}
	return tab.close("leader election failed for")
}
