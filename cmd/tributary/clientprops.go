package main

import (
	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

// Every command that connects to a broker takes Kafka's client properties
// the way Kafka's tools (--command-config) and kcat (-X) do; they are
// root flags, read once before the command runs, and every connection
// internal/kafkacli opens uses them (docs/security.md).

var (
	commandConfig string
	clientSets    []string
)

func addClientPropsFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&commandConfig, "command-config", "", "Kafka client properties file for commands that connect to a broker (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.location, ...), as Kafka's tools take it")
	f.StringArrayVarP(&clientSets, "client-property", "X", nil, "a Kafka client property as key=value, over --command-config (repeatable), e.g. -X security.protocol=SASL_SSL -X sasl.mechanism=SCRAM-SHA-512")
}

func applyClientProps(*cobra.Command) error {
	if commandConfig == "" && len(clientSets) == 0 {
		// A load worker started by the jobs scheduler inherits its
		// properties (kafkacli.ChildEnv).
		p, err := kafkacli.PropsFromEnv()
		if p == nil || err != nil {
			return err
		}
		return kafkacli.SetClientProps(p)
	}
	p, err := kafkacli.LoadClientProps(commandConfig, clientSets)
	if err != nil {
		return err
	}
	return kafkacli.SetClientProps(p)
}
