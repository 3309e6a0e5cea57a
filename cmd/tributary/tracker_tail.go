package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/tributary-io/tributary/internal/admin"
	"github.com/tributary-io/tributary/tracker/tail"
)

// tailSection is the "tail:" section of the tracker's --config file, read
// by both "tributary tracker" and "tributary tracker tail".
type tailSection struct {
	Positions    string        `yaml:"positions"`
	ScanInterval time.Duration `yaml:"scan_interval"`
	PollInterval time.Duration `yaml:"poll_interval"`
	RotateWait   time.Duration `yaml:"rotate_wait"`
	MaxLineBytes int           `yaml:"max_line_bytes"`
	BatchLines   int           `yaml:"batch_lines"`
	Files        []struct {
		Name        string   `yaml:"name"`
		Paths       []string `yaml:"paths"`
		Topic       string   `yaml:"topic"`
		Format      string   `yaml:"format"`
		Key         string   `yaml:"key"`
		SendInvalid bool     `yaml:"send_invalid"`
		StartAt     string   `yaml:"start_at"`
	} `yaml:"files"`
}

// readTailSection is the tail: section of the config file named by
// --config or TRIBUTARY_CONFIG; nil when there is none.
func readTailSection(cmd *cobra.Command) (*tailSection, error) {
	file, _ := cmd.Flags().GetString("config")
	if file == "" {
		file = os.Getenv(env("config"))
	}
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Tail *tailSection `yaml:"tail"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config file %s: %w", file, err)
	}
	return doc.Tail, nil
}

// apply fills cfg from the section: its settings where cfg has none, its
// files as inputs sending to topic when they name none.
func (s *tailSection) apply(cfg *tail.Config, topic string) {
	if s == nil {
		return
	}
	set := func(dst *time.Duration, v time.Duration) {
		if *dst == 0 {
			*dst = v
		}
	}
	set(&cfg.ScanInterval, s.ScanInterval)
	set(&cfg.PollInterval, s.PollInterval)
	set(&cfg.RotateWait, s.RotateWait)
	if cfg.PositionsFile == "" {
		cfg.PositionsFile = s.Positions
	}
	if cfg.MaxLineBytes == 0 {
		cfg.MaxLineBytes = s.MaxLineBytes
	}
	if cfg.BatchLines == 0 {
		cfg.BatchLines = s.BatchLines
	}
	for _, f := range s.Files {
		in := tail.Input{Name: f.Name, Paths: f.Paths, Topic: f.Topic, Format: tail.Format(f.Format), Key: f.Key,
			SendInvalid: f.SendInvalid, StartAt: tail.StartAt(f.StartAt)}
		if in.Topic == "" {
			in.Topic = topic
		}
		cfg.Inputs = append(cfg.Inputs, in)
	}
}

// runTail runs a tailer producing to brokers until ctx ends.
func runTail(ctx context.Context, cfg tail.Config, brokers []string) (done <-chan error, err error) {
	w, err := tail.NewWriter(brokers, cfg.BatchLines, cfg.Logger)
	if err != nil {
		return nil, err
	}
	t, err := tail.New(cfg, w)
	if err != nil {
		w.Close()
		return nil, err
	}
	ch := make(chan error, 1)
	go func() {
		err := t.Run(ctx)
		w.Close()
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		ch <- err
	}()
	return ch, nil
}

// startTrackerTail runs the tail: section of the tracker's config file, if
// any, beside the collector: positions in the spool directory by default,
// metrics on the tracker's /metrics. stop ends it and waits.
func startTrackerTail(ctx context.Context, cmd *cobra.Command, brokers []string, topic, spoolDir string, reg prometheus.Registerer, logger *slog.Logger) (stop func(), err error) {
	s, err := readTailSection(cmd)
	if err != nil || s == nil || len(s.Files) == 0 {
		return func() {}, err
	}
	cfg := tail.Config{Registerer: reg, Logger: logger}
	s.apply(&cfg, topic)
	if cfg.PositionsFile == "" {
		cfg.PositionsFile = filepath.Join(spoolDir, "tail-positions.json")
	}
	ctx, cancel := context.WithCancel(ctx)
	done, err := runTail(ctx, cfg, brokers)
	if err != nil {
		cancel()
		return nil, err
	}
	logger.Info("tailer started", "inputs", len(cfg.Inputs), "positions", cfg.PositionsFile)
	return func() {
		cancel()
		if err := <-done; err != nil {
			logger.Error("tailer", "err", err)
		}
	}, nil
}

func newTrackerTailCommand() *cobra.Command { return trackerTailCommand(runTrackerTail) }

// trackerTailCommand is the command with its final step, run, replaceable
// by tests.
func trackerTailCommand(run func(ctx context.Context, cfg tail.Config, brokers []string, adminListen string) error) *cobra.Command {
	var (
		bootstrap, topic, name, format, key, startAt, positions, adminListen string
		sendInvalid                                                          bool
		cfg                                                                  tail.Config
	)
	cmd := &cobra.Command{
		Use:   "tail [GLOB...]",
		Short: "Follow log files and produce their lines to the broker",
		Long: `Follow log files, as tail -F does, and produce each line as a record.

Files are found by glob, evaluated again every --scan-interval, so files
created later are followed from their first line. Rotation is handled both
ways: a file renamed away is read to its end before it is let go (for
--rotate-wait after its last write, for a writer that reopens late), and a
file truncated in place (logrotate's copytruncate) is read again from its
beginning. A file is its inode plus the hash of its first 1 KiB, so a
reused inode is a new file. With copytruncate, let the glob match the
copies too (app.log*): lines not yet read when the file was truncated are
then read from the copy. Lines written between the copy and the truncate
are in neither file; that is copytruncate's, and logrotate says so.

--format says what a line becomes:
  raw       the line as it is (the default)
  json      one JSON object per line, sent as it is; --key user.id keys by
            a field (dots descend into objects)
  combined  nginx/Apache combined (or common) log format, parsed into a JSON
            object: remote_addr, remote_user, time (the record timestamp
            too), method, path, protocol, status, bytes, referer,
            user_agent; --key remote_addr keys by a field
Lines that do not parse are counted and dropped, or sent as they are to
<topic>.invalid with --send-invalid. Every record has the headers
log.file.path and log.offset. A partial last line waits for its newline;
a line over --max-line-bytes is cut (header log.truncated) and counted.

Records are produced with acks=all. The position of each file is saved to
--positions (written to a temporary file, fsynced, renamed) only after the
broker acknowledged the lines before it: after a crash, kill -9 included,
the tailer resends at most the last batch (--batch-lines) and loses
nothing. While the broker is away the files wait.

Without GLOB arguments the files come from the "tail:" section of the
--config file, which "tributary tracker" also runs beside the collector:

  tail:
    positions: /var/lib/tributary/tail-positions.json
    scan_interval: 1s          # also poll_interval, rotate_wait,
    max_line_bytes: 262144     # batch_lines
    files:
      - name: nginx            # the metrics label and positions scope
        paths: [/var/log/nginx/access.log*]
        format: combined
        topic: nginx-access    # default: --topic
        key: remote_addr
        send_invalid: true
      - paths: [/var/log/app/*.json]
        format: json
        topic: app-logs
        key: user.id
        start_at: end          # on the first start, skip what is there

Metrics are at /metrics on --admin-listen: lines read and sent, errors by
reason, rotations, and per file the acknowledged position and the lag in
bytes. SIGTERM or Ctrl-C stops it after the batch in flight.`,
		Example: `  # Every line of the app's logs, rotated ones included, to "app-logs".
  tributary tracker tail --topic app-logs '/var/log/app/app.log*'

  # nginx access logs parsed into fields, keyed by client address.
  tributary tracker tail --topic nginx-access --format combined \
    --key remote_addr --positions /var/lib/tributary/nginx.positions \
    '/var/log/nginx/access.log*'

  # The files of the tail: section of a config file.
  tributary tracker tail --config tracker.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			brokers := splitList(bootstrap)
			if len(brokers) == 0 {
				return errNoBootstrap
			}
			if len(args) > 0 {
				cfg.Inputs = append(cfg.Inputs, tail.Input{Name: name, Paths: args, Topic: topic, Format: tail.Format(format),
					Key: key, SendInvalid: sendInvalid, StartAt: tail.StartAt(startAt)})
			}
			s, err := readTailSection(cmd)
			if err != nil {
				return err
			}
			// Flags set on the command line, in the environment or at the
			// top of the file win over the section; the defaults do not.
			for flag, unset := range map[string]func(){
				"positions": func() { positions = "" }, "scan-interval": func() { cfg.ScanInterval = 0 },
				"poll-interval": func() { cfg.PollInterval = 0 }, "rotate-wait": func() { cfg.RotateWait = 0 },
				"max-line-bytes": func() { cfg.MaxLineBytes = 0 }, "batch-lines": func() { cfg.BatchLines = 0 },
			} {
				if fl := cmd.Flags().Lookup(flag); s != nil && fl.Value.String() == fl.DefValue {
					unset()
				}
			}
			cfg.PositionsFile = positions
			s.apply(&cfg, topic)
			if cfg.PositionsFile == "" {
				cfg.PositionsFile = cmd.Flags().Lookup("positions").DefValue
			}
			if len(cfg.Inputs) == 0 {
				return errors.New("no files to follow: give a GLOB, or a tail: section with files in the --config file")
			}
			return run(cmd.Context(), cfg, brokers, adminListen)
		},
	}
	f := cmd.Flags()
	addBootstrapFlag(f, &bootstrap)
	f.StringVar(&topic, "topic", "logs", "topic of the GLOB files, and of tail: files that name none")
	f.StringVar(&name, "name", "", "name of the GLOB input in metrics and positions (default: the first GLOB)")
	f.StringVar(&format, "format", string(tail.FormatRaw), "what a line is: raw, json or combined")
	f.StringVar(&key, "key", "", "field whose value keys the records (json, combined); default: no key")
	f.BoolVar(&sendInvalid, "send-invalid", false, "send lines that do not parse, as read, to <topic>.invalid")
	f.StringVar(&startAt, "start-at", string(tail.StartBeginning), "where files are read from on the very first start (no positions yet): beginning or end")
	f.StringVar(&positions, "positions", "./tributary-tail-positions.json", "file of the acknowledged positions")
	f.DurationVar(&cfg.ScanInterval, "scan-interval", tail.DefaultScanInterval, "how often the globs are evaluated again")
	f.DurationVar(&cfg.PollInterval, "poll-interval", tail.DefaultPollInterval, "how long an idle tailer waits before looking for new lines")
	f.DurationVar(&cfg.RotateWait, "rotate-wait", tail.DefaultRotateWait, "how long a rotated file is still read after its last write")
	f.IntVar(&cfg.MaxLineBytes, "max-line-bytes", tail.DefaultMaxLineBytes, "longer lines are cut to this many bytes")
	f.IntVar(&cfg.BatchLines, "batch-lines", tail.DefaultBatchLines, "lines per produce call, the most resent after a crash")
	f.StringVar(&adminListen, "admin-listen", "127.0.0.1:9646", "address of /metrics, /healthz and /readyz; empty to turn off")
	addAdminAccessFlags(f)
	return cmd
}

func runTrackerTail(ctx context.Context, cfg tail.Config, brokers []string, adminListen string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	logger := slog.Default()
	reg := admin.NewRegistry()
	cfg.Registerer, cfg.Logger = reg, logger
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	done, err := runTail(ctx, cfg, brokers)
	if err != nil {
		return err
	}
	if adminListen != "" {
		acc, _, err := adminAccessOption()
		if err != nil {
			stop()
			<-done
			return err
		}
		a, err := admin.Listen(adminListen, reg, func() error { return nil }, logger, acc)
		if err != nil {
			stop()
			<-done
			return fmt.Errorf("--admin-listen %s: %w", adminListen, err)
		}
		defer a.Close(context.Background())
	}
	logger.Info("tailer ready", "inputs", len(cfg.Inputs), "positions", cfg.PositionsFile, "bootstrap", brokers)
	return <-done
}
