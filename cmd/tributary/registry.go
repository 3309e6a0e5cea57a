package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	brokercfg "github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/registry"
)

// startRegistry runs the schema registry in-process when
// schema.registry.listeners is set; it speaks to this broker through its
// first advertised listener of schema.registry.kafkastore.security.protocol,
// with the schema.registry.kafkastore.* client properties, like any client
// (nil, nil when off). users is the broker: its user store, for
// schema.registry.authentication.method=BASIC, and its authorizer, which
// decides who may write (docs/registry.md). It returns once it listens:
// it reads _schemas in the background, since in a cluster that is still
// forming the topic may not be writable yet.
func startRegistry(cfg *brokercfg.Broker, users registryUsers) (*registry.Registry, error) {
	ls := cfg.List("schema.registry.listeners")
	if len(ls) == 0 {
		return nil, nil
	}
	listen := strings.TrimPrefix(strings.TrimPrefix(ls[0], "http://"), "HTTP://")
	bls, err := cfg.AdvertisedListeners()
	if err != nil || len(bls) == 0 {
		return nil, fmt.Errorf("schema.registry.listeners: no client listener to reach the broker: %v", err)
	}
	props := kafkacli.ClientProps{}
	for _, k := range []string{"security.protocol", "sasl.mechanism", "sasl.jaas.config", "ssl.truststore.location"} {
		if v := cfg.String("schema.registry.kafkastore." + k); v != "" {
			props[k] = v
		}
	}
	l, err := registryListener(bls, props.Protocol())
	if err != nil {
		return nil, err
	}
	opts, err := props.KgoOpts()
	if err != nil {
		return nil, fmt.Errorf("schema.registry.kafkastore.*: %w", err)
	}
	host := l.Host
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	rc := registry.Config{
		Brokers:    []string{net.JoinHostPort(host, fmt.Sprint(l.Port))},
		Listen:     listen,
		ClientOpts: opts,
		Logger:     slog.Default(),
		InBroker:   true,
		NodeID:     int32(cfg.Int("node.id")),
		// In combined mode every voter is a broker; split clusters create
		// with what has registered after the wait.
		ExpectBrokers: len(cfg.List("controller.quorum.voters")),
	}
	if strings.EqualFold(cfg.String("schema.registry.authentication.method"), "BASIC") {
		rc.Authenticate = users.CheckPassword
	}
	rc.MayWrite = users.RegistryMayWrite(registry.DefaultTopic)
	return registry.Start(rc)
}

// registryUsers is what the in-process registry asks the broker
// (broker/server's Server).
type registryUsers interface {
	CheckPassword(user, password string) bool
	RegistryMayWrite(topic string) func(user, host string) bool
}

// registryListener picks the listener the in-process registry connects
// to: the first of its client properties' security.protocol. With none,
// the broker refuses to start rather than serve a registry that never
// becomes ready.
func registryListener(ls []brokercfg.Listener, protocol string) (brokercfg.Listener, error) {
	var names []string
	for _, l := range ls {
		if strings.EqualFold(l.Protocol, protocol) {
			return l, nil
		}
		names = append(names, l.String()+" ("+l.Protocol+")")
	}
	return brokercfg.Listener{}, fmt.Errorf("schema.registry.listeners: the in-process registry connects with "+
		"schema.registry.kafkastore.security.protocol=%s and no advertised listener has it (%s): set it, with the "+
		"schema.registry.kafkastore.* client properties, to a listener's protocol, or add a PLAINTEXT listener "+
		"(on 127.0.0.1 it stays local)", protocol, strings.Join(names, ", "))
}

// newRegistryCommand runs the schema registry on its own, against any
// cluster: the same server `tributary broker` runs in-process.
func newRegistryCommand() *cobra.Command {
	var bootstrap, listen, topic, authMethod string
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Run the Confluent-compatible schema registry against a cluster",
		Long: `Serve the Confluent Schema Registry API (subjects, versions, ids, compatibility,
config, mode) on --listen, storing everything in the compacted topic --topic
of the cluster at --bootstrap. Any number may run against one cluster:
each reads the topic and serves the same ids (docs/registry.md).
` + "`tributary broker --set schema.registry.listeners=http://host:port`" + ` runs the
same server inside the broker.`,
		Example: `  tributary registry -b 127.0.0.1:9092 --listen 127.0.0.1:8081
  curl -s -H 'Content-Type: application/vnd.schemaregistry.v1+json' \
    -d '{"schema":"{\"type\":\"string\"}"}' http://127.0.0.1:8081/subjects/demo-value/versions`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			brokers := splitList(bootstrap)
			if len(brokers) == 0 {
				return fmt.Errorf("--bootstrap is required")
			}
			security, err := kafkacli.ClientOpts()
			if err != nil {
				return err
			}
			rc := registry.Config{Brokers: brokers, Listen: strings.TrimPrefix(listen, "http://"), Topic: topic,
				ClientOpts: security, Logger: slog.Default()}
			switch strings.ToUpper(authMethod) {
			case "NONE", "":
			case "BASIC":
				props := kafkacli.CurrentProps()
				if p := props.Protocol(); p != "SASL_PLAINTEXT" && p != "SASL_SSL" {
					return fmt.Errorf("--authentication-method BASIC checks each user's password by a SASL login to the cluster: "+
						"give the registry a SASL listener (-X security.protocol=SASL_SSL -X sasl.mechanism=... --command-config), not %s", p)
				}
				tc, err := props.TLSConfig()
				if err != nil {
					return err
				}
				mech := props["sasl.mechanism"]
				if mech == "" {
					mech = props["sasl.mechanisms"]
				}
				if rc.Authenticate, err = registry.ClusterLogin(brokers, mech, tc); err != nil {
					return err
				}
			default:
				return fmt.Errorf("--authentication-method %q: want NONE or BASIC", authMethod)
			}
			r, err := registry.Start(rc)
			if err != nil {
				return err
			}
			<-ctx.Done()
			return r.Close(context.Background())
		},
	}
	f := cmd.Flags()
	addBootstrapFlag(f, &bootstrap)
	f.StringVar(&listen, "listen", "127.0.0.1:8081", "the API's address, host:port")
	f.StringVar(&topic, "topic", registry.DefaultTopic, "the compacted topic holding the schemas (Confluent's kafkastore.topic)")
	f.StringVar(&authMethod, "authentication-method", "NONE", "BASIC: every request needs HTTP basic auth with a user of the cluster, checked by a SASL login with the registry's own sasl.mechanism (Confluent's authentication.method)")
	return cmd
}
