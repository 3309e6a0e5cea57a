package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/loader"
)

// loadFlags are the flags the load commands share.
type loadFlags struct {
	bootstrap, target, job string
	topics                 []string
	topicsRegex            string
	schemaFile             string
	settings               loader.Settings
	lateness               time.Duration
	targetFile, maxMemory  byteSize
	maxUnitBytes           byteSize
	maxUnitRecords         int64
	parallelism            int
	hdfs                   fsys.Options
	hdfsBlock              byteSize
	lease                  leaseFlags
}

func (f *loadFlags) addTarget(fs *pflag.FlagSet) {
	addBootstrapFlag(fs, &f.bootstrap)
	fs.StringVar(&f.target, "target", "", "where the files go: hdfs://namenode:port/path or file:///path (required)")
	fs.StringVar(&f.job, "job", loader.DefaultJob, "job name: its offsets, plans and the consumer group tributary-loader.<job>")
	fs.StringVar(&f.hdfs.User, "hdfs-user", "", "HDFS user to write as (default $HADOOP_USER_NAME, else the OS user)")
	fs.IntVar(&f.hdfs.Replication, "hdfs-replication", 0, "replication of new HDFS files (default: the NameNode's dfs.replication)")
	fs.Var(&f.hdfsBlock, "hdfs-block-size", "block size of new HDFS files, e.g. 256MiB (default: the NameNode's dfs.blocksize)")
	addKerberosFlags(fs, &f.hdfs.Kerberos)
}

func (f *loadFlags) addSpec(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.topics, "topics", nil, "topics to load, by name (comma-separated or repeated)")
	fs.StringVar(&f.topicsRegex, "topics-regex", "", "also load every topic whose whole name matches this regular expression")
	fs.StringVar(&f.settings.Format, "format", loader.FormatJSON, "record format: json, avro, avro-confluent, protobuf (with --registry) or raw")
	fs.StringVar(&f.schemaFile, "schema", "", "YAML schema of the topics (json, avro); json without one keeps the last run's or infers one")
	fs.StringVar(&f.settings.AvroSchema, "avro-schema", "", "the writer's Avro schema file (--format avro)")
	fs.StringVar(&f.settings.Registry, "registry", "", "schema registry URL (--format avro, json or protobuf): records in the Confluent framing, writer schemas by id, columns from the subject <topic>-value")
	fs.StringVar(&f.settings.ProtoMessage, "proto-message", "", "the top-level message whose fields are the columns (--format protobuf; default the file's first)")
	fs.StringVar(&f.settings.AvroDir, "avro-schema-dir", "", "directory of <id>.avsc writer schemas (--format avro-confluent)")
	fs.StringVar(&f.settings.TimeField, "time-field", "", "dotted path of the event-time column that partitions files by hour (default: the record timestamp)")
	fs.StringVar(&f.settings.TimeZone, "time-zone", "UTC", "time zone of the dt=/hr= directories")
	fs.DurationVar(&f.lateness, "lateness", loader.DefaultLateness, "how late events may come before an hour gets its _SUCCESS marker")
	fs.StringVar(&f.settings.Codec, "codec", "snappy", "Parquet compression: snappy, zstd, gzip or none")
	f.targetFile = loader.DefaultTargetFileBytes
	fs.Var(&f.targetFile, "target-file-size", "roll Parquet files at about this size")
	f.maxMemory = loader.DefaultMaxMemory
	fs.Var(&f.maxMemory, "max-memory", "what one worker's open files may buffer; past it the largest is completed early")
	fs.Int64Var(&f.maxUnitRecords, "max-records-per-unit", loader.DefaultMaxRecordsPerUnit, "most records in one work unit")
	f.maxUnitBytes = loader.DefaultMaxBytesPerUnit
	fs.Var(&f.maxUnitBytes, "max-bytes-per-unit", "most bytes (estimated from a sample) in one work unit")
	fs.StringVar(&f.settings.TableFormat, "table-format", loader.TableParquet, "parquet: Hive-style directories of Parquet files; iceberg: also one Iceberg table per topic in <target>/<topic>, one snapshot per run (docs/iceberg.md)")
	fs.StringSliceVar(&f.settings.PartitionBy, "partition-by", nil, "with --table-format iceberg: top-level string, int, long or boolean columns whose values also partition the tables, identity(<column>) after hour(_event_time): one file per hour and combination of values (comma-separated or repeated; a table's columns cannot change)")
	fs.StringVar(&f.settings.Catalog, "catalog", loader.CatalogHadoop, "with --table-format iceberg: where the tables' current versions are kept: hadoop (metadata/version-hint.text) or sql:<SQLite database file>[#<namespace>] (Iceberg's JDBC catalog table, catalog name \""+loader.SQLCatalogName+"\", namespace \""+loader.DefaultNamespace+"\" unless named; every host loading the target must use the same file)")
	fs.BoolVar(&f.settings.AllowGaps, "allow-gaps", false, "continue past offsets the broker no longer has, recording the gap in the manifest")
	fs.StringVar(&f.settings.FromTier, "from-tier", "", "read what the brokers' tiered storage holds straight from it, not through a broker: their rsm.config.storage.uri (hdfs://namenode:port/path or file:///path); offsets not uploaded yet come from the broker")
}

func (f *loadFlags) spec() (loader.Spec, error) {
	s := loader.Spec{
		Job: f.job, Topics: f.topics, TopicsRegex: f.topicsRegex, Settings: f.settings,
		MaxRecordsPerUnit: f.maxUnitRecords, MaxBytesPerUnit: int64(f.maxUnitBytes),
	}
	s.Lateness = loader.Duration(f.lateness)
	s.TargetFileBytes, s.MaxMemory = int64(f.targetFile), int64(f.maxMemory)
	if f.schemaFile != "" {
		b, err := os.ReadFile(f.schemaFile)
		if err != nil {
			return s, fmt.Errorf("--schema: %w", err)
		}
		s.Schema = b
	}
	return s, s.Validate()
}

// open connects to the target and the broker.
func (f *loadFlags) open(ctx context.Context) (*loader.Loader, func(), error) {
	if f.target == "" {
		return nil, nil, fmt.Errorf("--target is required: hdfs://namenode:port/path or file:///path")
	}
	if err := loader.ValidJob(f.job); err != nil {
		return nil, nil, err
	}
	opts := f.hdfs
	opts.BlockSize = int64(f.hdfsBlock)
	fs, err := fsys.Open(f.target, opts)
	if err != nil {
		return nil, nil, err
	}
	cl, err := kafkacli.Connect(ctx, f.bootstrap)
	if err != nil {
		fs.Close()
		return nil, nil, err
	}
	// The remote tier is usually the same Hadoop cluster: the same user
	// and credentials read it.
	tierOpts := opts
	l := &loader.Loader{FS: fs, Cluster: cl, Bootstrap: f.bootstrap,
		OpenTier: func(uri string) (fsys.FS, error) { return fsys.Open(uri, tierOpts) }}
	return l, func() { l.CloseTier(); cl.Close(); fs.Close() }, nil
}

// withLoader runs fn with a loader connected to the target and the broker,
// and, when withSpec, the spec the flags describe; Ctrl-C cancels ctx.
func (f *loadFlags) withLoader(cmd *cobra.Command, withSpec bool, fn func(ctx context.Context, l *loader.Loader, spec loader.Spec) error) error {
	var spec loader.Spec
	if withSpec {
		var err error
		if spec, err = f.spec(); err != nil {
			return err
		}
	}
	ctx, stop := signalContext(cmd)
	defer stop()
	l, closeAll, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer closeAll()
	return fn(ctx, l, spec)
}

func newLoadCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Load topics into Parquet on HDFS or a local directory, exactly once",
		Long: `Load topic partitions by offset range into Parquet files, partitioned by
event hour, on HDFS (hdfs://namenode:port/path) or a local directory
(file:///path). Each run plans the ranges from the job's committed offsets to
the high watermarks, writes the plan under <target>/_tributary/plans, loads
the units in parallel into a staging directory, then moves the files into
<target>/<topic>/dt=YYYY-MM-DD/hr=HH/ and commits the offsets. A run that
fails or is killed is resumed by the next one with the same plan: every
offset is in the lake exactly once. Records that cannot be decoded go to
<target>/_errors/<topic>/ with the reason. docs/loader.md has the details.`,
		Example: `  tributary load run --topics events --target file:///tmp/lake
  tributary load run --topics events --target hdfs://127.0.0.1:8020/lake --parallelism 4 --time-field timestamp
  tributary load status --target hdfs://127.0.0.1:8020/lake`,
	}
	cmd.AddCommand(newLoadRunCommand(), newLoadPlanCommand(), newLoadWorkerCommand(), newLoadStatusCommand(), newLoadBackfillCommand())
	return cmd
}

func signalContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
}

func newLoadRunCommand() *cobra.Command {
	var f loadFlags
	var ex executorFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Load what is new in the topics (resuming a failed run first)",
		Long: `Resume the job's open run if the last one failed or was killed, then plan
the new offsets, load them with --parallelism workers and commit. The
offsets are also committed to the broker as the consumer group
tributary-loader.<job>, so "tributary group describe" shows the lag.

On a terminal a progress line shows records, MB/s and the ETA; otherwise
progress goes to the structured log.

With --executor yarn the units run as one YARN application (the plan and
the commit stay here): its containers run "tributary load worker" from this
binary, uploaded to HDFS once per build. The --yarn-* flags are a job's
yarn: settings (docs/jobs.md, "Running loads on YARN"); the target must be
on HDFS. Progress then shows the application's state as it changes, and
records as units finish.

A run holds the job's lease (the one "tributary jobs" takes) from start to
end. If another run holds it, "load run" exits at once with status 75
(EX_TEMPFAIL) and names the holder, or waits up to --wait for it. A holder
that died is taken over once its lease expires (--lease-ttl plus
--max-clock-skew), and its open plan resumed.

With --from-tier (a topic with remote.storage.enable on brokers with tiered
storage), the offsets the remote tier holds are read straight from its
files in HDFS, not fetched from a broker, so that a large backfill does
not load the brokers; offsets not uploaded yet come from the broker. The
files are the same either way (docs/tiered-storage.md).`,
		Example: `  tributary load run --topics events --target file:///tmp/lake --time-field timestamp
  tributary load run --topics-regex 'web\..*' --target hdfs://127.0.0.1:8020/lake --parallelism 4
  tributary load run --topics events --target hdfs://nn:8020/lake --executor yarn \
      --yarn-resource-manager http://rm:8088 --yarn-am-jar /opt/hadoop/share/hadoop/yarn/hadoop-yarn-applications-distributedshell-3.4.2.jar \
      --yarn-max-containers 4 --yarn-container-memory-mb 1024 --yarn-queue etl
  tributary load run --topics clicks --target hdfs://nn:8020/lake --from-tier hdfs://nn:8020/tributary-tier`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withLoader(cmd, true, func(ctx context.Context, l *loader.Loader, spec loader.Spec) error {
				ctx, release, err := f.lease.hold(ctx, l, spec.Job, "load run")
				if err != nil {
					return err
				}
				defer release()
				l.Progress = &loader.Progress{}
				stopUnits, err := ex.hook(cmd.ErrOrStderr(), &f, l)
				if err != nil {
					return err
				}
				done := showProgress(cmd.ErrOrStderr(), l.Progress)
				ms, err := l.Run(ctx, spec, f.parallelism)
				err = leaseErr(l, err)
				stopUnits()
				done()
				for _, m := range ms {
					printManifest(cmd.OutOrStdout(), l.FS.String(), m)
				}
				if err == nil && len(ms) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "nothing new to load")
				}
				return err
			})
		},
	}
	f.addTarget(cmd.Flags())
	f.addSpec(cmd.Flags())
	f.lease.add(cmd.Flags())
	cmd.Flags().IntVarP(&f.parallelism, "parallelism", "p", 2, "units loaded at once")
	ex.add(cmd.Flags())
	return cmd
}

func newLoadPlanCommand() *cobra.Command {
	var (
		f    loadFlags
		save bool
	)
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Print the ranges a run would load (a dry run), or save the plan for workers",
		Long: `Plan a run and print its work units: topic, partition and offset range.
Nothing is written unless --save is given; then the plan is saved under
<target>/_tributary/plans/ and its URI printed, for "tributary load worker"
processes (a Kubernetes Indexed Job, YARN containers) to execute. A later
"tributary load run" commits it once every unit is done.`,
		Example: `  tributary load plan --topics events --target file:///tmp/lake
  plan=$(tributary load plan --save --topics events --target file:///tmp/lake | tail -n 1)
  tributary load worker --plan "$plan" --index 0 --count 2 &
  tributary load worker --plan "$plan" --index 1 --count 2; wait
  tributary load run --topics events --target file:///tmp/lake`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withLoader(cmd, true, func(ctx context.Context, l *loader.Loader, spec loader.Spec) error {
				var p *loader.Plan
				var err error
				if save {
					// Saving takes the lease for a moment, so that a plan is
					// never saved beside a running one.
					var release func()
					if ctx, release, err = f.lease.hold(ctx, l, spec.Job, "load plan --save"); err != nil {
						return err
					}
					p, err = l.SavePlan(ctx, spec)
					release()
				} else {
					p, err = l.Plan(ctx, spec)
				}
				if err != nil {
					return err
				}
				fmt.Fprint(cmd.OutOrStdout(), p.Describe())
				if save && len(p.Units) > 0 {
					fmt.Fprintln(cmd.OutOrStdout(), loader.PlanURI(l.FS.String(), p.Run))
				}
				return nil
			})
		},
	}
	f.addTarget(cmd.Flags())
	f.addSpec(cmd.Flags())
	f.lease.add(cmd.Flags())
	cmd.Flags().BoolVar(&save, "save", false, "save the plan for workers and print its URI")
	return cmd
}

func newLoadWorkerCommand() *cobra.Command {
	var (
		f            loadFlags
		planURI      string
		unit         int
		index, count int
	)
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Execute units of a saved plan (one process of a parallel load)",
		Long: `Execute work units of a saved plan, as one of several processes: --unit N
runs one unit; --index I --count K runs units I, I+K, I+2K, ... (K workers
share the plan). Without either, the index comes from JOB_COMPLETION_INDEX,
as a Kubernetes Indexed Job sets it. A unit already done is skipped, so a
worker can be retried freely. The run is committed by "tributary load run".

Workers take no lease of their own: they are part of the run whose lease
names their plan (a "load run" or "jobs" run executing it), and they also
run while no run holds the job (a plan saved with "load plan --save"). If
another run holds the job, a worker exits with status 75, or waits up to
--wait; it checks again before it records each unit's result.`,
		Example: `  tributary load worker --plan file:///tmp/lake/_tributary/plans/default-20261130T120000.418226351Z-a1b2c3.json --unit 0
  tributary load worker --plan hdfs://nn:8020/lake/_tributary/plans/<run>.json --index 2 --count 8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			target, run, err := loader.ParsePlanURI(planURI)
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			f.target = target
			fs, err := fsys.Open(target, f.hdfs)
			if err != nil {
				return err
			}
			defer fs.Close()
			l := &loader.Loader{FS: fs}
			p, err := l.LoadPlan(run)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("bootstrap") {
				f.bootstrap = p.Bootstrap
			}
			cl, err := kafkacli.Connect(ctx, f.bootstrap)
			if err != nil {
				return err
			}
			defer cl.Close()
			l.Cluster = cl
			units, err := workerUnits(cmd, len(p.Units), unit, index, count)
			if err != nil {
				return err
			}
			fence, err := f.lease.workerFence(ctx, fs, p)
			if err != nil {
				return err
			}
			l.Hooks.Fence = fence
			for _, u := range units {
				r, err := l.RunUnit(ctx, p, u)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "unit %d: %d rows, %d bad, %d files\n", u, r.Rows, r.Bad, len(r.Files))
			}
			return nil
		},
	}
	addBootstrapFlag(cmd.Flags(), &f.bootstrap)
	cmd.Flags().StringVar(&planURI, "plan", "", "URI of the saved plan, <target>/_tributary/plans/<run>.json (required)")
	cmd.Flags().IntVar(&unit, "unit", -1, "the one unit to run")
	cmd.Flags().IntVar(&index, "index", -1, "this worker's index among --count workers")
	cmd.Flags().IntVar(&count, "count", 1, "how many workers share the plan")
	cmd.Flags().StringVar(&f.hdfs.User, "hdfs-user", "", "HDFS user to write as (default $HADOOP_USER_NAME, else the OS user)")
	addKerberosFlags(cmd.Flags(), &f.hdfs.Kerberos)
	f.lease.add(cmd.Flags())
	cmd.MarkFlagRequired("plan")
	return cmd
}

// workerUnits are the units a worker process runs.
func workerUnits(cmd *cobra.Command, n, unit, index, count int) ([]int, error) {
	if unit >= 0 {
		if unit >= n {
			return nil, fmt.Errorf("--unit %d: the plan has units 0 to %d", unit, n-1)
		}
		return []int{unit}, nil
	}
	if index < 0 {
		env := os.Getenv("JOB_COMPLETION_INDEX")
		if env == "" {
			return nil, fmt.Errorf("give --unit N, or --index I --count K (or set JOB_COMPLETION_INDEX)")
		}
		if _, err := fmt.Sscan(env, &index); err != nil {
			return nil, fmt.Errorf("JOB_COMPLETION_INDEX=%q is not a number", env)
		}
	}
	if count < 1 || index >= count {
		return nil, fmt.Errorf("--index %d --count %d: want 0 <= index < count", index, count)
	}
	var out []int
	for u := index; u < n; u += count {
		out = append(out, u)
	}
	return out, nil
}

func newLoadStatusCommand() *cobra.Command {
	var f loadFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show a job's committed offsets, lag, last run and incomplete hours",
		Long: `For every partition the job has loaded: the committed offset, the high
watermark and the lag. Then the last committed run (rows, files, bad
records), a run still open, and the event hours that have data but no
_SUCCESS marker yet (an hour is complete once the watermark, the plan time
less --lateness, has passed its end).`,
		Example: `  tributary load status --target file:///tmp/lake
  tributary load status --target hdfs://127.0.0.1:8020/lake --job hourly`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withLoader(cmd, false, func(ctx context.Context, l *loader.Loader, _ loader.Spec) error {
				st, err := l.Status(ctx, f.job)
				if err != nil {
					return err
				}
				printStatus(cmd.OutOrStdout(), st)
				return nil
			})
		},
	}
	f.addTarget(cmd.Flags())
	return cmd
}

func newLoadBackfillCommand() *cobra.Command {
	var (
		f        loadFlags
		topic    string
		part     int32
		from, to int64
	)
	cmd := &cobra.Command{
		Use:   "backfill",
		Short: "Reload an offset range and replace its earlier output",
		Long: `Reload the offsets [--from, --to) of one partition that the job has already
loaded, and replace the files that held them: the range grows to cover
those files whole, the same names are written again, and files it no
longer writes are removed at commit. Every other file is left alone, and
the job's committed offsets do not move. --to is the offset after the last
one, as Kafka's end offsets are. It holds the job's lease, as "load run"
does (--wait, exit status 75 when busy).`,
		Example: `  tributary load backfill --target file:///tmp/lake --topic events --partition 3 --from 1000 --to 2000`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.topics = []string{topic}
			return f.withLoader(cmd, true, func(ctx context.Context, l *loader.Loader, spec loader.Spec) error {
				ctx, release, err := f.lease.hold(ctx, l, spec.Job, "load backfill")
				if err != nil {
					return err
				}
				defer release()
				m, err := l.Backfill(ctx, spec, loader.BackfillRange{Topic: topic, Partition: part, From: from, To: to}, f.parallelism)
				if err != nil {
					return leaseErr(l, err)
				}
				printManifest(cmd.OutOrStdout(), l.FS.String(), m)
				return nil
			})
		},
	}
	f.addTarget(cmd.Flags())
	f.addSpec(cmd.Flags())
	cmd.Flags().IntVarP(&f.parallelism, "parallelism", "p", 2, "units loaded at once")
	f.lease.add(cmd.Flags())
	cmd.Flags().StringVar(&topic, "topic", "", "topic to reload (required)")
	cmd.Flags().Int32Var(&part, "partition", 0, "partition to reload")
	cmd.Flags().Int64Var(&from, "from", 0, "first offset to reload")
	cmd.Flags().Int64Var(&to, "to", 0, "offset after the last one to reload (required)")
	cmd.MarkFlagRequired("topic")
	cmd.MarkFlagRequired("to")
	return cmd
}
