package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

func newPerfCommand() *cobra.Command {
	var bootstrap string
	cmd := &cobra.Command{
		Use:   "perf",
		Short: "Measure produce and consume throughput and latency",
		Long: `Load generators after Apache Kafka's kafka-producer-perf-test.sh and
kafka-consumer-perf-test.sh, on kafka-go, the client Tributary's own
programs use. They print the same lines as Kafka's tools, so a run against
Tributary and a run against Apache Kafka compare directly.

Progress lines go to stderr every --report-interval; the final summary goes
to stdout, in Kafka's layout or, with --json, as one JSON object.`,
		Example: `  tributary topic create perf -p 6
  tributary perf produce --topic perf --records 1000000 --record-size 100
  tributary perf consume --topic perf --records 1000000`,
	}
	addBootstrapFlag(cmd.PersistentFlags(), &bootstrap)
	cmd.AddCommand(newPerfProduceCommand(&bootstrap), newPerfConsumeCommand(&bootstrap))
	return cmd
}

func newPerfProduceCommand(bootstrap *string) *cobra.Command {
	var (
		topic, acks, compression string
		records                  int64
		recordSize, batchSize    int
		batchBytes               int64
		throughput               float64
		linger, interval         time.Duration
		asJSON                   bool
	)
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Measure producer throughput and latency",
		Long: `Send --records records of --record-size random bytes (no key) to --topic
as fast as possible, or at most --throughput records a second, and report
the rate and the latency of each record, from handing it to the producer to
its acknowledgement: average, maximum and the 50th, 95th, 99th and 99.9th
percentiles (over at most 500,000 sampled records, as Kafka's tool does).

Every --report-interval a line for that interval goes to stderr:
  N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency.
At the end one line goes to stdout, Kafka's summary with fractional
milliseconds:
  N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency,
  P ms 50th, P ms 95th, P ms 99th, P ms 99.9th.      (on one line)
or, with --json, an object with records, failed, bytes, seconds,
records_per_sec, mb_per_sec and latency_{avg,p50,p95,p99,p99_9,max}_ms.

The producer is kafka-go's Writer, asynchronous: one request in flight per
partition, batches of up to --batch-size records and --batch-bytes bytes,
sent when full or after --linger (Kafka's linger.ms; kafka-go's own 1 s
default would dominate every latency). MB is 2^20 bytes. Ctrl-C stops
sending and reports what was acknowledged. Any failed record ends the run
with an error.`,
		Example: `  # A million 100-byte records, unthrottled, acks=all.
  tributary perf produce --topic perf --records 1000000 --record-size 100

  # 10,000 records/s of 1 KiB with lz4, leader acks only, as JSON.
  tributary perf produce --topic perf --records 300000 --record-size 1024 \
    --throughput 10000 --acks 1 -z lz4 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topic == "" {
				return errors.New("--topic: required")
			}
			if records <= 0 {
				return fmt.Errorf("--records %d: want at least 1", records)
			}
			if recordSize < 0 {
				return fmt.Errorf("--record-size %d: want a size in bytes", recordSize)
			}
			if throughput == 0 || (throughput < 0 && throughput != -1) {
				return fmt.Errorf("--throughput %g: want records per second, or -1 for no limit", throughput)
			}
			if batchSize < 1 {
				return fmt.Errorf("--batch-size %d: want at least 1 record", batchSize)
			}
			if batchBytes < 1 {
				return fmt.Errorf("--batch-bytes %d: want at least 1 byte", batchBytes)
			}
			if linger < 0 {
				return fmt.Errorf("--linger %s: cannot be negative", linger)
			}
			ack, err := kafkacli.ParseAcks(acks)
			if err != nil {
				return err
			}
			codec, err := kafkacli.ParseCompression(compression)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cl, _, err := connectTopic(ctx, *bootstrap, topic)
			if err != nil {
				return err
			}
			defer cl.Close()
			if linger == 0 {
				linger = time.Nanosecond // "send at once"; 0 would mean the default
			}
			res, err := cl.PerfProduce(ctx, kafkacli.PerfProduceConfig{
				WriterConfig: kafkacli.WriterConfig{
					Topic: topic, Partition: -1, Acks: ack, Compression: codec,
					BatchSize: batchSize, BatchBytes: batchBytes, Linger: linger,
				},
				Records:        records,
				RecordSize:     recordSize,
				Throughput:     max(throughput, 0),
				Progress:       cmd.ErrOrStderr(),
				ReportInterval: interval,
			})
			if asJSON {
				fmt.Fprintln(cmd.OutOrStdout(), res.JSON())
			} else {
				fmt.Fprintln(cmd.OutOrStdout(), res)
			}
			if err != nil {
				return fmt.Errorf("%d of %d records acknowledged: %w", res.Records, records, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "topic to write to (required; it must exist)")
	f.Int64Var(&records, "records", 0, "number of records to send (required)")
	f.IntVar(&recordSize, "record-size", 100, "bytes per record value")
	f.Float64Var(&throughput, "throughput", -1, "records per second at most; -1: no limit")
	f.StringVar(&acks, "acks", "all", "acknowledgements to wait for: all (-1), 1 or 0")
	f.StringVarP(&compression, "compression", "z", "none", "compression codec: none, gzip, snappy, lz4 or zstd")
	f.IntVar(&batchSize, "batch-size", 1000, "records per batch at most (kafka-go Writer.BatchSize)")
	f.Int64Var(&batchBytes, "batch-bytes", 1<<20, "bytes per request to a partition at most (kafka-go Writer.BatchBytes)")
	f.DurationVar(&linger, "linger", kafkacli.DefaultLinger, "how long a batch waits to fill before it is sent (linger.ms)")
	f.DurationVar(&interval, "report-interval", 5*time.Second, "how often a progress line goes to stderr")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	mirrorKafka(cmd, "kafka-producer-perf-test.sh", map[string]string{"topic": "topic", "num-records": "records",
		"record-size": "record-size", "throughput": "throughput"})
	return cmd
}

func newPerfConsumeCommand(bootstrap *string) *cobra.Command {
	var (
		topic             string
		records           int64
		timeout, interval time.Duration
		asJSON            bool
	)
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Measure consumer throughput",
		Long: `Read --records records of --topic from the start of every partition (one
fetch loop per partition over kafka-go's transport, no consumer group) and report the rate.

Every --report-interval a line goes to stderr:
  N records received, R records/sec (M MB/sec), T of W so far.
At the end Kafka's ConsumerPerformance header and line go to stdout:
  start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg,
  nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
(with no group there is no rebalance: 0, and the fetch figures are the
totals), or, with --json, an object with start, end, records, bytes,
seconds, records_per_sec and mb_per_sec. Bytes are keys plus values;
MB is 2^20 bytes.

If no record arrives for --timeout before --records are read, the summary
of what was read is printed and the command fails.`,
		Example: `  tributary perf consume --topic perf --records 1000000
  tributary perf consume --topic perf --records 1000000 --json -b kafka-1:9092`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topic == "" {
				return errors.New("--topic: required")
			}
			if records <= 0 {
				return fmt.Errorf("--records %d: want at least 1", records)
			}
			if timeout <= 0 {
				return fmt.Errorf("--timeout %s: want a positive duration", timeout)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cl, t, err := connectTopic(ctx, *bootstrap, topic)
			if err != nil {
				return err
			}
			defer cl.Close()
			sctx, cancel := context.WithTimeout(ctx, adminTimeout)
			offsets, err := cl.StartOffsets(sctx, topic, t.PartitionIndexes(), kafkacli.Start{Kind: kafkacli.StartBeginning})
			cancel()
			if err != nil {
				return err
			}
			res, err := cl.PerfConsume(ctx, kafkacli.PerfConsumeConfig{
				Topic: topic, Records: records, Offsets: offsets, Timeout: timeout,
				Progress: cmd.ErrOrStderr(), ReportInterval: interval,
			})
			if asJSON {
				fmt.Fprintln(cmd.OutOrStdout(), res.JSON())
			} else {
				fmt.Fprintln(cmd.OutOrStdout(), kafkacli.PerfConsumeHeader)
				fmt.Fprintln(cmd.OutOrStdout(), res)
			}
			if errors.Is(err, context.Canceled) && ctx.Err() != nil && cmd.Context().Err() == nil {
				return nil // Ctrl-C: the summary of what was read is the result
			}
			if err != nil {
				return fmt.Errorf("%d of %d records read: %w", res.Records, records, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "topic to read (required)")
	f.Int64Var(&records, "records", 0, "number of records to read (required)")
	f.DurationVar(&timeout, "timeout", 10*time.Second, "give up when no record arrives for this long")
	f.DurationVar(&interval, "report-interval", 5*time.Second, "how often a progress line goes to stderr")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	mirrorKafka(cmd, "kafka-consumer-perf-test.sh", map[string]string{"topic": "topic", "messages": "records", "num-records": "records"})
	return cmd
}
