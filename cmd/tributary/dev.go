package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"

	brokercfg "github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/broker/server"
	"github.com/tributary-io/tributary/console"
	"github.com/tributary-io/tributary/formats/schema"
	"github.com/tributary-io/tributary/internal/admin"
	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/jobs"
	"github.com/tributary-io/tributary/tracker"
	"github.com/tributary-io/tributary/tracker/collect"
	trackerjs "github.com/tributary-io/tributary/tracker/js"
	"github.com/tributary-io/tributary/tracker/simulate"
)

// devOptions are `tributary dev`'s flags.
type devOptions struct {
	dataDir, brokerListen, registryListen, trackerListen, jobsListen, adminListen string
	consoleListen                                                                 string
	target, writeKey, tableFormat                                                 string
	generate                                                                      bool
	rate                                                                          float64
	loadEvery                                                                     time.Duration
}

func newDevCommand() *cobra.Command {
	var o devOptions
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole pipeline in one process on embedded defaults: broker, tracker, scheduled loads",
		Long: `Run everything in one process, with its data in --data-dir:

  a single-node broker on --broker-listen (localhost:9092), with a topic "events";
  the tracker on --tracker-listen (localhost:8080), write key --write-key;
  the web console on --console-listen (http://localhost:8088);
  the jobs scheduler, loading "events" every --load-every into an Apache
  Iceberg table <data-dir>/lake/events (or under --target, e.g.
  hdfs://namenode:8020/lake): Parquet files by event hour, one snapshot per
  load, readable by DuckDB, pyiceberg, Spark and Trino (--table-format
  parquet for plain Parquet directories with _SUCCESS markers instead);
  with --generate, simulated web traffic (visitors who browse, search, click
  and sign up) sent through the tracker's HTTP API like a real site's.

It prints what to try next. Ctrl-C stops everything cleanly; a second start
continues where the first stopped (the topic, the lake and the job's
committed offsets are all in --data-dir).`,
		Example: `  tributary dev --generate
  tributary dev --generate --rate 1000 --load-every 30s
  tributary dev --target hdfs://127.0.0.1:8020/lake --generate
  tributary dev --generate --table-format parquet`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDev(ctx, cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", "./tributary-data", "where the broker's log, the tracker's spool, the jobs file and the lake live")
	f.StringVar(&o.brokerListen, "broker-listen", "127.0.0.1:9092", "the broker's client listener")
	f.StringVar(&o.registryListen, "registry-listen", "127.0.0.1:8081", "the schema registry's HTTP API (schema.registry.listeners); empty to turn it off")
	f.StringVar(&o.trackerListen, "tracker-listen", "127.0.0.1:8080", "the tracker's HTTP API")
	f.StringVar(&o.jobsListen, "jobs-listen", "127.0.0.1:9646", "the jobs API")
	f.StringVar(&o.consoleListen, "console-listen", defaultConsoleListen, "the web console (tributary console); empty to turn it off")
	f.StringVar(&o.adminListen, "admin-listen", "127.0.0.1:9644", "/metrics (broker, tracker and jobs together), /healthz, /readyz, /loglevel")
	addAdminAccessFlags(f)
	f.StringVar(&o.target, "target", "", "where the loads go (default file://<data-dir>/lake); hdfs://namenode:port/path for HDFS")
	f.StringVar(&o.tableFormat, "table-format", "iceberg", "what the lake is: iceberg (a table per topic, one snapshot per load) or parquet (plain directories)")
	f.StringVar(&o.writeKey, "write-key", "dev-key", "the tracker source's write key")
	f.BoolVar(&o.generate, "generate", false, "send simulated web traffic through the tracker")
	f.Float64Var(&o.rate, "rate", 200, "events per second of --generate")
	f.DurationVar(&o.loadEvery, "load-every", time.Minute, "how often the events are loaded into the lake")
	cmd.AddCommand(newDevCertsCommand())
	return cmd
}

// devTopic is the topic the tracker writes and the job loads.
const devTopic = "events"

func runDev(ctx context.Context, out io.Writer, o devOptions) error {
	logger := slog.Default()
	data, err := filepath.Abs(o.dataDir)
	if err != nil {
		return err
	}
	if o.target == "" {
		o.target = "file://" + filepath.Join(data, "lake")
	}
	if o.tableFormat != "iceberg" && o.tableFormat != "parquet" {
		return fmt.Errorf("--table-format %q: want iceberg or parquet", o.tableFormat)
	}
	if p := kafkacli.Protocol(); p != "PLAINTEXT" {
		// Its broker is its own, PLAINTEXT on loopback (docs/security.md):
		// TLS or SASL towards it could only fail, later and obscurely.
		return fmt.Errorf("tributary dev runs its own PLAINTEXT broker on loopback, so the client property security.protocol=%s cannot apply; drop it (--command-config, -X) for dev", p)
	}
	reg := admin.NewRegistry()

	// The broker.
	cfg, err := brokercfg.ParseBroker(map[string]string{
		"log.dirs":                     filepath.Join(data, "broker"),
		"listeners":                    "PLAINTEXT://" + o.brokerListen,
		"num.partitions":               "3",
		"offsets.topic.num.partitions": "3",
		"schema.registry.listeners":    o.registryListen,
	})
	if err != nil {
		return err
	}
	raiseHeapFloor()
	b := server.New(cfg, server.Options{Logger: logger, Registry: reg})
	if err := b.Start(); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.Shutdown(sctx)
	}()
	if err := ensureDevTopic(ctx, o.brokerListen); err != nil {
		return err
	}
	sr, err := startRegistry(cfg, b)
	if err != nil {
		return err
	}
	if sr != nil {
		defer sr.Close(context.Background())
	}

	consoleURL := ""
	if o.consoleListen != "" {
		registryURL := ""
		if o.registryListen != "" {
			registryURL = "http://" + o.registryListen
		}
		trackerURL := "" // the tracker's counters are on the shared admin endpoint
		if o.adminListen != "" {
			trackerURL = "http://" + o.adminListen
		}
		rc, err := startConsole(o.consoleListen, console.Config{Seeds: []string{o.brokerListen}, RegistryURL: registryURL,
			JobsURL: "http://" + o.jobsListen, TrackerURL: trackerURL, LakeURI: o.target, Logger: logger})
		if err != nil {
			return err
		}
		defer rc.Close()
		consoleURL = rc.URL
	}

	// The tracker.
	sink, sinkReady, err := newTrackerSink(trackerSinkOptions{
		Bootstrap: []string{o.brokerListen}, SpoolDir: filepath.Join(data, "spool"), SpoolMaxBytes: 1 << 30,
		Ack: tracker.AckSpool, Registerer: reg,
	}, logger)
	if err != nil {
		return err
	}
	defer sink.Close()
	c, err := collect.New(collect.Config{
		Sources:  []collect.Source{{Name: "dev", WriteKey: o.writeKey, Topic: devTopic, CORSOrigins: []string{"*"}}},
		Registry: reg, Logger: logger,
	}, sink)
	if err != nil {
		return err
	}
	tln, err := net.Listen("tcp", o.trackerListen)
	if err != nil {
		return fmt.Errorf("--tracker-listen %s: %w", o.trackerListen, err)
	}
	tsrv := c.HTTPServer(o.trackerListen)
	tsrv.Handler = trackerjs.Mount(tsrv.Handler)
	go tsrv.Serve(tln)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tsrv.Shutdown(sctx)
	}()

	// The scheduled load.
	jobsFile, err := writeDevJobs(data, o)
	if err != nil {
		return err
	}
	sched := jobs.New(jobs.Options{ConfigPath: jobsFile, Bootstrap: o.brokerListen, Log: logger, Registry: reg})
	if err := sched.Load(); err != nil {
		return err
	}
	jctx, stopJobs := context.WithCancel(ctx)
	defer func() { stopJobs(); sched.Wait() }()
	if err := sched.Start(jctx); err != nil {
		return err
	}
	jln, err := net.Listen("tcp", o.jobsListen)
	if err != nil {
		return fmt.Errorf("--jobs-listen %s: %w", o.jobsListen, err)
	}
	jsrv := &http.Server{Handler: sched.Handler(reg), ReadHeaderTimeout: 10 * time.Second}
	go jsrv.Serve(jln)
	defer jsrv.Close()

	// One admin endpoint for the three.
	if o.adminListen != "" {
		acc, _, err := adminAccessOption()
		if err != nil {
			return err
		}
		a, err := admin.Listen(o.adminListen, reg, func() error { return sinkReady() }, logger, acc)
		if err != nil {
			return fmt.Errorf("--admin-listen %s: %w", o.adminListen, err)
		}
		defer a.Close(context.Background())
	}

	var st simulate.Stats
	if o.generate {
		go simulate.Run(ctx, simulate.Config{URL: "http://" + tln.Addr().String(), WriteKey: o.writeKey, Rate: o.rate, Seed: uint64(time.Now().UnixNano())}, &st)
	}
	printDevBanner(out, o, data, tln.Addr().String(), jln.Addr().String(), consoleURL)
	logger.Info("dev ready", "broker", o.brokerListen, "tracker", tln.Addr().String(), "jobs", jln.Addr().String(), "target", o.target, "generate", o.generate)

	<-ctx.Done()
	logger.Info("stopping", "events_generated", st.Events.Load())
	return nil
}

// ensureDevTopic creates the events topic on first start.
func ensureDevTopic(ctx context.Context, bootstrap string) error {
	cl, err := kafkacli.Connect(ctx, bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := cl.Topic(ctx, devTopic); err == nil {
		return nil
	}
	res, err := cl.CreateTopics(ctx, []kafka.TopicConfig{{Topic: devTopic, NumPartitions: 3, ReplicationFactor: 1}})
	if err != nil {
		return err
	}
	return res[devTopic]
}

// writeDevJobs writes the jobs file and the activity schema it names, the
// first time; a later start keeps an edited file.
func writeDevJobs(data string, o devOptions) (string, error) {
	file := filepath.Join(data, "jobs.yaml")
	if _, err := os.Stat(file); err == nil {
		return file, nil
	}
	schemaFile := filepath.Join(data, "activity.yaml")
	if err := os.WriteFile(schemaFile, schema.ActivityYAML(), 0o644); err != nil {
		return "", err
	}
	body := fmt.Sprintf(`# Written by "tributary dev"; edit it and the scheduler picks it up.
jobs:
  - name: events-lake
    topics: [%s]
    target: %s
    schema: %s
    time_field: timestamp
    table_format: %s
    every: %s
    lateness: 1m
    retries: 3
    backoff: 5s
`, devTopic, o.target, schemaFile, o.tableFormat, o.loadEvery)
	return file, os.WriteFile(file, []byte(body), 0o644)
}

func printDevBanner(w io.Writer, o devOptions, data, trackerAddr, jobsAddr, consoleURL string) {
	registry := ""
	if o.registryListen != "" {
		registry = ", schema registry http://" + o.registryListen
	}
	if consoleURL != "" {
		fmt.Fprintf(w, "\nOpen the console: %s\n", consoleURL)
	}
	what := "an Iceberg table " + strings.TrimSuffix(o.target, "/") + "/" + devTopic
	if o.tableFormat == "parquet" {
		what = o.target
	}
	fmt.Fprintf(w, `
Tributary is running: broker %[1]s, tracker http://%[2]s, jobs http://%[3]s%[8]s
Events load into %[4]s every %[5]s.

Try next, in another terminal:
  curl -u %[6]s: -H 'Content-Type: application/json' -d '{"userId":"u1","event":"Signed Up"}' http://%[2]s/v1/track
  tributary consume %[7]s -b %[1]s --from-beginning --count 5     # the events, in real time
  tributary group describe tributary-loader.events-lake -b %[1]s   # the loader's lag
  tributary jobs runs events-lake --server %[3]s                 # scheduled loads so far
`, o.brokerListen, trackerAddr, jobsAddr, what, o.loadEvery, o.writeKey, devTopic, registry)
	printLakeHints(w, o)
	fmt.Fprintf(w, `  curl -s http://%s/metrics | grep ^tributary_ | head         # broker, tracker and jobs metrics

Ctrl-C stops everything; starting again continues where it stopped.
`, o.adminListen)
}

// devQuery is what the banner's queries count: events by type and name.
const devQuery = "select type, event, count(*) as n from events group by all order by n desc"

// printLakeHints prints how to read the lake: for a table, with the lake
// commands, pyiceberg (through the version hint, no catalog needed) and
// DuckDB's iceberg extension; for plain Parquet, DuckDB over the dt=/hr=
// directories. The queries name local paths, so they are printed for a
// file:// target only.
func printLakeHints(w io.Writer, o devOptions) {
	local := ""
	if strings.HasPrefix(o.target, "file://") {
		local = strings.TrimSuffix(strings.TrimPrefix(o.target, "file://"), "/")
	}
	if o.tableFormat == "parquet" {
		if local == "" {
			return
		}
		fmt.Fprintf(w, `  find %[1]s -name '*.parquet' | head                           # the lake, by dt=/hr=
  python3 -m pip install duckdb && python3 -c "import duckdb; print(duckdb.sql(\"select type, event, count(*) from read_parquet('%[1]s/%[2]s/*/*/*.parquet', hive_partitioning=true) group by all order by 3 desc\"))"
`, local, devTopic)
		return
	}
	fmt.Fprintf(w, `  tributary lake snapshots %[1]s --target %[2]s   # one snapshot per load
  tributary lake query %[1]s --target %[2]s --limit 5
`, devTopic, o.target)
	if local == "" {
		return
	}
	table := local + "/" + devTopic
	fmt.Fprintf(w, `  python3 -m pip install 'pyiceberg[pyarrow,duckdb]' && python3 -c "from pyiceberg.table import StaticTable; StaticTable.from_metadata('%[1]s').scan().to_duckdb('events').sql('%[2]s').show()"
  duckdb -c "install iceberg; load iceberg; select count(*) from iceberg_scan('%[1]s')"
`, table, devQuery)
}
