package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	brokercfg "github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/broker/server"
	"github.com/tributary-io/tributary/internal/admin"
)

func newBrokerCommand() *cobra.Command {
	var (
		nodeID                int
		listeners, advertised string
		logDirs               string
		sets                  []string
		noSendfile, pprof     bool
		checkConfig           bool
		adminListen           string
	)
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run a Kafka-compatible broker",
		Long: `Run a broker node that speaks the Apache Kafka protocol, so any Kafka
client, tool or connector works with it, and stores Kafka's on-disk format.

With no flags it is a single node in combined mode (process.roles =
broker,controller, node.id 1) on PLAINTEXT://127.0.0.1:9092 with its data in
./tributary-data. With controller.quorum.voters it is a node of a cluster:
a controller, a broker or both (process.roles; docs/cluster.md). It logs
"broker ready" once it accepts connections ("controller ready" for a
controller-only node); SIGTERM
or Ctrl-C stops it cleanly: in-flight requests finish, logs are flushed, and
the checkpoints and clean-shutdown marker are written so the next start
scans nothing.

Settings use Kafka's broker property names, from three places, the later
winning: a YAML file (--config) with Kafka's names as keys, the environment
as TRIBUTARY_ and the name in capitals with dots as underscores
(TRIBUTARY_LOG_RETENTION_HOURS), and the flags, of which --set name=value
takes any property. An unknown property or a bad value stops the start with a
message naming it.`,
		Example: `  # A single node on the defaults; metrics at http://127.0.0.1:9644/metrics
  # (the admin port is the first listener's + 552 unless --admin-listen says).
  tributary broker

  # Another port and data directory, one-hour retention.
  tributary broker --listeners PLAINTEXT://127.0.0.1:19092 --log-dirs /var/lib/tributary \
    --set log.retention.hours=1

  # The same settings from a file and the environment.
  printf 'listeners: PLAINTEXT://127.0.0.1:19092\nlog.dirs: /var/lib/tributary\n' > broker.yaml
  TRIBUTARY_LOG_RETENTION_HOURS=1 tributary broker --config broker.yaml

  # A controller-only node of a three-voter quorum (docs/cluster.md).
  tributary broker --node-id 1 --log-dirs ./c1 --listeners CONTROLLER://127.0.0.1:9193 \
    --set process.roles=controller --set controller.listener.names=CONTROLLER \
    --set controller.quorum.voters=1@127.0.0.1:9193,2@127.0.0.1:9293,3@127.0.0.1:9393`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			props, err := brokerProperties(cmd, sets)
			if err != nil {
				return err
			}
			flagProps := map[string]string{"node-id": "node.id", "listeners": "listeners", "advertised-listeners": "advertised.listeners", "log-dirs": "log.dirs"}
			for flag, name := range flagProps {
				if f := cmd.Flags().Lookup(flag); f.Changed {
					props[name] = f.Value.String()
				}
			}
			cfg, err := brokercfg.ParseBroker(props)
			if err != nil {
				return err
			}
			if checkConfig {
				printBrokerCheck(cmd.OutOrStdout(), cfg)
				return nil
			}
			if !setByUser(cmd, "admin-listen") {
				// Left unset: derived from the first listener, so that
				// nodes on one host each get their own.
				if ls, err := cfg.Listeners(); err == nil && len(ls) > 0 {
					adminListen = admin.BrokerAddr(ls[0].Port)
				}
			}
			return runBroker(cmd.Context(), cfg, noSendfile, adminListen, pprof)
		},
	}
	f := cmd.Flags()
	f.IntVar(&nodeID, "node-id", 1, "node.id: this node's id")
	f.StringVar(&listeners, "listeners", "PLAINTEXT://127.0.0.1:9092", "listeners: NAME://host:port,...")
	f.StringVar(&advertised, "advertised-listeners", "", "advertised.listeners: what clients are told to connect to")
	f.StringVar(&logDirs, "log-dirs", "./tributary-data", "log.dirs: comma-separated data directories")
	f.StringArrayVar(&sets, "set", nil, "any broker property as name=value (repeatable)")
	f.BoolVar(&noSendfile, "no-sendfile", false, "copy fetched records through user space instead of sendfile(2)")
	f.StringVar(&adminListen, "admin-listen", admin.BrokerDefault, "address of /metrics, /healthz, /readyz, /loglevel and /debug/pprof; empty to turn off. "+
		"Left unset, 127.0.0.1 at the first listener's port + 552 (9644 for 9092), so that nodes on one host do not collide")
	addAdminPprofFlag(f, &pprof)
	addAdminAccessFlags(f)
	addCheckConfigFlag(f, &checkConfig)
	addScramFlag(f)
	return cmd
}

// brokerProperties merges, by Kafka property name, the YAML file, the
// TRIBUTARY_* environment and --set flags, in rising precedence.
func brokerProperties(cmd *cobra.Command, sets []string) (map[string]string, error) {
	file := ""
	if f := cmd.Flags().Lookup("config"); f != nil {
		file = f.Value.String()
	}
	if file == "" {
		file = os.Getenv(env("config"))
	}
	props := map[string]string{}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var tree map[string]any
		if err := yaml.Unmarshal(data, &tree); err != nil {
			return nil, fmt.Errorf("config file %s: %w", file, err)
		}
		flatten("", tree, props)
		// Keys of the command's own flags (log.level, admin.listen,
		// admin.pprof, ...) were applied to those flags by config.load;
		// only Kafka's names are broker properties.
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if k := key(f.Name); brokercfg.BrokerDefs[k].Name == "" {
				delete(props, k)
			}
		})
		if cmd.Root() != nil {
			cmd.Root().PersistentFlags().VisitAll(func(f *pflag.Flag) { delete(props, key(f.Name)) })
		}
	}
	for name := range brokercfg.BrokerDefs {
		if v, ok := os.LookupEnv(env(name)); ok {
			props[name] = v
		}
	}
	for _, s := range sets {
		name, v, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--set %q: want name=value", s)
		}
		props[name] = v
	}
	return props, nil
}

// flatten turns nested YAML maps into dotted Kafka names, so both
// "log.dirs: x" and "log: {dirs: x}" work; lists become comma-separated.
func flatten(prefix string, v any, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, sub := range t {
			name := k
			if prefix != "" {
				name = prefix + "." + k
			}
			flatten(name, sub, out)
		}
	case []any:
		parts := make([]string, len(t))
		for i, p := range t {
			parts[i] = fmt.Sprint(p)
		}
		out[prefix] = strings.Join(parts, ",")
	case nil:
	default:
		out[prefix] = fmt.Sprint(t)
	}
}

func runBroker(ctx context.Context, cfg *brokercfg.Broker, noSendfile bool, adminListen string, pprof bool) error {
	raiseHeapFloor()
	// Caught from the start: a SIGTERM that arrives while the broker starts
	// (after it logged "broker ready", before the registry is up) waits
	// for the start to finish and then stops it cleanly, instead of
	// killing the process by the signal's default action.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sig)
	reg := admin.NewRegistry()
	scram, err := parseAddScram(addScram)
	if err != nil {
		return err
	}
	s := server.New(cfg, server.Options{Logger: slog.Default(), NoSendfile: noSendfile, Registry: reg, BootstrapScram: scram})
	var ready atomic.Bool
	if adminListen != "" {
		opts, err := adminOptions(pprof)
		if err != nil {
			return err
		}
		a, err := admin.Listen(adminListen, reg, func() error {
			if !ready.Load() {
				return errors.New("the broker is starting or stopping")
			}
			return s.Ready()
		}, slog.Default(), opts...)
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("--admin-listen %s: %w: another process (another node on this host?) has it; "+
				"set --admin-listen to a free address, or to \"\" to turn the admin endpoint off", adminListen, err)
		}
		if err != nil {
			return fmt.Errorf("--admin-listen %s: %w", adminListen, err)
		}
		defer a.Close(context.Background())
	}
	if err := s.Start(); err != nil {
		return err
	}
	sr, err := startRegistry(cfg, s)
	if err != nil {
		stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.Shutdown(stop)
		return err
	}
	// The registry is a client of this broker: it stops first, or the
	// broker's shutdown would wait out its long-polling fetch.
	stopRegistry := func() {
		if sr != nil {
			stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			sr.Close(stop)
		}
	}
	ready.Store(true)
	defer ready.Store(false)
	select {
	case got := <-sig:
		slog.Info("stopping", "signal", got.String())
	case <-ctx.Done():
	case <-s.Failed():
		// Every log dir failed: nothing left to serve (as Kafka halts).
		stopRegistry()
		stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.Shutdown(stop)
		return s.FailedErr()
	}
	stopRegistry()
	stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.Shutdown(stop)
}
