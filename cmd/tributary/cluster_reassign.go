package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/reassign"
)

// parseBrokerIDs reads --brokers 1,2,3: distinct non-negative ids.
func parseBrokerIDs(s string) ([]int32, error) {
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--brokers %q: %q is not a broker id", s, f)
		}
		if slices.Contains(ids, int32(n)) {
			return nil, fmt.Errorf("--brokers %q: broker %d listed twice", s, n)
		}
		ids = append(ids, int32(n))
	}
	return ids, nil
}

func readPlan(path string) ([]reassign.Partition, error) {
	if path == "" {
		return nil, errors.New("--file: required (a plan from reassign generate)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--file: %w", err)
	}
	return reassign.Parse(path, data)
}

func newClusterReassignCommand(bootstrap *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reassign",
		Short: "Move partition replicas between brokers (generate, execute, verify a plan)",
		Long: `Move replicas between brokers in three steps, as
kafka-reassign-partitions.sh does, with the same JSON plan format:

  generate  prints the current assignment of some topics and a proposed one
            over the brokers you name;
  execute   starts a plan (AlterPartitionReassignments, KIP-455), after
            printing the current assignment to roll back to;
  verify    tells, partition by partition, whether the plan is done.

A plan is {"version":1,"partitions":[{"topic":"orders","partition":0,
"replicas":[1,2,3]}, ...]}; the first replica is the preferred leader.
execute --throttle caps the copying at so many bytes per second (Kafka's
replication throttles); verify removes the throttles once the move is done.`,
		Example: `  tributary cluster reassign generate --topics orders,payments --brokers 1,2,3,4 > out.txt
  # copy the proposed plan from out.txt into plan.json, then
  tributary cluster reassign execute --file plan.json
  tributary cluster reassign verify --file plan.json`,
	}
	cmd.AddCommand(
		newReassignGenerateCommand(bootstrap),
		newReassignExecuteCommand(bootstrap),
		newReassignVerifyCommand(bootstrap),
	)
	return cmd
}

func newReassignGenerateCommand(bootstrap *string) *cobra.Command {
	var (
		topics  []string
		brokers string
	)
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Print the current assignment of topics and a proposed one over the given brokers",
		Long: `Print two plans in Kafka's reassignment JSON: the current replica
assignment of --topics (keep it to roll back), and a proposed one that
places each partition's replicas round-robin over --brokers, keeping each
partition's replication factor. Nothing is changed: review the proposal,
save it to a file and pass it to "reassign execute".

The proposal is deterministic: the k-th partition (in topic, partition
order) gets brokers k, k+1, ... of --brokers, so leaders and followers are
spread evenly. Every --brokers id must be a broker of the cluster.`,
		Example: `  # Spread orders and payments over a fourth broker.
  tributary cluster reassign generate --topics orders,payments --brokers 1,2,3,4

  # Take the proposal only, into a file.
  tributary cluster reassign generate --topics orders --brokers 2,3,4 | tail -n 1 > plan.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(topics) == 0 {
				return errors.New("--topics: required, e.g. --topics orders,payments")
			}
			for _, t := range topics {
				if t == "" {
					return fmt.Errorf("--topics %q: empty topic name", strings.Join(topics, ","))
				}
			}
			if brokers == "" {
				return errors.New("--brokers: required, e.g. --brokers 1,2,3")
			}
			ids, err := parseBrokerIDs(brokers)
			if err != nil {
				return err
			}
			return withKadm(cmd, *bootstrap, adminTimeout, func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) error {
				md, err := adm.Metadata(ctx, topics...)
				if err != nil {
					return err
				}
				alive := md.Brokers.NodeIDs()
				for _, id := range ids {
					if !slices.Contains(alive, id) {
						return fmt.Errorf("--brokers %q: broker %d is not in the cluster (brokers: %s)", brokers, id, joinInts(alive))
					}
				}
				cur, err := reassign.Current(md, topics)
				if err != nil {
					return err
				}
				prop, err := reassign.Propose(cur, ids)
				if err != nil {
					return fmt.Errorf("--brokers %q: %w", brokers, err)
				}
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "Current partition replica assignment\n%s\n\nProposed partition reassignment configuration\n%s\n", reassign.JSON(cur), reassign.JSON(prop))
				return nil
			})
		},
	}
	cmd.Flags().StringSliceVar(&topics, "topics", nil, "topics to move (comma-separated or repeated)")
	cmd.Flags().StringVar(&brokers, "brokers", "", "broker ids to place the replicas on, e.g. 1,2,3")
	mirrorKafka(cmd, "kafka-reassign-partitions.sh --generate", map[string]string{"broker-list": "brokers"})
	return cmd
}

// planCommand completes cmd, a reassign subcommand that acts on a plan:
// its --file flag, and a RunE that reads the plan and calls run with an
// admin client.
func planCommand(bootstrap *string, cmd *cobra.Command, run func(ctx context.Context, cmd *cobra.Command, adm *kadm.Client, file string, plan []reassign.Partition) error) *cobra.Command {
	var file string
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		plan, err := readPlan(file)
		if err != nil {
			return err
		}
		return withKadm(cmd, *bootstrap, adminTimeout, func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) error {
			return run(ctx, cmd, adm, file, plan)
		})
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the plan, Kafka's reassignment JSON")
	mirrorKafka(cmd, "kafka-reassign-partitions.sh --"+cmd.Name(), map[string]string{"reassignment-json-file": "file"})
	return cmd
}

func newReassignExecuteCommand(bootstrap *string) *cobra.Command {
	var throttle int64
	cmd := planCommand(bootstrap, &cobra.Command{
		Use:   "execute",
		Short: "Start moving replicas as a plan file says",
		Long: `Read a plan (Kafka's reassignment JSON, as "reassign generate" prints
it), check that every partition and broker it names exists, print the
current assignment of its partitions (save it: executing that is the
rollback), then send the plan to the controller
(AlterPartitionReassignments). The move runs in the background: new
replicas catch up, join the ISR, then the old ones are dropped. Follow it
with "reassign verify". Prints each partition's answer and fails if the
controller refused any.

--throttle B caps the copying at B bytes per second, as
kafka-reassign-partitions --throttle does: the topics' throttled-replicas
lists name the partitions' current and new replicas, and every broker of
the move gets B as its leader and follower replication rates. Only
replicas out of the ISR are throttled. "reassign verify" removes the
throttles once every partition is complete.`,
		Example: `  tributary cluster reassign execute --file plan.json | tee rollback.txt

  # Roll back: the JSON line printed under "Save this to roll back".
  sed -n 2p rollback.txt > rollback.json
  tributary cluster reassign execute --file rollback.json`,
	}, func(ctx context.Context, cmd *cobra.Command, adm *kadm.Client, file string, plan []reassign.Partition) error {
		md, err := adm.Metadata(ctx, reassign.Topics(plan)...)
		if err != nil {
			return err
		}
		if err := reassign.Check(md, plan); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		var cur []reassign.Partition
		var req kadm.AlterPartitionAssignmentsReq
		for _, p := range plan {
			cur = append(cur, reassign.Partition{Topic: p.Topic, Partition: p.Partition, Replicas: md.Topics[p.Topic].Partitions[p.Partition].Replicas})
			req.Assign(p.Topic, p.Partition, p.Replicas)
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "Save this to roll back (reassign execute --file with it):\n%s\n\n", reassign.JSON(cur))
		if throttle >= 0 {
			if err := setThrottles(ctx, adm, reassign.PlanThrottles(cur, plan), throttle); err != nil {
				return err
			}
			fmt.Fprintf(w, "The inter-broker throttle limit was set to %d B/s\n", throttle)
		}
		res, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil {
			return apiError("AlterPartitionReassignments", kmsg.AlterPartitionAssignments.Int16(), err)
		}
		return reportReassignStart(w, plan, res)
	})
	cmd.Flags().Int64Var(&throttle, "throttle", -1, "cap the copying at this many bytes per second (replication throttles, removed by verify); -1 for none")
	return cmd
}

// setThrottles sets a move's replication throttles: the topics' lists,
// then the brokers' rates.
func setThrottles(ctx context.Context, adm *kadm.Client, th reassign.Throttles, rate int64) error {
	for topic, tt := range th.Topics {
		res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: reassign.LeaderThrottledReplicas, Value: kadm.StringPtr(tt.Leader)},
			{Op: kadm.SetConfig, Name: reassign.FollowerThrottledReplicas, Value: kadm.StringPtr(tt.Follower)},
		}, topic)
		if err = alterErr(res, err); err != nil {
			return fmt.Errorf("throttling topic %s: %w", topic, err)
		}
	}
	if len(th.Brokers) == 0 {
		return nil
	}
	v := kadm.StringPtr(strconv.FormatInt(rate, 10))
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: reassign.LeaderThrottledRate, Value: v},
		{Op: kadm.SetConfig, Name: reassign.FollowerThrottledRate, Value: v},
	}, th.Brokers...)
	if err = alterErr(res, err); err != nil {
		return fmt.Errorf("throttling brokers %s: %w", joinInts(th.Brokers), err)
	}
	return nil
}

// clearThrottles removes the replication throttles from topics and brokers.
func clearThrottles(ctx context.Context, w io.Writer, adm *kadm.Client, topics []string, brokers []int32) error {
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: reassign.LeaderThrottledRate},
		{Op: kadm.DeleteConfig, Name: reassign.FollowerThrottledRate},
	}, brokers...)
	if err = alterErr(res, err); err != nil {
		return fmt.Errorf("removing the throttles of brokers %s: %w", joinInts(brokers), err)
	}
	res, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: reassign.LeaderThrottledReplicas},
		{Op: kadm.DeleteConfig, Name: reassign.FollowerThrottledReplicas},
	}, topics...)
	if err = alterErr(res, err); err != nil {
		return fmt.Errorf("removing the throttles of topics %s: %w", strings.Join(topics, ","), err)
	}
	fmt.Fprintf(w, "Throttles removed from brokers %s and topics %s\n", joinInts(brokers), strings.Join(topics, ","))
	return nil
}

// alterErr is the first failure of an alter-configs call.
func alterErr(res kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			if r.ErrMessage != "" {
				return fmt.Errorf("%s: %w: %s", r.Name, r.Err, r.ErrMessage)
			}
			return fmt.Errorf("%s: %w", r.Name, r.Err)
		}
	}
	return nil
}

// reportReassignStart prints the controller's answer for each partition
// of the plan and returns the refusals.
func reportReassignStart(w io.Writer, plan []reassign.Partition, res kadm.AlterPartitionAssignmentsResponses) error {
	plan = slices.Clone(plan)
	reassign.Sort(plan)
	tab := newResultTable(w, "TOPIC\tPARTITION\tREPLICAS\tRESULT")
	for _, p := range plan {
		result, ok := "started", true
		r, answered := res[p.Topic][p.Partition]
		switch {
		case !answered:
			ok, result = false, "error: the controller did not answer for this partition"
		case r.Err != nil:
			ok, result = false, "error: "+r.Err.Error()
			if r.ErrMessage != "" {
				result += ": " + r.ErrMessage
			}
		}
		tab.row(ok, p.Topic, p.Partition, joinInts(p.Replicas), result)
	}
	return tab.close("the controller refused")
}

func newReassignVerifyCommand(bootstrap *string) *cobra.Command {
	return planCommand(bootstrap, &cobra.Command{
		Use:   "verify",
		Short: "Tell whether each partition of a plan has reached its new replicas",
		Long: `For each partition of a plan print:

  complete     no reassignment is running and the replicas are the plan's,
               in its order;
  in progress  the controller still moves it (ListPartitionReassignments),
               with the replicas being added and removed;
  differs      nothing is running but the replicas are not the plan's
               (the plan was not executed, was cancelled or was replaced).

The exit status is nonzero while any partition is not complete, so a
script can wait with: until tributary cluster reassign verify ...; do sleep 10; done

Once every partition is complete, the replication throttles are removed
from every broker and from the plan's topics (as kafka-reassign-partitions
--verify does), whether or not execute set them.`,
		Example: `  tributary cluster reassign verify --file plan.json

  # Wait for the move to finish.
  until tributary cluster reassign verify -f plan.json >/dev/null 2>&1; do sleep 10; done`,
	}, func(ctx context.Context, cmd *cobra.Command, adm *kadm.Client, _ string, plan []reassign.Partition) error {
		var set kadm.TopicsSet
		for _, p := range plan {
			set.Add(p.Topic, p.Partition)
		}
		ongoing, err := adm.ListPartitionReassignments(ctx, set)
		if err != nil {
			return apiError("ListPartitionReassignments", kmsg.ListPartitionReassignments.Int16(), err)
		}
		md, err := adm.Metadata(ctx, reassign.Topics(plan)...)
		if err != nil {
			return err
		}
		if err := reportVerify(cmd.OutOrStdout(), plan, md, ongoing); err != nil {
			return err
		}
		return clearThrottles(ctx, cmd.OutOrStdout(), adm, reassign.Topics(plan), md.Brokers.NodeIDs())
	})
}

func reportVerify(w io.Writer, plan []reassign.Partition, md kadm.Metadata, ongoing kadm.ListPartitionReassignmentsResponses) error {
	plan = slices.Clone(plan)
	reassign.Sort(plan)
	tab := newResultTable(w, "TOPIC\tPARTITION\tSTATUS")
	for _, p := range plan {
		var cur []int32
		if pd, ok := md.Topics[p.Topic].Partitions[p.Partition]; ok {
			cur = pd.Replicas
			if cur == nil {
				cur = []int32{}
			}
		}
		var on *kadm.ListPartitionReassignmentsResponse
		if r, ok := ongoing[p.Topic][p.Partition]; ok {
			on = &r
		}
		status, done := reassign.Status(p, cur, on)
		tab.row(done, p.Topic, p.Partition, status)
	}
	return tab.close("reassignment not complete:")
}
