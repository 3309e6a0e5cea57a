package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/internal/devcerts"
)

func newDevCertsCommand() *cobra.Command {
	var (
		hosts    []string
		client   string
		validity time.Duration
	)
	cmd := &cobra.Command{
		Use:   "certs DIR",
		Short: "Write a throwaway CA, a broker certificate and a client certificate (PEM) for trying TLS",
		Long: `Write into DIR, for test clusters only:

  ca.pem      the CA certificate: ssl.truststore.location of brokers and clients
  broker.pem  the broker's private key and certificate chain, for --host names
              and addresses: ssl.keystore.location of the broker's listeners.
              For a cluster give every node's name: the nodes share it, and
              present it to each other as client certificate too
  client.pem  a client's key and chain, subject CN=<--client>: a client
              certificate for ssl.client.auth=required (the principal is
              User:CN=<--client> with the default ssl.principal.mapping.rules)

Keys are ECDSA P-256, unencrypted, mode 0600. docs/security.md walks through
using them; a production cluster takes its certificates from its own CA.`,
		Example: `  tributary dev certs ./certs --host localhost --host 127.0.0.1 --host broker1.example.com
  tributary dev certs ./certs --host node1.example.com --host node2.example.com --host node3.example.com
  tributary broker --listeners SSL://127.0.0.1:9093 \
    --set ssl.keystore.location=./certs/broker.pem`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := devcerts.Write(args[0], hosts, client, validity)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "CA certificate:     %s\nbroker key + chain: %s (for %v)\nclient key + chain: %s (CN=%s)\nvalid for %v\n",
				f.CA, f.Broker, hosts, f.Client, f.ClientCN, validity)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&hosts, "host", []string{"localhost", "127.0.0.1"}, "a host name or IP address the broker certificate is valid for (repeatable)")
	fl.StringVar(&client, "client", "client", "the client certificate's common name")
	fl.DurationVar(&validity, "validity", 365*24*time.Hour, "how long the certificates are valid")
	return cmd
}
