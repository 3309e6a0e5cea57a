package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
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

func newClusterCommand() *cobra.Command {
	var bootstrap string
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Describe the cluster, check its replicas, elect leaders, reassign partitions, unregister brokers",
		Long: `Commands about the cluster as a whole, over the Kafka protocol: they work
against Tributary and Apache Kafka alike. docs/cluster.md says how nodes form
a cluster.`,
		Example: `  tributary cluster describe -b 127.0.0.1:9192
  tributary cluster check-replicas -b 127.0.0.1:9192
  tributary cluster elect-leaders -b 127.0.0.1:9192
  tributary cluster reassign generate --topics web --brokers 2,3,4 -b 127.0.0.1:9192
  tributary cluster unregister --id 4 -b 127.0.0.1:9192`,
	}
	addBootstrapFlag(cmd.PersistentFlags(), &bootstrap)
	cmd.AddCommand(newClusterDescribeCommand(&bootstrap))
	cmd.AddCommand(newClusterCheckReplicasCommand(&bootstrap))
	cmd.AddCommand(newClusterElectLeadersCommand(&bootstrap))
	cmd.AddCommand(newClusterReassignCommand(&bootstrap))
	cmd.AddCommand(newClusterUnregisterCommand(&bootstrap))
	return cmd
}

func newClusterDescribeCommand(bootstrap *string) *cobra.Command {
	return &cobra.Command{
		Use:   "describe",
		Short: "List the brokers, the active controller and each broker's share of the partitions",
		Long: `Print the cluster id, the active controller, the controller quorum (its
leader, epoch and metadata high watermark, the voters and the broker-only
nodes that follow the metadata log as observers), and for each broker that
is alive (registered and not fenced) its address, rack, how many partitions
it leads and how many replicas it holds; then how many partitions have no
leader (offline: their only in-sync replica is on a broker that is down),
how many have fewer in-sync replicas than replicas (under-replicated), and
how many are led by another than their preferred replica (what
'tributary cluster elect-leaders' moves back).`,
		Example: `  tributary cluster describe
  tributary cluster describe -b 127.0.0.1:9192,127.0.0.1:9292`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := kafkacli.Connect(cmd.Context(), *bootstrap)
			if err != nil {
				return err
			}
			defer cl.Close()
			info, err := cl.Describe(cmd.Context())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			q, qerr := describeQuorum(cmd, *bootstrap)
			if qerr == nil {
				// Metadata names a broker that forwards when the active
				// controller is a controller-only node; the quorum knows.
				info.ControllerID = q.LeaderID
			}
			fmt.Fprintf(w, "CLUSTER     %s\nCONTROLLER  %d\n", info.ID, info.ControllerID)
			if qerr == nil {
				fmt.Fprintf(w, "QUORUM      epoch %d, metadata high watermark %d; voters %s; observers %s\n",
					q.LeaderEpoch, q.HighWatermark, replicaIDs(q.CurrentVoters), replicaIDs(q.Observers))
			}
			fmt.Fprintf(w, "TOPICS      %d\nPARTITIONS  %d (%d offline, %d under-replicated, %d not on their preferred leader)\n\n",
				info.Topics, info.Partitions, info.Offline, info.UnderReplicated, info.NotPreferred)
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "BROKER\tADDRESS\tRACK\tLEADS\tREPLICAS\tOFFLINE-REPLICAS\tCONTROLLER")
			for _, b := range info.Brokers {
				rack, ctrl := b.Rack, ""
				if rack == "" {
					rack = "-"
				}
				if b.ID == info.ControllerID {
					ctrl = "*"
				}
				fmt.Fprintf(tw, "%d\t%s:%d\t%s\t%d\t%d\t%d\t%s\n", b.ID, b.Host, b.Port, rack, b.Leads, b.Replicas, b.OfflineReplicaOf, ctrl)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			var ids []int32
			for _, b := range info.Brokers {
				ids = append(ids, int32(b.ID))
			}
			withKadm(cmd, *bootstrap, 10*time.Second, func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) error {
				printOpenListeners(ctx, w, adm, ids)
				return nil
			})
			return nil
		},
	}
}

// describeQuorum asks for the metadata quorum (DescribeQuorum, KIP-595), as
// kafka-metadata-quorum describe --status does.
func describeQuorum(cmd *cobra.Command, bootstrap string) (*kmsg.DescribeQuorumResponseTopicPartition, error) {
	var out *kmsg.DescribeQuorumResponseTopicPartition
	err := withKadm(cmd, bootstrap, 10*time.Second, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return errors.New("DescribeQuorum: no answer for __cluster_metadata-0")
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return err
		}
		out = &p
		return nil
	})
	return out, err
}

func replicaIDs(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) string {
	if len(rs) == 0 {
		return "-"
	}
	ids := make([]int, 0, len(rs))
	for _, r := range rs {
		ids = append(ids, int(r.ReplicaID))
	}
	slices.Sort(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	return strings.Join(parts, ",")
}
