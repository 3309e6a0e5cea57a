package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/formats/srclient"
	"github.com/tributary-io/tributary/internal/kafkacli"
)

func newConsumeCommand() *cobra.Command {
	var (
		bootstrap, offset, timestamp, format string
		registryURL                          string
		isolation                            string
		shareGroup, shareAck                 string
		fromBeginning                        bool
		partitions                           []int
		count                                int64
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print the records of a topic",
		Long: `Read records from TOPIC and print them to stdout, like
kafka-console-consumer.sh and "kcat -C". Partitions are read directly
(all of them, or those given with --partition), without a consumer group,
so nothing is committed and nothing else is disturbed.

Where to start, in every partition read (give at most one):
  (none)              only records produced from now on
  --from-beginning    the oldest record still kept
  --offset N          offset N; a negative N starts N records before the
                      end (as kcat -o -N). N must lie within the partition.
  --timestamp T       the first record at or after T, given as RFC 3339
                      (2024-05-01T12:00:00Z) or Unix milliseconds

--isolation read_committed reads only the records of committed transactions
(and those written outside transactions), up to the last stable offset, as
a consumer with isolation.level=read_committed does; the default,
read_uncommitted, reads everything up to the high watermark, aborted
transactions included, as Kafka's console consumer does by default.

It then follows new records until Ctrl-C, which ends it cleanly (exit 0),
or until --count records have been printed.

--format is a template as in kcat -f (default '%s\n': each value on its own
line). Nothing is added to it: end it with \n. Directives:
` + kafkacli.FormatHelp + `

A summary ("consumed N records") goes to stderr at the end.

--share-group NAME reads instead as a member of a KIP-932 share group (a
queue): the broker gives this member records no other member of the group
holds, and each is acknowledged once printed (--share-ack accept, the
default; release puts it back for redelivery, reject archives it). Where
to start is the group's (share.auto.offset.reset), so the start flags and
--partition do not apply.`,
		Example: `  # Follow new records.
  tributary consume events

  # The first 10 records of partition 2, with offset, key and headers.
  tributary consume orders -p 2 --from-beginning --count 10 -f 'offset %o key %k headers %h: %s\n'

  # Everything since 2024-05-01 09:00 UTC, as tab-separated key and value.
  tributary consume orders --timestamp 2024-05-01T09:00:00Z -f '%k\t%s\n'

  # Records framed by Confluent's serializers, decoded to JSON.
  tributary consume orders --from-beginning --registry http://127.0.0.1:8081

  # The last 5 records of partition 0, then exit.
  tributary consume orders --offset -5 --count 5 -p 0

  # Take 10 records off the orders queue of share group billing.
  tributary consume orders --share-group billing --count 10`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			if format == "" {
				format = kafkacli.DefaultFormat
			}
			tmpl, err := kafkacli.ParseFormat(format)
			if err != nil {
				return err
			}
			start, err := parseStart(fromBeginning, offset, timestamp)
			if err != nil {
				return err
			}
			if isolation != "read_uncommitted" && isolation != "read_committed" {
				return fmt.Errorf("--isolation %q: want read_committed or read_uncommitted", isolation)
			}
			if count < 0 {
				return fmt.Errorf("--count %d: want a number of records, or 0 to follow until Ctrl-C", count)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if shareGroup != "" {
				ack, ok := shareAcks[shareAck]
				if !ok {
					return fmt.Errorf("--share-ack %q: want accept, release or reject", shareAck)
				}
				for _, name := range []string{"from-beginning", "offset", "timestamp", "partition", "isolation", "registry"} {
					if cmd.Flags().Changed(name) {
						return fmt.Errorf("--%s does not apply with --share-group: the share group decides what each member reads", name)
					}
				}
				n, err := consumeShare(ctx, bootstrap, topic, shareGroup, ack, count, tmpl.Append, cmd.OutOrStdout())
				fmt.Fprintf(cmd.ErrOrStderr(), "consumed %d records\n", n)
				if err != nil && ctx.Err() != nil && cmd.Context().Err() == nil {
					return nil // Ctrl-C or SIGTERM: a clean end
				}
				return err
			}
			cl, t, err := connectTopic(ctx, bootstrap, topic)
			if err != nil {
				return err
			}
			defer cl.Close()
			if len(partitions) == 0 {
				partitions = t.PartitionIndexes()
			}
			for _, p := range partitions {
				if err := t.CheckPartition(p); err != nil {
					return err
				}
			}
			sctx, cancel := context.WithTimeout(ctx, adminTimeout)
			offsets, err := cl.StartOffsets(sctx, topic, partitions, start)
			cancel()
			if err != nil {
				return err
			}

			// Output is buffered and flushed at least every 100 ms, so a
			// fast topic is printed in large writes and a slow one promptly.
			var mu sync.Mutex
			out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
			flushed := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(flushed)
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-done:
						return
					case <-tick.C:
						mu.Lock()
						out.Flush()
						mu.Unlock()
					}
				}
			}()
			var n, undecodable int64
			var buf []byte
			var dec *srclient.Decoder
			if registryURL != "" {
				dec = srclient.NewDecoder(srclient.New(registryURL))
			}
			err = cl.Consume(ctx, kafkacli.ConsumeConfig{Topic: topic, Offsets: offsets, ReadCommitted: isolation == "read_committed"}, func(m *kafka.Message) error {
				if dec != nil && m.Value != nil {
					v, derr := dec.JSON(ctx, m.Value)
					if derr != nil {
						// Reported and skipped: one bad record must not end a
						// follow, nor print bytes a JSON reader chokes on.
						undecodable++
						mu.Lock()
						fmt.Fprintf(cmd.ErrOrStderr(), "partition %d offset %d: %v\n", m.Partition, m.Offset, derr)
						mu.Unlock()
						n++
						if count > 0 && n >= count {
							return kafkacli.ErrStop
						}
						return nil
					}
					mm := *m
					mm.Value = v
					m = &mm
				}
				buf = tmpl.Append(buf[:0], m)
				mu.Lock()
				_, werr := out.Write(buf)
				mu.Unlock()
				if werr != nil {
					return werr
				}
				n++
				if count > 0 && n >= count {
					return kafkacli.ErrStop
				}
				return nil
			})
			close(done)
			<-flushed
			if ferr := out.Flush(); err == nil {
				err = ferr
			}
			noun := "records"
			if n == 1 {
				noun = "record"
			}
			if undecodable > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "consumed %d %s, %d not decoded\n", n, noun, undecodable)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "consumed %d %s\n", n, noun)
			}
			if errors.Is(err, context.Canceled) && ctx.Err() != nil && cmd.Context().Err() == nil {
				return nil // Ctrl-C or SIGTERM: a clean end
			}
			return err
		},
	}
	f := cmd.Flags()
	addBootstrapFlag(f, &bootstrap)
	f.BoolVar(&fromBeginning, "from-beginning", false, "start at the oldest record of each partition")
	f.StringVarP(&offset, "offset", "o", "", "start at this offset; negative: this many records before the end; earliest or latest as Kafka's tool")
	f.StringVar(&timestamp, "timestamp", "", "start at the first record at or after this time (RFC 3339 or Unix ms)")
	f.IntSliceVarP(&partitions, "partition", "p", nil, "partitions to read (repeatable or comma-separated); default all")
	f.Int64VarP(&count, "count", "c", 0, "exit after this many records; 0: follow until Ctrl-C")
	f.StringVarP(&format, "format", "f", "", `output template, as kcat -f (see above); default '%s\n'`)
	f.StringVar(&registryURL, "registry", "", "schema registry URL: decode Confluent-framed values (Avro, JSON Schema, Protobuf) to JSON before printing")
	f.StringVar(&isolation, "isolation", "read_uncommitted", "read_committed: only committed transactions, up to the last stable offset; read_uncommitted: everything")
	f.StringVar(&shareGroup, "share-group", "", "read as a member of this KIP-932 share group, acknowledging each record printed")
	f.StringVar(&shareAck, "share-ack", "accept", "with --share-group: accept, release (redeliver) or reject (archive) each record printed")
	kafkaArgFlag(cmd, "topic", "the topic to read", true)
	mirrorKafka(cmd, "kafka-console-consumer.sh", map[string]string{"max-messages": "count",
		"from-beginning": "from-beginning", "partition": "partition", "offset": "offset", "topic": "topic", "isolation-level": "isolation"})
	return cmd
}

// parseStart turns the start flags into a kafkacli.Start.
func parseStart(fromBeginning bool, offset, timestamp string) (kafkacli.Start, error) {
	given := 0
	for _, set := range []bool{fromBeginning, offset != "", timestamp != ""} {
		if set {
			given++
		}
	}
	if given > 1 {
		return kafkacli.Start{}, errors.New("give at most one of --from-beginning, --offset and --timestamp")
	}
	switch {
	case fromBeginning:
		return kafkacli.Start{Kind: kafkacli.StartBeginning}, nil
	case offset == "earliest": // kafka-console-consumer.sh's names
		return kafkacli.Start{Kind: kafkacli.StartBeginning}, nil
	case offset == "latest":
		return kafkacli.Start{Kind: kafkacli.StartEnd}, nil
	case offset != "":
		n, err := strconv.ParseInt(offset, 10, 64)
		if err != nil {
			return kafkacli.Start{}, fmt.Errorf("--offset %q: want an offset, or a negative count from the end", offset)
		}
		return kafkacli.Start{Kind: kafkacli.StartOffset, Offset: n}, nil
	case timestamp != "":
		t, err := parseTimestamp(timestamp)
		if err != nil {
			return kafkacli.Start{}, err
		}
		return kafkacli.Start{Kind: kafkacli.StartTime, Time: t}, nil
	}
	return kafkacli.Start{Kind: kafkacli.StartEnd}, nil
}

// parseTimestamp reads RFC 3339 or Unix milliseconds.
func parseTimestamp(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return time.Time{}, fmt.Errorf("--timestamp %q: Unix milliseconds cannot be negative", s)
		}
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--timestamp %q: want RFC 3339 (2024-05-01T12:00:00Z) or Unix milliseconds", s)
	}
	return t, nil
}
