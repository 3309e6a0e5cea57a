package main

import (
	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/broker/log/dump"
)

func newLogCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Inspect and generate partition logs on disk",
		Long: `Work on a partition's files directly, without a running broker: the
segment files <base offset>.log, .index and .timeindex in Apache Kafka's
on-disk format.`,
		Example: `  tributary log generate ./tributary-data/demo-0
  tributary log dump --verify ./tributary-data/demo-0`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(
		newLogDumpCommand(),
		newLogGenerateCommand(),
	)
	return cmd
}

func newLogDumpCommand() *cobra.Command {
	var opts dump.Options
	cmd := &cobra.Command{
		Use:   "dump PATH...",
		Short: "Print segment files: batches, records, index entries",
		Long: `Print the contents of segment files, as Apache Kafka's
kafka-dump-log.sh (DumpLogSegments) does, reading the files directly.

PATH is a .log, .index or .timeindex file, or a partition directory, whose
segment files are dumped in offset order. Each file is announced by its
absolute path. For a .log every batch is printed (offsets, count, position,
size, codec, timestamp type and max timestamp, producer id/epoch/sequence,
leader epoch, CRC and whether the batch is valid); with --deep every record
too, and with --print-data its key and value. For .index and .timeindex
every entry is printed.

--verify checks that each .index entry points at the start of a batch with
the last offset it names, that each .timeindex entry names a batch with the
max timestamp it holds, that entries strictly increase, and that every batch
is valid (CRC, lengths) with increasing offsets. Each problem is printed on
stderr naming the file, the entry and what was expected and found, and the
command exits with status 1.

--json prints JSON Lines, one object per line with "type" (file, batch,
record, index, timeindex, note, problem) and "file".`,
		Example: `  # Batches of one segment.
  tributary log dump ./tributary-data/demo-0/00000000000000000000.log
  # Dumping /home/me/tributary-data/demo-0/00000000000000000000.log
  # Log starting offset: 0
  # baseOffset: 0 lastOffset: 3 count: 4 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1796004889007 size: 451 magic: 2 compresscodec: none crc: 4142245564 isvalid: true

  # Records with keys and values.
  tributary log dump --print-data ./tributary-data/demo-0/00000000000000000000.log
  # | offset: 0 CreateTime: 1796004889004 keySize: 6 valueSize: 50 sequence: -1 headerKeys: [source] key: user-0 payload: {"type":"page","userId":"user-0","path":"/","n":0}

  # Check a whole partition's indexes against its logs.
  tributary log dump --verify ./tributary-data/demo-0
  # Verified 9 files: no problems found.

  # Batches as JSON.
  tributary log dump --json ./tributary-data/demo-0 | jq 'select(.type == "batch") | .lastOffset'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return dump.Run(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.Deep, "deep", false, "decode each batch and print its records")
	f.BoolVar(&opts.PrintData, "print-data", false, "print record keys and values; implies --deep")
	f.BoolVar(&opts.Verify, "verify", false, "check indexes and batches against the log; exit 1 on any problem")
	f.BoolVar(&opts.JSON, "json", false, "print JSON Lines instead of text")
	// kafka-dump-log.sh --files takes a comma-separated list.
	var files []string
	f.StringSliceVar(&files, "files", nil, "files to dump, comma-separated (Kafka's name for PATH)")
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		return cobra.MinimumNArgs(1)(cmd, append(args, files...))
	}
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return run(cmd, append(args, files...)) }
	mirrorKafka(cmd, "kafka-dump-log.sh", map[string]string{"deep-iteration": "deep", "print-data-log": "print-data", "files": "files"})
	return cmd
}
