package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

func newClusterCommand() *cobra.Command {
	var bootstrap string
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Describe the cluster, check its replicas, elect leaders, reassign partitions",
		Long: `Commands about the cluster as a whole, over the Kafka protocol: they work
against Tributary and Apache Kafka alike. docs/cluster.md says how nodes form
a cluster.`,
		Example: `  tributary cluster describe -b 127.0.0.1:9192
  tributary cluster check-replicas -b 127.0.0.1:9192
  tributary cluster elect-leaders -b 127.0.0.1:9192
  tributary cluster reassign generate --topics web --brokers 2,3,4 -b 127.0.0.1:9192`,
	}
	addBootstrapFlag(cmd.PersistentFlags(), &bootstrap)
	cmd.AddCommand(newClusterDescribeCommand(&bootstrap))
	cmd.AddCommand(newClusterCheckReplicasCommand(&bootstrap))
	cmd.AddCommand(newClusterElectLeadersCommand(&bootstrap))
	cmd.AddCommand(newClusterReassignCommand(&bootstrap))
	return cmd
}

func newClusterDescribeCommand(bootstrap *string) *cobra.Command {
	return &cobra.Command{
		Use:   "describe",
		Short: "List the brokers, the active controller and each broker's share of the partitions",
		Long: `Print the cluster id, the active controller, and for each broker that is
alive (registered and not fenced) its address, rack, how many partitions it
leads and how many replicas it holds; then how many partitions have no
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
			fmt.Fprintf(w, "CLUSTER     %s\nCONTROLLER  %d\nTOPICS      %d\nPARTITIONS  %d (%d offline, %d under-replicated, %d not on their preferred leader)\n\n",
				info.ID, info.ControllerID, info.Topics, info.Partitions, info.Offline, info.UnderReplicated, info.NotPreferred)
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
			return tw.Flush()
		},
	}
}
