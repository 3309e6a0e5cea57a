package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

func newProduceCommand() *cobra.Command {
	var (
		bootstrap, keySep, acks, compression string
		headers                              []string
		partition                            int
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Send lines from stdin to a topic, one record each",
		Long: `Read lines from stdin and send each as one record to TOPIC, like
kafka-console-producer.sh and "kcat -P". The trailing newline (\n or \r\n)
is not part of the record. It stops at the end of input, on Ctrl-C or at
the first record the cluster refuses (after kafka-go's retries), waits for
the records read so far to be acknowledged, and prints a summary to
stderr: records written and how many went to each partition.

--key-separator S splits each line at the first S into key and value; a
line without S is an error, as in Kafka's console producer. --header
name=value adds a header to every record (repeatable).

Partitions: --partition N writes every record to partition N. Otherwise a
keyed record goes to murmur2(key) mod the partition count, exactly as
Kafka's Java client places it (so a key lands on the same partition
whichever client wrote it), and records without a key are spread
round-robin.

--acks all (the default, also -1) waits for every in-sync replica, 1 for
the leader only, 0 for nothing. --compression is none, gzip, snappy, lz4
or zstd. The topic must exist: "tributary topic create" makes one.`,
		Example: `  # Three records without keys.
  printf 'one\ntwo\nthree\n' | tributary produce events

  # Keyed records with a header, compressed, from a file.
  tributary produce orders --key-separator '|' --header source=import -z zstd < orders.txt
  # where orders.txt holds lines like
  #   customer-17|{"order": 1001, "total": 12.50}

  # Everything to partition 0 of a topic on another cluster.
  tail -f app.log | tributary produce logs -p 0 -b kafka-1:9092`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			ack, err := kafkacli.ParseAcks(acks)
			if err != nil {
				return err
			}
			codec, err := kafkacli.ParseCompression(compression)
			if err != nil {
				return err
			}
			var hs []kafka.Header
			for _, h := range headers {
				k, v, err := kafkacli.ParseKV("header", h)
				if err != nil {
					return err
				}
				hs = append(hs, kafka.Header{Key: k, Value: []byte(v)})
			}
			if partition < -1 {
				return fmt.Errorf("--partition %d: want a partition number, or -1 to choose by key", partition)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cl, t, err := connectTopic(ctx, bootstrap, topic)
			if err != nil {
				return err
			}
			defer cl.Close()
			if partition >= 0 {
				if err := t.CheckPartition(partition); err != nil {
					return err
				}
			}
			sum, err := cl.ProduceLines(ctx, cmd.InOrStdin(), kafkacli.LineConfig{
				WriterConfig: kafkacli.WriterConfig{Topic: topic, Partition: partition, Acks: ack, Compression: codec},
				KeySeparator: keySep,
				Headers:      hs,
			})
			fmt.Fprintln(cmd.ErrOrStderr(), sum)
			return err
		},
	}
	f := cmd.Flags()
	addBootstrapFlag(f, &bootstrap)
	f.StringVarP(&keySep, "key-separator", "k", "", "split each line into key and value at the first occurrence of this string")
	f.StringArrayVarP(&headers, "header", "H", nil, "header added to every record, name=value (repeatable)")
	f.IntVarP(&partition, "partition", "p", -1, "partition to write to; -1: murmur2 of the key, round-robin without one")
	f.StringVar(&acks, "acks", "all", "acknowledgements to wait for: all (-1), 1 or 0")
	f.StringVarP(&compression, "compression", "z", "none", "compression codec: none, gzip, snappy, lz4 or zstd")
	kafkaArgFlag(cmd, "topic", "the topic to write to", true)
	mirrorKafka(cmd, "kafka-console-producer.sh", map[string]string{"topic": "topic",
		"compression-codec": "compression", "request-required-acks": "acks"})
	return cmd
}

// connectTopic connects and looks the topic up, so that a missing topic is
// reported before anything else happens.
func connectTopic(ctx context.Context, bootstrap, topic string) (*kafkacli.Cluster, *kafkacli.TopicInfo, error) {
	cctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	cl, err := kafkacli.Connect(cctx, bootstrap)
	if err != nil {
		return nil, nil, err
	}
	t, err := cl.Topic(cctx, topic)
	if err != nil {
		cl.Close()
		return nil, nil, err
	}
	return cl, t, nil
}
