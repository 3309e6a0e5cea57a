package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/formats/schema"
	"github.com/tributary-io/tributary/formats/srclient"
	"github.com/tributary-io/tributary/internal/admin"
	"github.com/tributary-io/tributary/tracker"
	"github.com/tributary-io/tributary/tracker/collect"
	trackerjs "github.com/tributary-io/tributary/tracker/js"
	"github.com/tributary-io/tributary/tracker/validate"
)

// trackerOptions are the tracker command's flags.
type trackerOptions struct {
	listen, bootstrap, topic, spoolDir, adminListen string
	// sslKeystore and sslKeyPassword make --listen serve HTTPS, with the
	// broker's PEM keystore format (docs/security.md).
	sslKeystore, sslKeyPassword          string
	spoolMaxBytes                        int64
	writeKeys, trustedProxies            []string
	ack, ip                              string
	registry, validate                   string
	sendInvalid, adminPprof, checkConfig bool
}

// trackerFile is the part of the --config file that has no flag.
type trackerFile struct {
	Sources []struct {
		Name           string   `yaml:"name"`
		WriteKey       string   `yaml:"write_key"`
		Topic          string   `yaml:"topic"`
		Types          []string `yaml:"types"`
		CORSOrigins    []string `yaml:"cors_origins"`
		Schema         string   `yaml:"schema"`
		SendInvalid    bool     `yaml:"send_invalid"`
		Validate       string   `yaml:"validate"`
		BadTopic       string   `yaml:"bad_topic"`
		TrustContextIP bool     `yaml:"trust_context_ip"`
	} `yaml:"sources"`
	Limits struct {
		EventBytes int `yaml:"event_bytes"`
		BatchBytes int `yaml:"batch_bytes"`
	} `yaml:"limits"`
	Dedup struct {
		Enabled *bool         `yaml:"enabled"`
		Window  time.Duration `yaml:"window"`
		Max     int           `yaml:"max"`
	} `yaml:"dedup"`
	Privacy struct {
		DNT    bool   `yaml:"dnt"`
		GPC    bool   `yaml:"gpc"`
		Action string `yaml:"action"`
	} `yaml:"privacy"`
	Timeouts struct {
		ReadHeader time.Duration `yaml:"read_header"`
		Read       time.Duration `yaml:"read"`
		Write      time.Duration `yaml:"write"`
		Idle       time.Duration `yaml:"idle"`
	} `yaml:"timeouts"`
}

const noWriteKeyHelp = `no write key configured, so no source could send events; add one with
  --write-key KEY                 (a source sending to --topic), or
  TRIBUTARY_WRITE_KEY=KEY         in the environment, or
  a "sources:" list in the --config file (see "tributary tracker --help")`

func newTrackerCommand() *cobra.Command {
	cmd := trackerCommand(func(cmd *cobra.Command, cfg collect.Config, o *trackerOptions) error {
		return runTracker(cmd.Context(), cfg, o, cmd)
	})
	cmd.AddCommand(newTrackerTailCommand())
	return cmd
}

// trackerCommand is the command with its final step, run, replaceable by
// tests.
func trackerCommand(run func(*cobra.Command, collect.Config, *trackerOptions) error) *cobra.Command {
	var o trackerOptions
	cmd := &cobra.Command{
		Use:   "tracker",
		Short: "Run the activity tracker: a Segment-compatible HTTP collector",
		Long: `Run the HTTP collector that takes activity events from web sites, apps and
servers and ships them to the broker.

The API is Segment's tracking API, so Segment's libraries work when pointed
at it: POST /v1/track, /v1/page, /v1/screen, /v1/identify, /v1/group,
/v1/alias and /v1/batch, with the write key as the Basic auth user name or
in a "writeKey" field. GET /v1/pixel.gif?data=<base64 JSON> (or
?writeKey=K&event=E&userId=U&prop=v) records an event from an e-mail or a
page without JavaScript and always answers a 1x1 GIF.

Each write key is a source: it decides the topic its events go to, the
calls it may make, the browser origins allowed to send with it (CORS) and
the schema events are validated against (default: the activity schema,
"formats/schema" activity.yaml). Answers:
  200  accepted (a batch lists the events it rejected, with path and reason)
  400  malformed JSON or a schema violation, with the field path and reason
  401  missing or unknown write key;  403  origin or call not allowed
  413  event over 32 KB or batch over 500 KB (the limits are configurable)
  503  delivery cannot take events now; Retry-After says when to retry

Events are enriched with receivedAt, a messageId when the sender gave none,
the client IP (from the socket, or X-Forwarded-For when the peer is a
--trusted-proxies address), anonymised by default (--ip), and the browser,
OS, device and bot flag parsed from the user agent. Retried duplicates are
dropped by messageId (10 minutes by default). Events are keyed by userId,
else anonymousId, so one visitor's events stay in order in one partition.

A 2xx means the event is safe: written and fsynced to the spool in
--spool-dir (--ack spool, the default), from which it is produced with
acks=all in order as soon as the broker is reachable, also after a restart;
or acknowledged by the broker itself (--ack broker). A spool over
--spool-max-bytes answers 503 with Retry-After.

With no write key the tracker refuses to start. --write-key KEY (repeatable)
defines sources that send to --topic; the --config file can list sources in
full, and set what has no flag:

  listen: 0.0.0.0:8080
  bootstrap: localhost:9092
  sources:
    - name: website            # the metrics label (never the key)
      write_key: wk_web_1
      topic: web-events        # default: --topic
      types: [page, track, identify]   # default: all
      cors_origins: ["https://www.example.com"]   # "*" for any
      schema: ./web.yaml       # default: the activity schema
      send_invalid: true       # invalid events raw to <topic>.invalid
      validate: strict         # against the --registry's JSON schemas:
                               # strict (no schema: refused) or permissive
      bad_topic: web-events.bad  # refused events with the reasons
                                 # (default with validate: <topic>.bad)
      trust_context_ip: false  # keep a context.ip sent by a server library
  limits: {event_bytes: 32768, batch_bytes: 512000}
  dedup: {enabled: true, window: 10m, max: 1048576}
  privacy: {dnt: true, gpc: true, action: drop}   # or strip: no IP, no UA
  timeouts: {read_header: 5s, read: 15s, write: 15s, idle: 60s}
  tail:                    # log files to follow beside the collector
    files: [{paths: ["/var/log/nginx/access.log*"], format: combined}]
                           # see "tributary tracker tail --help"

With --registry, a source with "validate" (or --validate for the
--write-key sources) checks each event, as sent, against the latest JSON
schema registered under "<topic>-<event>-value" (a track call's event name)
or "<topic>-<type>-value" (page, identify, ...). An invalid event is
listed in the answer with code registry_schema, the subject and version,
and written to the bad-events topic with the reasons and the original
payload. Subjects are looked up again after 30 s; when the registry cannot
be asked, a strict source answers 503 and a permissive one accepts events
unchecked.

Metrics (events received, accepted, rejected by reason and source,
duplicates, request latency) are at /metrics on --admin-listen, with
/healthz and /readyz. SIGTERM or Ctrl-C stops it: in-flight requests
finish, then delivery is closed.`,
		Example: `  # Quick start: one source, events to the "events" topic.
  tributary tracker --write-key demo-key
  curl -u demo-key: http://127.0.0.1:8080/v1/track \
    -d '{"userId":"u1","event":"Signed Up","properties":{"plan":"pro"}}'

  # A batch, and an e-mail open pixel.
  curl -u demo-key: http://127.0.0.1:8080/v1/batch \
    -d '{"batch":[{"type":"page","anonymousId":"a1","name":"Home"},{"type":"track","userId":"u1","event":"Click"}]}'
  curl -o /dev/null 'http://127.0.0.1:8080/v1/pixel.gif?writeKey=demo-key&event=Email+Opened&userId=u1'

  # Public, behind a load balancer on 10.0.0.0/8, sources from a file.
  tributary tracker --listen 0.0.0.0:8080 --trusted-proxies 10.0.0.0/8 \
    --bootstrap broker1:9092,broker2:9092 --config tracker.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := trackerConfig(cmd, &o)
			if err != nil {
				return err
			}
			if o.checkConfig {
				return checkTrackerConfig(cmd, cfg)
			}
			return run(cmd, cfg, &o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address of the HTTP collector")
	addBootstrapFlag(f, &o.bootstrap)
	f.StringVar(&o.topic, "topic", "events", "topic of the --write-key sources, and of file sources that name none")
	f.StringVar(&o.spoolDir, "spool-dir", "./tributary-spool", "directory of the disk spool of accepted events")
	f.Int64Var(&o.spoolMaxBytes, "spool-max-bytes", 1<<30, "bound of the spool; when full, senders get 503 with Retry-After and /readyz fails")
	f.StringArrayVar(&o.writeKeys, "write-key", nil, "a write key whose source sends to --topic (repeatable; env TRIBUTARY_WRITE_KEY)")
	f.StringVar(&o.ack, "ack", string(tracker.AckSpool), "when an event is acknowledged: spool (written and fsynced) or broker (acks=all)")
	f.StringVar(&o.ip, "ip", string(collect.IPAnonymize), "client IP in context.ip: anonymize (last IPv4 octet, last 80 IPv6 bits zeroed), keep or drop")
	f.StringSliceVar(&o.trustedProxies, "trusted-proxies", nil, "proxies (IP or CIDR) whose X-Forwarded-For is believed")
	f.StringVar(&o.registry, "registry", "", "schema registry URL whose JSON schemas validate the events of sources with validate (docs/tracker.md)")
	f.StringVar(&o.validate, "validate", "", "validate the --write-key sources' events against --registry: strict or permissive")
	f.BoolVar(&o.sendInvalid, "send-invalid", false, "send the --write-key sources' invalid events raw to <topic>.invalid")
	f.StringVar(&o.adminListen, "admin-listen", "127.0.0.1:9645", "address of /metrics, /healthz, /readyz, /loglevel and /debug/pprof; empty to turn off")
	f.StringVar(&o.sslKeystore, "ssl-keystore-location", "", "serve --listen over HTTPS: a PEM file of the private key and certificate chain, as the broker's ssl.keystore.location (re-read when it changes)")
	f.StringVar(&o.sslKeyPassword, "ssl-key-password", "", "password of an encrypted PKCS#8 key in --ssl-keystore-location (better in the config file or TRIBUTARY_SSL_KEY_PASSWORD than on the command line)")
	addAdminPprofFlag(f, &o.adminPprof)
	addAdminAccessFlags(f)
	addCheckConfigFlag(f, &o.checkConfig)
	return cmd
}

// trackerConfig builds the collector's configuration from the flags (which
// config.load already merged with the environment and the file) and the
// file's sections that have no flag.
func trackerConfig(cmd *cobra.Command, o *trackerOptions) (collect.Config, error) {
	var cfg collect.Config
	var tf trackerFile
	file, _ := cmd.Flags().GetString("config")
	if file == "" {
		file = os.Getenv(env("config"))
	}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return cfg, err
		}
		if err := yaml.Unmarshal(data, &tf); err != nil {
			return cfg, fmt.Errorf("config file %s: %w", file, err)
		}
	}
	if o.topic == "" {
		return cfg, errors.New("--topic is empty")
	}
	var checker *validate.Checker
	useRegistry := func(src *collect.Source, mode, badTopic string) error {
		switch mode {
		case "":
			if badTopic != "" {
				src.BadTopic = badTopic
			}
			return nil
		case "strict", "permissive":
		default:
			return fmt.Errorf("source %s: validate %q: want strict or permissive", src.Name, mode)
		}
		if o.registry == "" {
			return fmt.Errorf("source %s: validate %s needs --registry URL", src.Name, mode)
		}
		if checker == nil {
			checker = validate.New(srclient.New(o.registry), 0)
		}
		src.Registry, src.RegistryStrict, src.BadTopic = checker, mode == "strict", badTopic
		return nil
	}
	for i, k := range o.writeKeys {
		src := collect.Source{Name: fmt.Sprintf("write-key-%d", i+1), WriteKey: k, Topic: o.topic, CORSOrigins: []string{"*"}}
		if o.sendInvalid {
			src.InvalidTopic = o.topic + ".invalid"
		}
		if err := useRegistry(&src, o.validate, ""); err != nil {
			return cfg, err
		}
		cfg.Sources = append(cfg.Sources, src)
	}
	for i, fs := range tf.Sources {
		src := collect.Source{Name: fs.Name, WriteKey: fs.WriteKey, Topic: fs.Topic, Types: fs.Types, CORSOrigins: fs.CORSOrigins, TrustContextIP: fs.TrustContextIP}
		if src.Name == "" {
			src.Name = fmt.Sprintf("source-%d", i+1)
		}
		if src.Topic == "" {
			src.Topic = o.topic
		}
		if fs.SendInvalid {
			src.InvalidTopic = src.Topic + ".invalid"
		}
		if err := useRegistry(&src, fs.Validate, fs.BadTopic); err != nil {
			return cfg, err
		}
		if fs.Schema != "" {
			s, err := schema.ParseFile(fs.Schema)
			if err != nil {
				return cfg, fmt.Errorf("source %s: schema: %w", src.Name, err)
			}
			src.Schema = s
		}
		cfg.Sources = append(cfg.Sources, src)
	}
	if len(cfg.Sources) == 0 {
		return cfg, errors.New(noWriteKeyHelp)
	}
	switch tracker.AckMode(o.ack) {
	case tracker.AckSpool, tracker.AckBroker:
	default:
		return cfg, fmt.Errorf("--ack %q: want spool or broker", o.ack)
	}
	cfg.IP = collect.IPMode(o.ip)
	for _, p := range o.trustedProxies {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			a, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return cfg, fmt.Errorf("--trusted-proxies %q: want an IP or CIDR", p)
			}
			pfx = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		cfg.TrustedProxies = append(cfg.TrustedProxies, pfx)
	}
	cfg.MaxEventBytes, cfg.MaxBatchBytes = tf.Limits.EventBytes, tf.Limits.BatchBytes
	cfg.DedupDisabled = tf.Dedup.Enabled != nil && !*tf.Dedup.Enabled
	cfg.DedupWindow, cfg.DedupMax = tf.Dedup.Window, tf.Dedup.Max
	cfg.HonorDNT, cfg.HonorGPC, cfg.PrivacyAction = tf.Privacy.DNT, tf.Privacy.GPC, collect.PrivacyAction(tf.Privacy.Action)
	cfg.ReadHeaderTimeout, cfg.ReadTimeout = tf.Timeouts.ReadHeader, tf.Timeouts.Read
	cfg.WriteTimeout, cfg.IdleTimeout = tf.Timeouts.Write, tf.Timeouts.Idle
	return cfg, nil
}

func runTracker(ctx context.Context, cfg collect.Config, o *trackerOptions, cmd *cobra.Command) error {
	if ctx == nil {
		ctx = context.Background()
	}
	logger := slog.Default()
	reg := admin.NewRegistry()
	cfg.Registry, cfg.Logger = reg, logger
	brokers := splitList(o.bootstrap)
	if len(brokers) == 0 {
		return errNoBootstrap
	}
	sink, sinkReady, err := newTrackerSink(trackerSinkOptions{
		Bootstrap: brokers, SpoolDir: o.spoolDir, SpoolMaxBytes: o.spoolMaxBytes,
		Ack: tracker.AckMode(o.ack), Registerer: reg,
	}, logger)
	if err != nil {
		return err
	}
	defer sink.Close()
	// The config file's tail: section, if any, runs beside the collector.
	stopTail, err := startTrackerTail(ctx, cmd, brokers, o.topic, o.spoolDir, reg, logger)
	if err != nil {
		return err
	}
	defer stopTail()
	c, err := collect.New(cfg, sink)
	if err != nil {
		return err
	}
	var ready atomic.Bool
	if o.adminListen != "" {
		opts, err := adminOptions(o.adminPprof)
		if err != nil {
			return err
		}
		a, err := admin.Listen(o.adminListen, reg, func() error {
			if !ready.Load() {
				return errors.New("the tracker is starting or stopping")
			}
			if err := sinkReady(); err != nil {
				return err
			}
			return c.Ready() // delivery refused events within Retry-After
		}, logger, opts...)
		if err != nil {
			return fmt.Errorf("--admin-listen %s: %w", o.adminListen, err)
		}
		defer a.Close(context.Background())
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	scheme := "http"
	if o.sslKeystore != "" {
		// The broker's TLS files and reload: a renewed certificate
		// written over the file serves new connections within a second.
		st, err := auth.NewServerTLS(auth.TLSSettings{Listener: "tracker", Keystore: o.sslKeystore, KeyPassword: o.sslKeyPassword, Logger: logger})
		if err != nil {
			ln.Close()
			return fmt.Errorf("--ssl-keystore-location: %w", err)
		}
		ln, scheme = tls.NewListener(ln, st.Config()), "https"
	}
	srv := c.HTTPServer(o.listen)
	srv.Handler = trackerjs.Mount(srv.Handler) // the browser library, at /tracker.js
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	ready.Store(true)
	logger.Info("tracker ready", "addr", ln.Addr().String(), "scheme", scheme, "sources", len(cfg.Sources), "bootstrap", o.bootstrap)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sig)
	select {
	case got := <-sig:
		logger.Info("stopping", "signal", got.String())
	case <-ctx.Done():
	case err := <-done:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	ready.Store(false)
	stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return srv.Shutdown(stop)
}
