package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newTxnCommand() *cobra.Command {
	var bootstrap string
	cmd := &cobra.Command{
		Use:     "txn",
		Aliases: []string{"transactions"},
		Short:   "List, describe and abort transactions",
		Long: `Show the transactions of a cluster over the Kafka protocol, and abort a
hanging one, as kafka-transactions.sh list, describe, describe-producers and
abort do: it works against Tributary and
Apache Kafka alike (see docs/transactions.md).`,
		Example: `  tributary txn list
  tributary txn list --state Ongoing
  tributary txn describe orders-etl-1
  tributary txn describe-producers --topic orders --partition 3
  tributary txn abort --topic orders --partition 3 --start-offset 1200`,
	}
	addBootstrapFlag(cmd.PersistentFlags(), &bootstrap)
	cmd.AddCommand(newTxnListCommand(&bootstrap), newTxnDescribeCommand(&bootstrap), newTxnAbortCommand(&bootstrap), newTxnDescribeProducersCommand(&bootstrap))
	return cmd
}

func newTxnListCommand(bootstrap *string) *cobra.Command {
	var states []string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List transactional ids with their coordinator, producer id and state",
		Long: `List every transactional id of every coordinator (ListTransactions),
sorted by id. STATE is the coordinator's: Empty, Ongoing, PrepareCommit,
PrepareAbort, CompleteCommit, CompleteAbort, Dead or PrepareEpochFence.
--state keeps those in the given states (repeatable or comma-separated).`,
		Example: `  # Every transactional id.
  tributary txn list

  # Transactions open now (a long-open one holds read_committed consumers back).
  tributary txn list --state Ongoing`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withKadm(cmd, *bootstrap, 0, func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) error {
				listed, err := adm.ListTransactions(ctx, nil, states)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TRANSACTIONAL-ID\tCOORDINATOR\tPRODUCER-ID\tSTATE")
				for _, l := range listed.Sorted() {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", l.TxnID, l.Coordinator, l.ProducerID, l.State)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringSliceVarP(&states, "state", "s", nil, "only transactions in these states (repeatable or comma-separated)")
	mirrorKafka(cmd, "kafka-transactions.sh list", nil)
	return cmd
}

func newTxnDescribeCommand(bootstrap *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe TRANSACTIONAL-ID",
		Short: "Show a transactional id's producer, state, timeout and partitions",
		Long: `Describe a transactional id (DescribeTransactions): its coordinator,
producer id and epoch, state, transaction.timeout.ms, when its current
transaction started and how long it has been open, and the partitions it
added. An unknown id is an error.`,
		Example: `  tributary txn describe orders-etl-1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withKadm(cmd, *bootstrap, 0, func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) error {
				ds, err := adm.DescribeTransactions(ctx, args[0])
				if err != nil {
					return err
				}
				d, ok := ds[args[0]]
				if !ok {
					return fmt.Errorf("transactional id %q: no answer", args[0])
				}
				if d.Err != nil {
					return fmt.Errorf("transactional id %q: %w", args[0], d.Err)
				}
				var parts []string
				for _, tp := range d.Topics.Sorted() {
					for _, p := range tp.Partitions {
						parts = append(parts, fmt.Sprintf("%s-%d", tp.Topic, p))
					}
				}
				start, open := "-", "-"
				if d.StartTimestamp >= 0 && d.State == "Ongoing" {
					start = time.UnixMilli(d.StartTimestamp).UTC().Format(time.RFC3339Nano)
					open = time.Since(time.UnixMilli(d.StartTimestamp)).Round(time.Millisecond).String()
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TRANSACTIONAL-ID\tCOORDINATOR\tPRODUCER-ID\tEPOCH\tSTATE\tTIMEOUT-MS\tSTARTED\tOPEN-FOR\tPARTITIONS")
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n", d.TxnID, d.Coordinator, d.ProducerID, d.ProducerEpoch, d.State,
					d.TimeoutMillis, start, open, dash(strings.Join(parts, ",")))
				return tw.Flush()
			})
		},
	}
	kafkaArgFlag(cmd, "transactional-id", "the transactional id to describe", false)
	mirrorKafka(cmd, "kafka-transactions.sh describe", map[string]string{"transactional-id": "transactional-id"})
	return cmd
}
