package tail

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Config.
const (
	DefaultScanInterval  = time.Second
	DefaultPollInterval  = 250 * time.Millisecond
	DefaultRotateWait    = 5 * time.Second
	DefaultMaxLineBytes  = 256 << 10
	DefaultBatchLines    = 2000
	DefaultBatchBytes    = 1 << 20
	DefaultFingerprint   = 1024
	DefaultRetryMax      = 2 * time.Second
	defaultRetryMin      = 100 * time.Millisecond
	defaultGhostLifetime = 10 * time.Minute
)

// Format is how a line becomes a record value.
type Format string

const (
	// FormatRaw sends the line as it is (without its newline).
	FormatRaw Format = "raw"
	// FormatJSON sends the line, which must hold one JSON object.
	FormatJSON Format = "json"
	// FormatCombined parses the nginx/Apache combined (or common) log
	// format into a JSON object.
	FormatCombined Format = "combined"
)

// StartAt is where a file first seen at the tailer's very first start (no
// positions file yet) is read from. Files that appear later are always read
// from their beginning: they are new.
type StartAt string

const (
	StartBeginning StartAt = "beginning" // the default
	StartEnd       StartAt = "end"
)

// Input is one set of files, found by glob, sent to one topic.
type Input struct {
	// Name labels the input in metrics and scopes its positions; defaults
	// to the first path pattern.
	Name string
	// Paths are glob patterns (filepath.Match syntax), re-evaluated every
	// ScanInterval.
	Paths  []string
	Topic  string
	Format Format // default raw
	// Key names the field whose value keys the record (dots descend into
	// JSON objects: "user.id"); empty sends records without a key. Raw
	// lines have no fields.
	Key string
	// SendInvalid sends lines that fail to parse, as they were read, to
	// Topic + ".invalid" with a "log.error" header; otherwise they are
	// counted and dropped.
	SendInvalid bool
	StartAt     StartAt // default beginning
}

// Config configures a Tailer. Inputs and PositionsFile are required.
type Config struct {
	Inputs []Input
	// PositionsFile holds the acknowledged position of every file, written
	// after each acknowledged batch; a lock file PositionsFile+".lock" keeps
	// a second tailer away from it.
	PositionsFile string

	ScanInterval time.Duration // glob re-evaluation; default 1 s
	PollInterval time.Duration // idle wait before looking for new lines; default 250 ms
	// RotateWait is how long a file that left the globs (renamed, deleted)
	// is still followed after its last growth, for a writer that has not
	// reopened its log yet; default 5 s.
	RotateWait time.Duration
	// MaxLineBytes cuts longer lines to their first MaxLineBytes bytes (the
	// rest up to the newline is skipped and counted); default 256 KiB.
	MaxLineBytes int
	BatchLines   int           // records per produce call; default 2,000
	BatchBytes   int           // bytes of lines per produce call; default 1 MiB
	RetryMax     time.Duration // longest wait between produce retries; default 2 s
	// FingerprintBytes is how many first bytes of a file identify it with
	// its inode; default 1,024. Changing it makes every file new.
	FingerprintBytes int

	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Validate reports a config that cannot work.
func (c *Config) Validate() error {
	if len(c.Inputs) == 0 {
		return errors.New("tracker/tail: no input files")
	}
	if c.PositionsFile == "" {
		return errors.New("tracker/tail: no positions file")
	}
	names := map[string]bool{}
	for i, in := range c.Inputs {
		if len(in.Paths) == 0 {
			return fmt.Errorf("tracker/tail: input %d: no paths", i+1)
		}
		for _, p := range in.Paths {
			if _, err := filepath.Match(p, ""); err != nil {
				return fmt.Errorf("tracker/tail: input %d: path %q: %w", i+1, p, err)
			}
		}
		name := in.name()
		if names[name] {
			return fmt.Errorf("tracker/tail: two inputs named %q; give them a name", name)
		}
		names[name] = true
		if in.Topic == "" {
			return fmt.Errorf("tracker/tail: input %s: no topic", name)
		}
		switch in.Format {
		case "", FormatRaw:
			if in.Key != "" {
				return fmt.Errorf("tracker/tail: input %s: key %q: raw lines have no fields; use format json or combined", name, in.Key)
			}
		case FormatJSON:
		case FormatCombined:
			if in.Key != "" && !isCombinedField(in.Key) {
				return fmt.Errorf("tracker/tail: input %s: key %q is not a combined log field (%s)", name, in.Key, strings.Join(combinedFields, ", "))
			}
		default:
			return fmt.Errorf("tracker/tail: input %s: format %q: want raw, json or combined", name, in.Format)
		}
		switch in.StartAt {
		case "", StartBeginning, StartEnd:
		default:
			return fmt.Errorf("tracker/tail: input %s: start_at %q: want beginning or end", name, in.StartAt)
		}
	}
	if c.FingerprintBytes < 0 || c.MaxLineBytes < 0 || c.BatchLines < 0 || c.BatchBytes < 0 {
		return errors.New("tracker/tail: negative size")
	}
	return nil
}

func (in *Input) name() string {
	if in.Name != "" {
		return in.Name
	}
	if len(in.Paths) > 0 {
		return in.Paths[0]
	}
	return ""
}

func (c *Config) fill() {
	for i := range c.Inputs {
		in := &c.Inputs[i]
		in.Name = in.name()
		if in.Format == "" {
			in.Format = FormatRaw
		}
		if in.StartAt == "" {
			in.StartAt = StartBeginning
		}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ScanInterval, DefaultScanInterval)
	def(&c.PollInterval, DefaultPollInterval)
	def(&c.RotateWait, DefaultRotateWait)
	def(&c.RetryMax, DefaultRetryMax)
	defInt := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt(&c.MaxLineBytes, DefaultMaxLineBytes)
	defInt(&c.BatchLines, DefaultBatchLines)
	defInt(&c.BatchBytes, DefaultBatchBytes)
	defInt(&c.FingerprintBytes, DefaultFingerprint)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}
