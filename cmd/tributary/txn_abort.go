package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newTxnAbortCommand(bootstrap *string) *cobra.Command {
	var (
		topic                   string
		partition               int32
		startOffset, producerID int64
		producerEpoch           int16
		coordinatorEpoch        int32
	)
	cmd := &cobra.Command{
		Use:   "abort",
		Short: "Abort a hanging transaction on one partition (writes an abort marker)",
		Long: `Abort a transaction left open on a partition, as kafka-transactions.sh abort
does: the partition's leader writes an abort marker for the producer
(WriteTxnMarkers), so its records are dropped for read_committed consumers
and the partition's last stable offset moves on.

This is for a hanging transaction, one its coordinator no longer knows
(it holds back every read_committed consumer of the partition, and the
loader). A transaction its producer is still running is better ended by
the producer, or by its timeout; aborting it here only ends its part on
this partition.

Name the transaction by the offset where it started on the partition
(--start-offset, from "tributary txn describe-producers" or the LSO in
"tributary topic describe"), or by its producer: --producer-id,
--producer-epoch and --coordinator-epoch. It needs CLUSTER_ACTION on the
cluster where an authorizer is configured.`,
		Example: `  tributary txn abort --topic orders --partition 3 --start-offset 1200
  tributary txn abort --topic orders --partition 3 --producer-id 7 --producer-epoch 2 --coordinator-epoch 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			byOffset, byProducer := cmd.Flags().Changed("start-offset"), cmd.Flags().Changed("producer-id")
			if byOffset == byProducer {
				return errors.New("give either --start-offset or --producer-id (with --producer-epoch and --coordinator-epoch)")
			}
			if byProducer && (!cmd.Flags().Changed("producer-epoch") || !cmd.Flags().Changed("coordinator-epoch")) {
				return errors.New("--producer-id needs --producer-epoch and --coordinator-epoch")
			}
			return withKadm(cmd, *bootstrap, 0, func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) error {
				if byOffset {
					ds, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {partition: {}}})
					if err != nil {
						return err
					}
					p, ok := ds[topic].Partitions[partition]
					if !ok {
						return fmt.Errorf("%s-%d: no answer from its leader", topic, partition)
					}
					if p.Err != nil {
						return fmt.Errorf("%s-%d: %w", topic, partition, p.Err)
					}
					found := false
					for _, d := range p.ActiveProducers {
						if d.CurrentTxnStartOffset == startOffset {
							producerID, producerEpoch, coordinatorEpoch, found = d.ProducerID, d.ProducerEpoch, d.CoordinatorEpoch, true
						}
					}
					if !found {
						return fmt.Errorf("%s-%d: no open transaction starts at offset %d", topic, partition, startOffset)
					}
				}
				// A producer whose transaction hangs before its first marker
				// has no coordinator epoch (-1); 0 is at most any real one, as
				// kafka-transactions.sh takes it.
				coordinatorEpoch = max(coordinatorEpoch, 0)
				resp, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{
					ProducerID: producerID, ProducerEpoch: producerEpoch, CoordinatorEpoch: coordinatorEpoch,
					Topics: kadm.TopicsSet{topic: {partition: {}}},
				})
				if err != nil {
					return err
				}
				for _, r := range resp.SortedPartitions() {
					if r.Err != nil {
						return fmt.Errorf("%s-%d: abort marker of producer %d: %w", r.Topic, r.Partition, r.ProducerID, r.Err)
					}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "aborted the transaction of producer %d (epoch %d) on %s-%d\n", producerID, producerEpoch, topic, partition)
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&topic, "topic", "", "the partition's topic")
	fs.Int32Var(&partition, "partition", 0, "the partition")
	fs.Int64Var(&startOffset, "start-offset", -1, "the offset where the transaction started on the partition")
	fs.Int64Var(&producerID, "producer-id", -1, "the transaction's producer id")
	fs.Int16Var(&producerEpoch, "producer-epoch", -1, "the transaction's producer epoch")
	fs.Int32Var(&coordinatorEpoch, "coordinator-epoch", -1, "the coordinator epoch of the producer's last write to the partition")
	_ = cmd.MarkFlagRequired("topic")
	_ = cmd.MarkFlagRequired("partition")
	mirrorKafka(cmd, "kafka-transactions.sh abort", nil)
	return cmd
}

func newTxnDescribeProducersCommand(bootstrap *string) *cobra.Command {
	var (
		topic     string
		partition int32
	)
	cmd := &cobra.Command{
		Use:   "describe-producers",
		Short: "Show a partition's producers and where their open transactions start",
		Long: `Describe the producers the leader of a partition keeps state for
(DescribeProducers), as kafka-transactions.sh describe-producers does: producer
id and epoch, last sequence, last write, the coordinator epoch of its last
marker, and the offset where its open transaction started ("-" for none).
That offset is what "tributary txn abort --start-offset" takes.`,
		Example: `  tributary txn describe-producers --topic orders --partition 3`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withKadm(cmd, *bootstrap, 0, func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) error {
				ds, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {partition: {}}})
				if err != nil {
					return err
				}
				p, ok := ds[topic].Partitions[partition]
				if !ok {
					return fmt.Errorf("%s-%d: no answer from its leader", topic, partition)
				}
				if p.Err != nil {
					return fmt.Errorf("%s-%d: %w", topic, partition, p.Err)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "PRODUCER-ID\tEPOCH\tLAST-SEQUENCE\tLAST-TIMESTAMP\tCOORDINATOR-EPOCH\tTXN-START-OFFSET")
				for _, d := range p.ActiveProducers.Sorted() {
					start := "-"
					if d.CurrentTxnStartOffset >= 0 {
						start = strconv.FormatInt(d.CurrentTxnStartOffset, 10)
					}
					fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%d\t%s\n", d.ProducerID, d.ProducerEpoch, d.LastSequence,
						time.UnixMilli(d.LastTimestamp).UTC().Format(time.RFC3339Nano), d.CoordinatorEpoch, start)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "the partition's topic")
	cmd.Flags().Int32Var(&partition, "partition", 0, "the partition")
	_ = cmd.MarkFlagRequired("topic")
	_ = cmd.MarkFlagRequired("partition")
	mirrorKafka(cmd, "kafka-transactions.sh describe-producers", nil)
	return cmd
}
