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
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tributary-io/tributary/internal/admin"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/jobs"
)

// defaultJobsListen is where `jobs serve` answers and the other jobs
// commands ask.
const defaultJobsListen = "127.0.0.1:9646"

func newJobsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "Run loads on schedules, with retries and history (the jobs scheduler)",
		Long: `The jobs scheduler runs the loads of a jobs file on their schedules: every
run plans, executes and commits like "tributary load run", under a lease
in the target so that one run of a job happens at a time however many
schedulers share it. A failed run is retried with backoff and resumes its
plan; each run's ranges, records, bytes, files, phases and outcome are kept
in <target>/_tributary/jobs/<job>/runs/.

"tributary jobs serve" is the daemon; the other commands talk to its HTTP
API (--server). docs/jobs.md has the jobs file's fields and the lease's
protocol.`,
		Example: `  tributary jobs serve --config jobs.yaml
  tributary jobs list
  tributary jobs runs web-hourly
  tributary jobs trigger web-hourly
  tributary jobs pause web-hourly && tributary jobs resume web-hourly`,
	}
	cmd.AddCommand(newJobsServeCommand(), newJobsListCommand(), newJobsRunsCommand(), newJobsTriggerCommand(),
		newJobsPauseCommand(true), newJobsPauseCommand(false))
	return cmd
}

func newJobsServeCommand() *cobra.Command {
	var (
		listen, bootstrap, hdfsUser, owner string
		kerberos                           fsys.Kerberos
		reload                             time.Duration
		checkOnly                          bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the jobs of a jobs file on their schedules, and serve the jobs API",
		Long: `Run the jobs of the --config file on their schedules, and serve the HTTP
API on --listen: GET /jobs, /jobs/{name}, /jobs/{name}/runs, POST
/jobs/{name}/trigger, /pause, /resume, and /metrics and /healthz.

The file is read again when it changes (and on SIGHUP). A job whose new
definition is bad is reported, with its name, field and line, in the log and
in GET /jobs, and keeps its previous definition and schedule; the other
jobs take their new definitions. A file that is not YAML at all changes
nothing. The flags below can be set in the same file (listen: ...).

  bootstrap: broker1:9092
  lease_ttl: 30s             # a run's lease; taken over this long after its holder died
  history: {keep: 200, max_age: 720h}
  defaults:                  # fields every job has unless it sets them
    target: hdfs://namenode:8020/lake
    format: json
    retries: 3
    backoff: 30s             # doubled after each failed attempt, up to max_backoff
  jobs:
    - name: web-hourly
      topics: [web-events]   # or topics_regex: 'web\..*'
      schema: schemas/activity.yaml
      time_field: timestamp
      schedule: "5 * * * *"  # cron (robfig/cron), or every: 15m
      parallelism: 4
      executor: local        # or process, command, yarn, kubernetes (docs/jobs.md)
      max_records_per_unit: 1000000

Several schedulers may serve the same file for availability: the lease in
the target lets one run a job at a time, and another takes over a run
whose scheduler died once the lease expires (lease_ttl plus
max_clock_skew), resuming its plan.`,
		Example: `  tributary jobs serve --config jobs.yaml
  tributary jobs serve --config jobs.yaml --check-config
  tributary jobs serve --config jobs.yaml --listen 0.0.0.0:9646 -b broker1:9092 --hdfs-user etl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, _ := cmd.Flags().GetString("config")
			if file == "" {
				file = os.Getenv(env("config"))
			}
			if file == "" {
				return errors.New("--config is required: the jobs file (see tributary jobs serve --help)")
			}
			reg := admin.NewRegistry()
			s := jobs.New(jobs.Options{
				ConfigPath: file, IsFlag: flagKeys(cmd), Bootstrap: bootstrap, HDFSUser: hdfsUser,
				Kerberos: kerberos,
				Owner:    owner, ReloadEvery: reload, Log: slog.Default(), Registry: reg,
			})
			if err := s.Load(); err != nil {
				return err
			}
			if checkOnly {
				return checkJobsConfig(cmd, file, flagKeys(cmd))
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %w", listen, err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := s.Start(ctx); err != nil {
				return err
			}
			_, acc, err := adminAccessOption()
			if err != nil {
				return err
			}
			// The jobs API starts and cancels loads: off loopback it
			// takes the admin token, as the other daemons' endpoints.
			srv := &http.Server{Handler: admin.Guard(s.Handler(reg), ln.Addr(), acc, slog.Default()), ReadHeaderTimeout: 10 * time.Second}
			go srv.Serve(ln)
			slog.Info("jobs API ready", "addr", ln.Addr().String(), "owner", s.Owner(), "file", file)
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			go func() {
				for range hup {
					s.Reload()
				}
			}()
			<-ctx.Done()
			slog.Info("stopping: runs in progress are cancelled and resume at the next run")
			s.Wait()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(sctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", defaultJobsListen, "address of the jobs API, /metrics and /healthz")
	addAdminAccessFlags(f)
	addBootstrapFlag(f, &bootstrap)
	f.StringVar(&hdfsUser, "hdfs-user", "", "HDFS user of jobs that set no hdfs_user (default $HADOOP_USER_NAME, else the OS user)")
	addKerberosFlags(f, &kerberos)
	f.StringVar(&owner, "owner", "", "this scheduler's name in leases and history (default host/pid/random)")
	f.DurationVar(&reload, "reload-interval", 2*time.Second, "how often the jobs file is checked for changes")
	addCheckConfigFlag(f, &checkOnly)
	return cmd
}

// checkJobsConfig prints what a start would schedule, and fails if any
// definition is bad.
func checkJobsConfig(cmd *cobra.Command, file string, isFlag func(string) bool) error {
	cfg, err := jobs.ReadConfig(file, isFlag)
	if err != nil {
		return err
	}
	for _, j := range cfg.Jobs {
		sched := "manual"
		if j.Sched != nil {
			sched = j.Sched.String()
		}
		fmt.Fprintf(cmd.OutOrStdout(), "job %s: %s, %s executor, parallelism %d, into %s\n", j.Name, sched, j.Executor, j.Parallelism, j.Target)
	}
	if len(cfg.Problems) > 0 {
		var msgs []string
		for _, p := range cfg.Problems {
			msgs = append(msgs, p.Error())
		}
		return fmt.Errorf("%d bad job definitions:\n  %s", len(cfg.Problems), strings.Join(msgs, "\n  "))
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %d jobs, no problems\n", file, len(cfg.Jobs))
	return nil
}

// flagKeys says whether a top-level key of the jobs file is the key of one
// of cmd's flags (or a section of such keys, as log: {level: debug}).
func flagKeys(cmd *cobra.Command) func(string) bool {
	keys := map[string]bool{}
	add := func(f *pflag.Flag) {
		k := key(f.Name)
		keys[k] = true
		for i, c := range k {
			if c == '.' {
				keys[k[:i]] = true
			}
		}
	}
	cmd.Flags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	return func(k string) bool { return keys[k] }
}

// jobsClientFlags are the flags of the commands that talk to the API.
type jobsClientFlags struct {
	server, output string
}

func (f *jobsClientFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.server, "server", defaultJobsListen, "address of `tributary jobs serve`'s API (env TRIBUTARY_SERVER)")
	fs.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
}

func (f *jobsClientFlags) client() (*jobs.Client, error) {
	if f.output != "table" && f.output != "json" {
		return nil, fmt.Errorf("--output %q: want table or json", f.output)
	}
	return jobs.NewClient(f.server), nil
}

func newJobsListCommand() *cobra.Command {
	var f jobsClientFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the jobs: schedule, state, next and last run, lag",
		Long: `List the jobs of the scheduler at --server: each job's schedule, state
(idle, running, retrying, disabled, invalid), when it runs next, its last
run here (outcome, records, duration) and its lag per topic after that run.
Definitions the scheduler rejected are listed with their problems; such a
job keeps running with its previous definition.`,
		Example: `  tributary jobs list
  tributary jobs list --server jobs.internal:9646 -o json | jq '.jobs[].lag'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			o, err := c.Overview(cmd.Context())
			if err != nil {
				return err
			}
			if f.output == "json" {
				return printJSON(cmd.OutOrStdout(), o)
			}
			printJobs(cmd.OutOrStdout(), o)
			return nil
		},
	}
	f.add(cmd.Flags())
	return cmd
}

func newJobsRunsCommand() *cobra.Command {
	var (
		f     jobsClientFlags
		limit int
	)
	cmd := &cobra.Command{
		Use:   "runs JOB",
		Short: "Show a job's run history: ranges, records, bytes, phases, outcome",
		Long: `Show the newest runs of a job, newest first, from its history in the target
(<target>/_tributary/jobs/<job>/runs/), whichever scheduler ran them: when
each started, how long it took, its outcome and attempts, what it loaded
(records, files, bytes, bad records) and the offset ranges of its plans.
A failed run shows its error. -o json gives every field, per-phase
durations included.`,
		Example: `  tributary jobs runs web-hourly
  tributary jobs runs web-hourly --limit 100 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			r, err := c.Runs(cmd.Context(), args[0], limit)
			if err != nil {
				return err
			}
			if f.output == "json" {
				return printJSON(cmd.OutOrStdout(), r)
			}
			printRuns(cmd.OutOrStdout(), r)
			return nil
		},
	}
	f.add(cmd.Flags())
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "most runs to show; 0 for all")
	return cmd
}

func newJobsTriggerCommand() *cobra.Command {
	var f jobsClientFlags
	cmd := &cobra.Command{
		Use:   "trigger JOB",
		Short: "Run a job now",
		Long: `Ask the scheduler to run a job now, out of its schedule, even while paused.
If a run is in progress the new one starts after it. The run takes the
job's lease like any other: if another scheduler is running the job, this
one is skipped. Follow it with "tributary jobs runs JOB".`,
		Example: `  tributary jobs trigger web-hourly`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			status, err := c.Trigger(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if f.output == "json" {
				return printJSON(cmd.OutOrStdout(), map[string]string{"job": args[0], "status": status})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job %s: %s\n", args[0], status)
			return nil
		},
	}
	f.add(cmd.Flags())
	return cmd
}

func newJobsPauseCommand(pause bool) *cobra.Command {
	var f jobsClientFlags
	cmd := &cobra.Command{
		Use:   "pause JOB",
		Short: "Stop a job's scheduled runs (on every scheduler) until it is resumed",
		Long: `Pause a job: its scheduled times are skipped until "tributary jobs resume".
The mark is kept in the job's target (_tributary/jobs/<job>/paused), so
every scheduler of the job obeys it and a restart keeps it. A run in
progress finishes; "tributary jobs trigger" still runs a paused job.
A job can also be paused in the jobs file (paused: true).`,
		Example: `  tributary jobs pause web-hourly`,
		Args:    cobra.ExactArgs(1),
	}
	if !pause {
		cmd.Use = "resume JOB"
		cmd.Short = "Resume a job paused with tributary jobs pause"
		cmd.Long = `Resume a job paused with "tributary jobs pause": its scheduled times run
again, on every scheduler. A job paused in the jobs file (paused: true)
stays paused until the file says otherwise.`
		cmd.Example = `  tributary jobs resume web-hourly`
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c, err := f.client()
		if err != nil {
			return err
		}
		v, err := c.SetPaused(cmd.Context(), args[0], pause)
		if err != nil {
			return err
		}
		if f.output == "json" {
			return printJSON(cmd.OutOrStdout(), v)
		}
		switch v.Paused {
		case "":
			fmt.Fprintf(cmd.OutOrStdout(), "job %s: resumed; next run %s\n", v.Name, when(v.Next))
		case "config":
			fmt.Fprintf(cmd.OutOrStdout(), "job %s: still paused by the jobs file (paused: true)\n", v.Name)
		default:
			fmt.Fprintf(cmd.OutOrStdout(), "job %s: paused\n", v.Name)
		}
		return nil
	}
	f.add(cmd.Flags())
	return cmd
}
