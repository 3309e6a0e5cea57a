package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
)

func newRootCommand() *cobra.Command {
	cfg := newConfig()
	var logLevel string
	root := &cobra.Command{
		Use:   "tributary",
		Short: "Kafka-compatible broker, activity tracker and Hadoop loader in one binary",
		Long: `Tributary is one binary for a Hadoop-integrated event pipeline: a broker
that speaks the Apache Kafka protocol and stores Kafka's on-disk format, an
activity tracker, and a loader that writes topics into HDFS as Parquet.

Commands are nouns and verbs: "tributary log dump" reads segment files.

Every flag can also be set in a YAML config file (--config) under its key,
the flag's name with dots for dashes (--log-level is log.level), or in the
environment as TRIBUTARY_ and the key in capitals with underscores
(TRIBUTARY_LOG_LEVEL). Flags win over the environment, which wins over the
file, which wins over the defaults.`,
		Example: `  # Write a small partition log and print its batches and records.
  tributary log generate ./tributary-data/demo-0 --records 100
  tributary log dump --deep ./tributary-data/demo-0

  # The same setting three ways, in precedence order.
  tributary --log-level debug log dump ./tributary-data/demo-0
  TRIBUTARY_LOG_LEVEL=debug tributary log dump ./tributary-data/demo-0
  echo 'log.level: debug' > tributary.yaml
  tributary --config tributary.yaml log dump ./tributary-data/demo-0`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.load(cmd); err != nil {
				return err
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("log level %q: want debug, info, warn or error", logLevel)
			}
			processLevel.Set(level)
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: &processLevel})))
			return applyClientProps(cmd)
		},
	}
	root.PersistentFlags().StringVar(&cfg.file, "config", "", "YAML config file (env TRIBUTARY_CONFIG)")
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	addClientPropsFlags(root)
	root.AddCommand(
		newVersionCommand(),
		newLogCommand(),
		newBrokerCommand(),
		newTopicCommand(),
		newGroupCommand(),
		newShareGroupCommand(),
		newACLCommand(),
		newTxnCommand(),
		newProduceCommand(),
		newConsumeCommand(),
		newPerfCommand(),
		newParquetCommand(),
		newLakeCommand(),
		newTrackerCommand(),
		newRegistryCommand(),
		newSchemaCommand(),
		newLoadCommand(),
		newDevCommand(),
		newConsoleCommand(),
		newClusterCommand(),
		newQuotaCommand(),
		newUserCommand(),
		newJobsCommand(),
		newAdminCommand(),
		newDocsCommand(),
	)
	acceptBootstrapServer(root)
	return root
}
