package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

// reassignPlan is Kafka's reassignment JSON, the format
// kafka-reassign-partitions.sh reads and writes, so that a plan made by
// either tool runs with the other:
//
//	{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,3]}]}
//
// The first replica is the preferred leader. Kafka's optional "log_dirs"
// (one per replica) is accepted when every entry is "any": moving replicas
// between the log dirs of one broker is not supported.
type reassignPlan struct {
	Version    int                 `json:"version"`
	Partitions []reassignPartition `json:"partitions"`
}

type reassignPartition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// planVersion is the only version of the format Kafka has defined.
const planVersion = 1

// planJSON is the plan as one line of JSON, partitions sorted, as Kafka
// prints it: easy to copy from a terminal into a file.
func planJSON(parts []reassignPartition) string {
	parts = slices.Clone(parts)
	sortPartitions(parts)
	b, _ := json.Marshal(reassignPlan{Version: planVersion, Partitions: parts}) // cannot fail: plain types
	return string(b)
}

func sortPartitions(parts []reassignPartition) {
	sort.Slice(parts, func(i, j int) bool {
		a, b := parts[i], parts[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
}

// parsePlan reads a plan and checks it: version 1, at least one partition,
// each named once, with distinct non-negative replica ids. Errors name the
// file and the entry. Unknown fields are errors, so that a typo such as
// "replica" is not read as an empty list.
func parsePlan(name string, data []byte) ([]reassignPartition, error) {
	var raw struct {
		Version    *int `json:"version"`
		Partitions []struct {
			Topic     *string  `json:"topic"`
			Partition *int32   `json:"partition"`
			Replicas  []int32  `json:"replicas"`
			LogDirs   []string `json:"log_dirs"`
		} `json:"partitions"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: not a reassignment plan: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: more than one JSON value", name)
	}
	switch {
	case raw.Version == nil:
		return nil, fmt.Errorf(`%s: no "version" (want %d)`, name, planVersion)
	case *raw.Version != planVersion:
		return nil, fmt.Errorf("%s: version %d: only version %d is known", name, *raw.Version, planVersion)
	case len(raw.Partitions) == 0:
		return nil, fmt.Errorf(`%s: "partitions" is empty`, name)
	}
	type key struct {
		topic string
		p     int32
	}
	seen := map[key]int{}
	out := make([]reassignPartition, 0, len(raw.Partitions))
	for i, rp := range raw.Partitions {
		where := fmt.Sprintf("%s: partitions[%d]", name, i)
		if rp.Topic == nil || *rp.Topic == "" {
			return nil, fmt.Errorf(`%s: no "topic"`, where)
		}
		if rp.Partition == nil {
			return nil, fmt.Errorf(`%s (topic %q): no "partition"`, where, *rp.Topic)
		}
		p := reassignPartition{Topic: *rp.Topic, Partition: *rp.Partition, Replicas: rp.Replicas}
		where = fmt.Sprintf("%s (%s/%d)", where, p.Topic, p.Partition)
		if p.Partition < 0 {
			return nil, fmt.Errorf("%s: partition %d: must be >= 0", where, p.Partition)
		}
		if j, dup := seen[key{p.Topic, p.Partition}]; dup {
			return nil, fmt.Errorf("%s: the same partition as partitions[%d]", where, j)
		}
		seen[key{p.Topic, p.Partition}] = i
		if len(p.Replicas) == 0 {
			return nil, fmt.Errorf(`%s: "replicas" is empty`, where)
		}
		ids := map[int32]bool{}
		for _, r := range p.Replicas {
			if r < 0 {
				return nil, fmt.Errorf("%s: replica %d: a broker id is >= 0", where, r)
			}
			if ids[r] {
				return nil, fmt.Errorf("%s: replica %d listed twice", where, r)
			}
			ids[r] = true
		}
		if rp.LogDirs != nil {
			if len(rp.LogDirs) != len(p.Replicas) {
				return nil, fmt.Errorf(`%s: %d "log_dirs" for %d replicas`, where, len(rp.LogDirs), len(p.Replicas))
			}
			for _, d := range rp.LogDirs {
				if d != "any" {
					return nil, fmt.Errorf(`%s: log dir %q: only "any" is supported (no moves between the log dirs of a broker)`, where, d)
				}
			}
		}
		out = append(out, p)
	}
	return out, nil
}

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

// proposeAssignment places each partition's replicas round-robin over
// brokers, keeping each partition's replication factor. Partitions are
// taken in topic, partition order and the count runs on across topics, so
// the k-th partition's replicas are brokers k, k+1, ... (mod their number):
// leaders (the first replicas) spread evenly over the brokers, and so do the
// followers. Unlike Kafka's generator it starts at a fixed broker, so the
// same input always gives the same plan.
func proposeAssignment(current []reassignPartition, brokers []int32) ([]reassignPartition, error) {
	if len(brokers) == 0 {
		return nil, errors.New("--brokers: no broker")
	}
	current = slices.Clone(current)
	sortPartitions(current)
	out := make([]reassignPartition, len(current))
	for k, p := range current {
		rf := len(p.Replicas)
		if rf > len(brokers) {
			return nil, fmt.Errorf("%s/%d has %d replicas but --brokers names only %d brokers (%s)", p.Topic, p.Partition, rf, len(brokers), joinInts(brokers))
		}
		replicas := make([]int32, rf)
		for j := range replicas {
			replicas[j] = brokers[(k+j)%len(brokers)]
		}
		out[k] = reassignPartition{Topic: p.Topic, Partition: p.Partition, Replicas: replicas}
	}
	return out, nil
}

// currentAssignment is the replica lists of topics' partitions as the
// metadata says; a topic that does not exist is an error naming it.
func currentAssignment(md kadm.Metadata, topics []string) ([]reassignPartition, error) {
	var out []reassignPartition
	for _, t := range topics {
		td, ok := md.Topics[t]
		if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("topic %q %w", t, kafkacli.ErrUnknownTopic)
		}
		if td.Err != nil {
			return nil, fmt.Errorf("topic %q: %w", t, td.Err)
		}
		for _, pd := range td.Partitions.Sorted() {
			out = append(out, reassignPartition{Topic: t, Partition: pd.Partition, Replicas: pd.Replicas})
		}
	}
	return out, nil
}

// checkPlanAgainst refuses a plan that names a partition or a broker the
// cluster does not have, before anything is sent: the controller would
// refuse it too, but with less of a clue which entry was wrong.
func checkPlanAgainst(md kadm.Metadata, plan []reassignPartition) error {
	alive := md.Brokers.NodeIDs()
	for _, p := range plan {
		td, ok := md.Topics[p.Topic]
		if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("topic %q %w", p.Topic, kafkacli.ErrUnknownTopic)
		}
		if _, ok := td.Partitions[p.Partition]; !ok {
			return fmt.Errorf("%s/%d: topic %q has %d partitions", p.Topic, p.Partition, p.Topic, len(td.Partitions))
		}
		for _, r := range p.Replicas {
			if !slices.Contains(alive, r) {
				return fmt.Errorf("%s/%d: broker %d is not in the cluster (brokers: %s)", p.Topic, p.Partition, r, joinInts(alive))
			}
		}
	}
	return nil
}

func planTopics(plan []reassignPartition) []string {
	var ts []string
	for _, p := range plan {
		if !slices.Contains(ts, p.Topic) {
			ts = append(ts, p.Topic)
		}
	}
	return ts
}

func readPlan(path string) ([]reassignPartition, error) {
	if path == "" {
		return nil, errors.New("--file: required (a plan from reassign generate)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--file: %w", err)
	}
	return parsePlan(path, data)
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
Replication throttles (--throttle) are not supported yet.`,
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
				cur, err := currentAssignment(md, topics)
				if err != nil {
					return err
				}
				prop, err := proposeAssignment(cur, ids)
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "Current partition replica assignment\n%s\n\nProposed partition reassignment configuration\n%s\n", planJSON(cur), planJSON(prop))
				return nil
			})
		},
	}
	cmd.Flags().StringSliceVar(&topics, "topics", nil, "topics to move (comma-separated or repeated)")
	cmd.Flags().StringVar(&brokers, "brokers", "", "broker ids to place the replicas on, e.g. 1,2,3")
	return cmd
}

// planCommand completes cmd, a reassign subcommand that acts on a plan:
// its --file flag, and a RunE that reads the plan and calls run with an
// admin client.
func planCommand(bootstrap *string, cmd *cobra.Command, run func(ctx context.Context, cmd *cobra.Command, adm *kadm.Client, file string, plan []reassignPartition) error) *cobra.Command {
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
	return cmd
}

func newReassignExecuteCommand(bootstrap *string) *cobra.Command {
	return planCommand(bootstrap, &cobra.Command{
		Use:   "execute",
		Short: "Start moving replicas as a plan file says",
		Long: `Read a plan (Kafka's reassignment JSON, as "reassign generate" prints
it), check that every partition and broker it names exists, print the
current assignment of its partitions (save it: executing that is the
rollback), then send the plan to the controller
(AlterPartitionReassignments). The move runs in the background: new
replicas catch up, join the ISR, then the old ones are dropped. Follow it
with "reassign verify". Prints each partition's answer and fails if the
controller refused any.`,
		Example: `  tributary cluster reassign execute --file plan.json | tee rollback.txt

  # Roll back: the JSON line printed under "Save this to roll back".
  sed -n 2p rollback.txt > rollback.json
  tributary cluster reassign execute --file rollback.json`,
	}, func(ctx context.Context, cmd *cobra.Command, adm *kadm.Client, file string, plan []reassignPartition) error {
		md, err := adm.Metadata(ctx, planTopics(plan)...)
		if err != nil {
			return err
		}
		if err := checkPlanAgainst(md, plan); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		var cur []reassignPartition
		var req kadm.AlterPartitionAssignmentsReq
		for _, p := range plan {
			cur = append(cur, reassignPartition{Topic: p.Topic, Partition: p.Partition, Replicas: md.Topics[p.Topic].Partitions[p.Partition].Replicas})
			req.Assign(p.Topic, p.Partition, p.Replicas)
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "Save this to roll back (reassign execute --file with it):\n%s\n\n", planJSON(cur))
		res, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil {
			return apiError("AlterPartitionReassignments", kmsg.AlterPartitionAssignments.Int16(), err)
		}
		return reportReassignStart(w, plan, res)
	})
}

// reportReassignStart prints the controller's answer for each partition
// of the plan and returns the refusals.
func reportReassignStart(w io.Writer, plan []reassignPartition, res kadm.AlterPartitionAssignmentsResponses) error {
	plan = slices.Clone(plan)
	sortPartitions(plan)
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
script can wait with: until tributary cluster reassign verify ...; do sleep 10; done`,
		Example: `  tributary cluster reassign verify --file plan.json

  # Wait for the move to finish.
  until tributary cluster reassign verify -f plan.json >/dev/null 2>&1; do sleep 10; done`,
	}, func(ctx context.Context, cmd *cobra.Command, adm *kadm.Client, _ string, plan []reassignPartition) error {
		var set kadm.TopicsSet
		for _, p := range plan {
			set.Add(p.Topic, p.Partition)
		}
		ongoing, err := adm.ListPartitionReassignments(ctx, set)
		if err != nil {
			return apiError("ListPartitionReassignments", kmsg.ListPartitionReassignments.Int16(), err)
		}
		md, err := adm.Metadata(ctx, planTopics(plan)...)
		if err != nil {
			return err
		}
		return reportVerify(cmd.OutOrStdout(), plan, md, ongoing)
	})
}

// reassignStatus is one partition's state against its plan entry: cur is
// its replicas now (nil when the metadata has no such partition), ongoing
// its running reassignment if the controller lists one.
func reassignStatus(want reassignPartition, cur []int32, ongoing *kadm.ListPartitionReassignmentsResponse) (status string, done bool) {
	switch {
	case ongoing != nil:
		s := "in progress"
		if len(ongoing.AddingReplicas) > 0 || len(ongoing.RemovingReplicas) > 0 {
			s += fmt.Sprintf(" (adding %s; removing %s)", joinInts(ongoing.AddingReplicas), joinInts(ongoing.RemovingReplicas))
		}
		return s, false
	case cur == nil:
		return "missing: the cluster has no such partition", false
	case slices.Equal(cur, want.Replicas):
		return "complete", true
	default:
		return fmt.Sprintf("differs: replicas are %s, the plan says %s", joinInts(cur), joinInts(want.Replicas)), false
	}
}

func reportVerify(w io.Writer, plan []reassignPartition, md kadm.Metadata, ongoing kadm.ListPartitionReassignmentsResponses) error {
	plan = slices.Clone(plan)
	sortPartitions(plan)
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
		status, done := reassignStatus(p, cur, on)
		tab.row(done, p.Topic, p.Partition, status)
	}
	return tab.close("reassignment not complete:")
}
