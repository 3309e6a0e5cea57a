package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/console"
	"github.com/tributary-io/tributary/internal/kafkacli"
)

// defaultConsoleListen is loopback: the console has no login of its own,
// so whoever reaches it acts with the console's Kafka credentials.
const defaultConsoleListen = "127.0.0.1:8088"

func newConsoleCommand() *cobra.Command {
	var bootstrap, listen, registryURL, jobsURL, trackerURL, lakeURI string
	var sampleEvery, loginIdle time.Duration
	var loginMech string
	var loginMax int
	var readOnly, behindTLS bool
	var allowedHosts []string
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the web console: cluster overview, topics, messages, consumer groups",
		Long: `Serve the web console on --listen (default 127.0.0.1:8088) for the cluster at
--bootstrap: an overview of brokers and partition health, topics with their
partitions and configs (create, edit configs, add partitions, delete), a
message browser (by partition and offset, by time, newest first, with a
search over keys, values and headers, and producing a message), and consumer
groups with their lag per partition and offset resets with a preview; with
--registry, the registry's subjects and decoded Avro/Protobuf values; with
--jobs, the load jobs with their runs, to trigger, pause or resume. The
Pipeline page follows events from the tracker (--tracker: its /metrics,
accepted, rejected and spooled events; the <topic>.bad topics: the last
events a schema refused, with the reasons) to the lake (--lake: load runs
with their units and files, event hours with their _SUCCESS marker, and
the bad records in _errors). The overview charts the last hour of records
in and consumed and under-replicated partitions, and a group's page its lag,
from samples the console takes every --sample-every over the Kafka protocol.

The console is a Kafka client: it connects with the client properties of
--command-config and -X (TLS, SASL), and everything it does runs as that
principal. With --login PLAIN|SCRAM-SHA-256|SCRAM-SHA-512 it shows a
sign-in form instead, and every page and action runs as the person signed
in, through a Kafka client of their own (the credentials stay in the
console's memory for the session, never in a page or a log); the ACLs and
Users pages then show what that person may see. Without --login it has no
login of its own, so it listens on loopback unless --listen names another
address; there, put it behind a proxy that authenticates, and name it with
--allowed-host (other Host headers get a 403, against DNS rebinding).
The console serves plain HTTP: --login beyond loopback is refused unless
--behind-tls-proxy says a proxy terminates TLS in front of it.
--read-only refuses every change with a 403.
Every page is served from the binary; nothing is fetched from the internet
(docs/console.md).`,
		Example: `  tributary console -b localhost:9092
  # then open http://127.0.0.1:8088

  # The whole pipeline: tracker counters, the lake's runs and partitions.
  tributary console -b localhost:9092 --jobs http://127.0.0.1:8089 \
    --tracker http://127.0.0.1:9645 --lake hdfs://namenode:8020/lake

  # Each person signs in with their own SCRAM user; the broker's ACLs decide.
  tributary console -b kafka-1:9092 --login SCRAM-SHA-512

  # Look, never touch; against a cluster with SASL/SCRAM over TLS.
  tributary console -b kafka-1:9093 --read-only \
    -X security.protocol=SASL_SSL -X sasl.mechanism=SCRAM-SHA-512 \
    -X sasl.jaas.config='org.apache.kafka.common.security.scram.ScramLoginModule required username="ops" password="…";'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			seeds, err := kafkacli.ParseBootstrap(bootstrap)
			if err != nil {
				return err
			}
			security, err := kafkacli.ClientOpts()
			if err != nil {
				return err
			}
			var login *console.Login
			if loginMech != "" {
				login = &console.Login{Mechanism: loginMech, MaxSessions: loginMax, Idle: loginIdle}
				// Signed-in people have principals; the console may have
				// none (no SASL in -X), so its own sampler runs only
				// when asked for.
				if !cmd.Flags().Changed("sample-every") {
					sampleEvery = -1
				}
			}
			c, err := startConsole(listen, console.Config{Login: login, Seeds: seeds, ClientOpts: security, ReadOnly: readOnly, BehindTLSProxy: behindTLS,
				RegistryURL: registryURL, JobsURL: jobsURL, TrackerURL: trackerURL, LakeURI: lakeURI, SampleEvery: sampleEvery, AllowedHosts: allowedHosts, Logger: slog.Default()})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Tributary console: %s\n", c.URL)
			<-ctx.Done()
			return c.Close()
		},
	}
	f := cmd.Flags()
	addBootstrapFlag(f, &bootstrap)
	f.StringVar(&listen, "listen", defaultConsoleListen, "the console's address, host:port; on loopback unless told otherwise, since the console has no login of its own")
	f.StringVar(&registryURL, "registry", "", "the schema registry's URL: its subjects on the Schemas pages, and registry-framed values (Avro, Protobuf, JSON Schema) decoded in the message browser")
	f.StringVar(&jobsURL, "jobs", "", "the jobs scheduler's API (tributary jobs --listen): its load jobs, their runs, and trigger, pause, resume")
	f.StringVar(&trackerURL, "tracker", "", "the tracker's admin address (its --admin-listen, e.g. http://127.0.0.1:9645): events accepted, rejected and spooled per second on the Pipeline page")
	f.StringVar(&lakeURI, "lake", "", "a load job's target, file:///path or hdfs://namenode:port/path: its load runs, event hours with their _SUCCESS marker and _errors on the Pipeline page (read only)")
	f.DurationVar(&sampleEvery, "sample-every", console.DefaultSampleEvery, "how often the console samples the cluster for its charts (end offsets, group commits, ISRs); the charts keep the last hour")
	f.StringVar(&loginMech, "login", "", "sign each person in with their own SASL credentials: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (the mechanism of the listener at --bootstrap); every action then runs as them. The charts sample as the console's own principal (-X) only when --sample-every is given")
	f.IntVar(&loginMax, "login-max-sessions", console.DefaultMaxSessions, "with --login, the most people signed in at once (each holds a Kafka client)")
	f.DurationVar(&loginIdle, "login-idle", console.DefaultSessionIdle, "with --login, a session unused this long ends (and 12 h after sign-in whatever its use)")
	f.StringSliceVar(&allowedHosts, "allowed-host", nil, "off loopback, the host names the console answers to (the Host header; IP addresses always pass); default the --listen host when it is a name. Others get a 403, against DNS rebinding")
	f.BoolVar(&behindTLS, "behind-tls-proxy", false, "browsers reach the console over HTTPS through a proxy that terminates TLS: cookies are marked Secure. Needed for --login off loopback, where passwords must not cross the network in clear")
	f.BoolVar(&readOnly, "read-only", false, "refuse every change (create, configure, delete, produce, reset offsets) with a 403")
	return cmd
}

// runningConsole is a console served on a listener.
type runningConsole struct {
	URL string
	srv *http.Server
	c   *console.Server
}

// startConsole serves a console on listen, in the background.
func startConsole(listen string, cfg console.Config) (*runningConsole, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("console --listen %s: %w", listen, err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	ip := net.ParseIP(host)
	cfg.LoopbackOnly = ip != nil && ip.IsLoopback()
	if lh, _, _ := net.SplitHostPort(listen); !cfg.LoopbackOnly && len(cfg.AllowedHosts) == 0 && lh != "" && net.ParseIP(lh) == nil {
		// A name to listen on is the name users type.
		cfg.AllowedHosts = []string{lh}
	}
	if !cfg.LoopbackOnly {
		// The console serves plain HTTP: off loopback, a sign-in form
		// would carry passwords and session ids in clear.
		if cfg.Login != nil && !cfg.BehindTLSProxy {
			ln.Close()
			return nil, fmt.Errorf("console --login on %s, beyond loopback, over plain HTTP would send passwords in clear: put it behind a proxy that terminates TLS and give --behind-tls-proxy, or listen on loopback", ln.Addr())
		}
		if len(cfg.AllowedHosts) == 0 {
			cfg.Logger.Warn("the console answers only to IP addresses and loopback names: name it with --allowed-host to reach it by a host name", "listen", ln.Addr().String())
		}
		if cfg.Login == nil {
			cfg.Logger.Warn("the console listens beyond loopback without --login: whoever reaches it acts with its Kafka credentials", "listen", ln.Addr().String(), "read_only", cfg.ReadOnly)
		}
	}
	c, err := console.New(cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Error("console stopped", "err", err)
		}
	}()
	u := "http://" + ln.Addr().String()
	if cfg.LoopbackOnly {
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		u = "http://localhost:" + port
	}
	return &runningConsole{URL: u, srv: srv, c: c}, nil
}

func (r *runningConsole) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	r.c.Close()
	return err
}
