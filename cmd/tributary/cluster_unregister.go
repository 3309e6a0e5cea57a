package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newClusterUnregisterCommand(bootstrap *string) *cobra.Command {
	var id int32
	cmd := &cobra.Command{
		Use:   "unregister",
		Short: "Remove a broker that is gone for good from the cluster metadata",
		Long: `Ask the controller to remove a broker (UnregisterBroker), as
kafka-cluster.sh unregister does: run it after decommissioning a broker, once
its partitions were reassigned elsewhere ('tributary cluster reassign').

The broker is fenced first (its leaderships and ISR memberships move), then
its registration is removed and, for a broker-only node, its place in the
metadata quorum, so the controllers stop sending it the metadata log.
Partitions that still list it keep it as an offline replica. A broker that
is still running registers again at its next heartbeat; a controller (a
voter of controller.quorum.voters) cannot be removed this way.`,
		Example: `  tributary cluster unregister --id 6 -b 127.0.0.1:9492`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id < 0 {
				return fmt.Errorf("--id %d: give the node id of the broker to remove", id)
			}
			return withKadm(cmd, *bootstrap, adminTimeout, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error {
				req := kmsg.NewPtrUnregisterBrokerRequest()
				req.BrokerID = id
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					return apiError("UnregisterBroker", req.Key(), err)
				}
				if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
					if resp.ErrorMessage != nil {
						return fmt.Errorf("unregistering broker %d: %w: %s", id, err, *resp.ErrorMessage)
					}
					return fmt.Errorf("unregistering broker %d: %w", id, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "broker %d unregistered\n", id)
				return nil
			})
		},
	}
	cmd.Flags().Int32Var(&id, "id", -1, "node id of the broker to remove")
	return cmd
}
