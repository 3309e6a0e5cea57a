package main

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kmsg"

	blog "github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
)

var codecs = map[string]record.Codec{
	"none":   record.CodecNone,
	"gzip":   record.CodecGzip,
	"snappy": record.CodecSnappy,
	"lz4":    record.CodecLZ4,
	"zstd":   record.CodecZstd,
}

func newLogGenerateCommand() *cobra.Command {
	var (
		records            int
		batchSize          int
		segmentBytes       int64
		indexIntervalBytes int
		codecName          string
		leaderEpoch        int32
	)
	cmd := &cobra.Command{
		Use:   "generate DIR",
		Short: "Append generated activity events to a partition log",
		Long: `Append generated page-view events to the partition log in DIR, creating it
if needed, through the broker's own log code (broker/log): batches are
validated, given offsets from the log end and stamped with the leader epoch
exactly as a produce request's would be, and segments roll at
--segment-bytes. It is how "make demo" gets a log to dump before the broker
serves one, and a quick way to get segment files for tests.

Each record has a user id as key, a small JSON event as value and a
"source" header.`,
		Example: `  # 100 records in batches of 10, zstd-compressed, 1 KiB segments.
  tributary log generate ./tributary-data/demo-0 --records 100 --batch-size 10 --codec zstd --segment-bytes 1024
  # generated 100 records in 10 batches into /home/me/tributary-data/demo-0: offsets 0-99, 4 segments, 3326 bytes
  tributary log dump --deep --verify ./tributary-data/demo-0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			codec, ok := codecs[strings.ToLower(codecName)]
			if !ok {
				return fmt.Errorf("--codec %q: want none, gzip, snappy, lz4 or zstd", codecName)
			}
			if records < 0 || batchSize < 1 {
				return fmt.Errorf("--records %d --batch-size %d: want records >= 0 and a batch size >= 1", records, batchSize)
			}
			dir, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			cfg := blog.DefaultConfig()
			cfg.SegmentBytes = segmentBytes
			cfg.IndexIntervalBytes = indexIntervalBytes
			if err := cfg.Validate(); err != nil {
				return err
			}
			l, err := blog.Open(dir, cfg, blog.Options{Logger: slog.Default()})
			if err != nil {
				return err
			}
			first, start := l.LogEndOffset(), time.Now().UnixMilli()
			var batches int
			for done := 0; done < records; {
				n := min(batchSize, records-done)
				b, err := generateBatch(codec, first+int64(done), start+int64(done), n)
				if err == nil {
					_, err = l.AppendAsLeader(b, leaderEpoch)
				}
				if err != nil {
					l.Close()
					return err
				}
				done += n
				batches++
			}
			segments, size, end := l.SegmentCount(), l.Size(), l.LogEndOffset()
			if err := l.Close(); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "generated %d records in %d batches into %s: offsets %d-%d, %d segments, %d bytes\n",
				records, batches, dir, first, end-1, segments, size)
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&records, "records", 100, "records to append")
	f.IntVar(&batchSize, "batch-size", 10, "records per batch")
	f.Int64Var(&segmentBytes, "segment-bytes", blog.DefaultConfig().SegmentBytes, "segment.bytes: roll a segment at this size")
	f.IntVar(&indexIntervalBytes, "index-interval-bytes", blog.DefaultConfig().IndexIntervalBytes, "index.interval.bytes: bytes of batches between index entries")
	f.StringVar(&codecName, "codec", "none", "compression: none, gzip, snappy, lz4 or zstd")
	f.Int32Var(&leaderEpoch, "leader-epoch", 0, "partition leader epoch stamped on the batches")
	return cmd
}

var pages = []string{"/", "/search?q=shoes", "/items/42", "/items/7", "/cart", "/checkout"}

// generateBatch makes n page-view events as one producer batch, one
// millisecond apart from ts on. offset is the offset the first record will
// get, used only to vary the content.
func generateBatch(codec record.Codec, offset, ts int64, n int) (record.Batch, error) {
	kvs := make([]record.KV, n)
	for i := range kvs {
		o := offset + int64(i)
		user := fmt.Sprintf("user-%d", o%7)
		kvs[i] = record.KV{
			Key: []byte(user),
			Value: fmt.Appendf(nil, `{"type":"page","userId":%q,"path":%q,"n":%d}`,
				user, pages[o%int64(len(pages))], o),
			Headers:        []kmsg.Header{{Key: "source", Value: []byte("tributary-generate")}},
			TimestampDelta: int64(i),
		}
	}
	opts := record.DefaultBuildOptions()
	opts.Codec = codec
	opts.BaseTimestamp = ts
	return record.Build(opts, record.NewRecords(kvs...))
}
