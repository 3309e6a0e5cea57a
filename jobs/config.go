package jobs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tributary-io/tributary/formats/parquet"
	"github.com/tributary-io/tributary/internal/bytesize"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/loader"
)

// Def is one job as written in the jobs file, after the file's defaults
// were applied. The yaml names are the file's; Validate turns a Def into a
// Job.
type Def struct {
	Name string `yaml:"name" json:"name"`

	// What to load, and where.
	Topics      []string `yaml:"topics" json:"topics,omitempty"`
	TopicsRegex string   `yaml:"topics_regex" json:"topicsRegex,omitempty"`
	Target      string   `yaml:"target" json:"target"`
	Bootstrap   string   `yaml:"bootstrap" json:"bootstrap,omitempty"`
	HDFSUser    string   `yaml:"hdfs_user" json:"hdfsUser,omitempty"`

	// How records become files.
	Format         string        `yaml:"format" json:"format,omitempty"`
	Schema         string        `yaml:"schema" json:"schema,omitempty"` // a YAML schema file
	AvroSchema     string        `yaml:"avro_schema" json:"avroSchema,omitempty"`
	AvroSchemaDir  string        `yaml:"avro_schema_dir" json:"avroSchemaDir,omitempty"`
	TimeField      string        `yaml:"time_field" json:"timeField,omitempty"`
	TimeZone       string        `yaml:"time_zone" json:"timeZone,omitempty"`
	Lateness       time.Duration `yaml:"lateness" json:"lateness,omitempty"`
	Codec          string        `yaml:"codec" json:"codec,omitempty"`
	TargetFileSize Size          `yaml:"target_file_size" json:"targetFileSize,omitempty"`
	MaxMemory      Size          `yaml:"max_memory" json:"maxMemory,omitempty"`
	AllowGaps      bool          `yaml:"allow_gaps" json:"allowGaps,omitempty"`
	TableFormat    string        `yaml:"table_format" json:"tableFormat,omitempty"` // parquet or iceberg
	PartitionBy    []string      `yaml:"partition_by" json:"partitionBy,omitempty"` // identity partition columns of the tables
	Catalog        string        `yaml:"catalog" json:"catalog,omitempty"`          // hadoop or sql:<file>[#<namespace>]

	// Maintenance, when set, makes the job a table maintenance job
	// (maintain.go): these actions on the Iceberg tables of its topics,
	// instead of a load.
	Maintenance        []string      `yaml:"maintenance" json:"maintenance,omitempty"`
	MaxSnapshotAge     time.Duration `yaml:"max_snapshot_age" json:"maxSnapshotAge,omitempty"`
	MinSnapshotsToKeep int           `yaml:"min_snapshots_to_keep" json:"minSnapshotsToKeep,omitempty"`
	OrphanAge          time.Duration `yaml:"orphan_age" json:"orphanAge,omitempty"`

	// How the work is cut and run.
	Parallelism       int         `yaml:"parallelism" json:"parallelism,omitempty"`
	MaxRecordsPerUnit int64       `yaml:"max_records_per_unit" json:"maxRecordsPerUnit,omitempty"`
	MaxBytesPerUnit   Size        `yaml:"max_bytes_per_unit" json:"maxBytesPerUnit,omitempty"`
	Executor          string      `yaml:"executor" json:"executor,omitempty"`     // local, process, command
	Command           []string    `yaml:"command" json:"command,omitempty"`       // executor: command
	YARN              *YARN       `yaml:"yarn" json:"yarn,omitempty"`             // executor: yarn (yarn.go)
	Kubernetes        *Kubernetes `yaml:"kubernetes" json:"kubernetes,omitempty"` // executor: kubernetes (kubernetes.go)

	// When.
	Schedule   string        `yaml:"schedule" json:"schedule,omitempty"` // cron
	Every      time.Duration `yaml:"every" json:"every,omitempty"`
	Retries    *int          `yaml:"retries" json:"retries,omitempty"`
	Backoff    time.Duration `yaml:"backoff" json:"backoff,omitempty"`
	MaxBackoff time.Duration `yaml:"max_backoff" json:"maxBackoff,omitempty"`
	Timeout    time.Duration `yaml:"timeout" json:"timeout,omitempty"` // of one attempt
	Enabled    *bool         `yaml:"enabled" json:"enabled,omitempty"`
	Paused     bool          `yaml:"paused" json:"paused,omitempty"`
}

// Defaults of a job's fields that the loader does not default itself.
const (
	DefaultParallelism = 2
	DefaultRetries     = 3
	DefaultBackoff     = 30 * time.Second
	DefaultMaxBackoff  = 10 * time.Minute
	DefaultLeaseTTL    = 30 * time.Second
	DefaultClockSkew   = 2 * time.Second
	DefaultKeepRuns    = 200
	DefaultRunsMaxAge  = 30 * 24 * time.Hour
)

// Executors.
const (
	ExecLocal   = "local"   // worker goroutines in the scheduler's process
	ExecProcess = "process" // `tributary load worker` processes, parallelism of them
	ExecCommand = "command" // one command given the plan (a Kubernetes Indexed Job, say)
	// ExecYARN (yarn.go): one YARN application runs the plan's units.
)

// Job is a validated definition, ready to run.
type Job struct {
	Def
	Spec     loader.Spec
	Sched    Schedule // nil: runs only when triggered
	Sink     fsys.Options
	Retries  int
	Enabled  bool
	checksum string // of Def: a reload replaces a job only when it changed
}

// Config is a parsed jobs file.
type Config struct {
	// LeaseTTL is how long a run's lease lasts without renewal; ClockSkew is
	// how far apart the clocks of two schedulers may be. A lease is taken
	// over only after TTL+skew without renewal.
	LeaseTTL  time.Duration
	ClockSkew time.Duration
	// KeepRuns and RunsMaxAge bound each job's history.
	KeepRuns   int
	RunsMaxAge time.Duration
	// Jobs are the valid definitions, in file order.
	Jobs []*Job
	// Problems are the definitions that are not valid, each naming its job
	// and field. They do not stop the other jobs.
	Problems []*FieldError
}

// FieldError is a problem with one field of one job.
type FieldError struct {
	File  string `json:"file"`
	Line  int    `json:"line,omitempty"`
	Job   string `json:"job"` // its name, or jobs[i] when it has none
	Field string `json:"field,omitempty"`
	Msg   string `json:"message"`
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	fmt.Fprintf(&b, ": job %s", e.Job)
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	return b.String() + ": " + e.Msg
}

// file is the jobs file's layout. Other top-level keys are the flags of
// `tributary jobs serve` (listen, bootstrap, ...), read by the command.
type file struct {
	LeaseTTL   time.Duration `yaml:"lease_ttl"`
	ClockSkew  time.Duration `yaml:"max_clock_skew"`
	Defaults   yaml.Node     `yaml:"defaults"`
	History    historyConf   `yaml:"history"`
	Jobs       []yaml.Node   `yaml:"jobs"`
	directives map[string]bool
}

type historyConf struct {
	Keep   int           `yaml:"keep"`
	MaxAge time.Duration `yaml:"max_age"`
}

// fileKeys are the top-level keys file owns.
var fileKeys = map[string]bool{"lease_ttl": true, "max_clock_skew": true, "defaults": true, "history": true, "jobs": true}

// ReadConfig reads and parses a jobs file.
func ReadConfig(path string, isFlag func(key string) bool) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(data, path, isFlag)
}

// ParseConfig parses a jobs file. An error is a problem with the file as a
// whole (not YAML, an unknown top-level key): nothing in it can be trusted.
// A problem with one job is in Config.Problems, and that job is left out.
// isFlag says whether a top-level key is a flag of the command (nil: none
// is); path names the file in messages, and schema paths are relative to
// its directory.
func ParseConfig(data []byte, path string, isFlag func(key string) bool) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var f file
	if len(root.Content) > 0 {
		top := root.Content[0]
		if top.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: want a mapping with a jobs: list", path, top.Line)
		}
		for i := 0; i+1 < len(top.Content); i += 2 {
			k := top.Content[i]
			if !fileKeys[k.Value] && (isFlag == nil || !isFlag(k.Value)) {
				return nil, fmt.Errorf("%s:%d: unknown key %q (want jobs, defaults, history, lease_ttl, max_clock_skew, or a flag of `tributary jobs serve`)", path, k.Line, k.Value)
			}
		}
		if err := top.Decode(&f); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	cfg := &Config{LeaseTTL: f.LeaseTTL, ClockSkew: f.ClockSkew, KeepRuns: f.History.Keep, RunsMaxAge: f.History.MaxAge}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.ClockSkew == 0 {
		cfg.ClockSkew = DefaultClockSkew
	}
	if cfg.LeaseTTL < 3*time.Second {
		return nil, fmt.Errorf("%s: lease_ttl %s: want at least 3s (it is renewed every third of it)", path, cfg.LeaseTTL)
	}
	if cfg.KeepRuns <= 0 {
		cfg.KeepRuns = DefaultKeepRuns
	}
	if cfg.RunsMaxAge <= 0 {
		cfg.RunsMaxAge = DefaultRunsMaxAge
	}
	var defaults Def
	if f.Defaults.Kind != 0 {
		if fe := checkFields(&f.Defaults, path, "defaults"); fe != nil {
			return nil, fe
		}
		if fe := decodeFields(&f.Defaults, &defaults); fe != nil {
			fe.File, fe.Job = path, "defaults"
			return nil, fe
		}
		if defaults.Name != "" {
			return nil, fmt.Errorf("%s:%d: defaults: a name belongs to each job", path, f.Defaults.Line)
		}
	}
	dir := filepath.Dir(path)
	seen := map[string]int{}
	for i := range f.Jobs {
		n := &f.Jobs[i]
		label := fmt.Sprintf("jobs[%d]", i)
		if name := nodeName(n); name != "" {
			label = strconv.Quote(name)
		}
		if fe := checkFields(n, path, label); fe != nil {
			cfg.Problems = append(cfg.Problems, fe)
			continue
		}
		d := defaults
		if fe := decodeFields(n, &d); fe != nil {
			fe.File, fe.Job = path, label
			cfg.Problems = append(cfg.Problems, fe)
			continue
		}
		j, fe := d.validate(dir)
		if fe != nil {
			fe.File, fe.Job = path, label
			if fe.Line == 0 {
				fe.Line = fieldLine(n, fe.Field)
			}
			cfg.Problems = append(cfg.Problems, fe)
			continue
		}
		if prev, dup := seen[j.Name]; dup {
			cfg.Problems = append(cfg.Problems, &FieldError{File: path, Line: n.Line, Job: label, Field: "name",
				Msg: fmt.Sprintf("defined twice (also line %d); neither definition is used", prev)})
			continue
		}
		seen[j.Name] = n.Line
		cfg.Jobs = append(cfg.Jobs, j)
	}
	// A name defined twice: drop the first too, so that the file does not
	// decide silently which one wins.
	dups := map[string]bool{}
	for _, p := range cfg.Problems {
		if p.Field == "name" && strings.HasPrefix(p.Msg, "defined twice") {
			dups[strings.Trim(p.Job, `"`)] = true
		}
	}
	kept := cfg.Jobs[:0]
	for _, j := range cfg.Jobs {
		if !dups[j.Name] {
			kept = append(kept, j)
		}
	}
	cfg.Jobs = kept
	return cfg, nil
}

// validate checks a definition and builds the loader's spec from it.
func (d Def) validate(dir string) (*Job, *FieldError) {
	bad := func(field, format string, args ...any) (*Job, *FieldError) {
		return nil, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if d.Name == "" {
		return bad("name", "missing")
	}
	if err := loader.ValidJob(d.Name); err != nil {
		return bad("name", "%v", err)
	}
	if len(d.Topics) == 0 && d.TopicsRegex == "" {
		return bad("topics", "give topics (a list of names) or topics_regex")
	}
	if d.Target == "" {
		return bad("target", "missing: hdfs://namenode:port/path or file:///path")
	}
	if !strings.HasPrefix(d.Target, "hdfs://") && !strings.HasPrefix(d.Target, "file://") {
		return bad("target", "%q: want hdfs://namenode:port/path or file:///path", d.Target)
	}
	j := &Job{Def: d, Enabled: d.Enabled == nil || *d.Enabled, Retries: DefaultRetries}
	if d.Retries != nil {
		if *d.Retries < 0 {
			return bad("retries", "%d: want 0 or more", *d.Retries)
		}
		j.Retries = *d.Retries
	}
	if j.Parallelism == 0 {
		j.Parallelism = DefaultParallelism
	}
	if j.Parallelism < 0 || j.Parallelism > 1024 {
		return bad("parallelism", "%d: want 1 to 1024", j.Parallelism)
	}
	if j.Backoff == 0 {
		j.Backoff = DefaultBackoff
	}
	if j.MaxBackoff == 0 {
		j.MaxBackoff = max(DefaultMaxBackoff, j.Backoff)
	}
	if j.Backoff < 0 || j.MaxBackoff < j.Backoff {
		return bad("backoff", "%s (max_backoff %s): want 0 < backoff <= max_backoff", j.Backoff, j.MaxBackoff)
	}
	if j.Timeout < 0 {
		return bad("timeout", "%s: want a positive duration", j.Timeout)
	}
	switch j.Executor {
	case "":
		j.Executor = ExecLocal
	case ExecLocal, ExecProcess:
		if len(j.Command) > 0 {
			return bad("command", "only for executor: command")
		}
	case ExecCommand:
		if len(j.Command) == 0 {
			return bad("command", "executor: command needs the command to run, a list such as [deploy/k8s/run-plan.sh]")
		}
	case ExecYARN:
		if j.YARN == nil {
			return bad("yarn", "executor: yarn needs a yarn: block with resource_manager and am_jar (docs/jobs.md)")
		}
		y := *j.YARN
		if err := y.validate(j.Parallelism); err != nil {
			return bad("yarn", "%v", err)
		}
		j.YARN = &y
	case ExecKubernetes:
		if j.Kubernetes == nil {
			return bad("kubernetes", "executor: kubernetes needs a kubernetes: block with the Job template (docs/jobs.md)")
		}
		if err := j.Kubernetes.validate(); err != nil {
			return bad("kubernetes", "%v", err)
		}
	default:
		return bad("executor", "%q: want local, process, command, yarn or kubernetes", j.Executor)
	}
	switch {
	case j.Schedule != "" && j.Every != 0:
		return bad("schedule", "give schedule (cron) or every, not both")
	case j.Schedule != "":
		s, err := parseCron(j.Schedule)
		if err != nil {
			return bad("schedule", "%q: %v", j.Schedule, err)
		}
		j.Sched = s
	case j.Every < 0 || (j.Every > 0 && j.Every < time.Second):
		return bad("every", "%s: want 1s or more", j.Every)
	case j.Every > 0:
		j.Sched = every(j.Every)
	}
	if len(j.Maintenance) > 0 {
		if field, msg := j.validateMaintenance(); field != "" {
			return bad(field, "%s", msg)
		}
		j.Sink = fsys.Options{User: j.HDFSUser}
		sum, _ := json.Marshal(j.Def)
		h := sha256.Sum256(sum)
		j.checksum = hex.EncodeToString(h[:8])
		return j, nil
	}
	spec := loader.Spec{
		Job: j.Name, Topics: j.Topics, TopicsRegex: j.TopicsRegex,
		Settings: loader.Settings{
			Format: j.Format, AvroSchema: j.AvroSchema, AvroDir: j.AvroSchemaDir,
			TimeField: j.TimeField, TimeZone: j.TimeZone, Lateness: loader.Duration(j.Lateness),
			Codec: j.Codec, TargetFileBytes: int64(j.TargetFileSize), MaxMemory: int64(j.MaxMemory), AllowGaps: j.AllowGaps,
			TableFormat: j.TableFormat, PartitionBy: j.PartitionBy, Catalog: j.Catalog,
		},
		MaxRecordsPerUnit: j.MaxRecordsPerUnit, MaxBytesPerUnit: int64(j.MaxBytesPerUnit),
	}
	if j.Schema != "" {
		p := j.Schema
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return bad("schema", "%v", err)
		}
		spec.Schema = b
	}
	if err := spec.Validate(); err != nil {
		field := "format"
		for _, f := range []string{"topics_regex", "time_zone", "avro_schema", "partition_by", "catalog", "table_format", "schema"} {
			if strings.Contains(err.Error(), "--"+strings.ReplaceAll(f, "_", "-")) {
				field = f
				break
			}
		}
		return bad(field, "%v", err)
	}
	if _, err := parquet.ParseCodec(spec.Codec); err != nil {
		return bad("codec", "%v", err)
	}
	j.Spec = spec
	j.Sink = fsys.Options{User: j.HDFSUser}
	sum, _ := json.Marshal(j.Def)
	h := sha256.Sum256(append(sum, spec.Schema...))
	j.checksum = hex.EncodeToString(h[:8])
	return j, nil
}

// decodeFields decodes a mapping into d one field at a time, so that a bad
// value is reported with its field and line.
func decodeFields(n *yaml.Node, d *Def) *FieldError {
	for i := 0; i+1 < len(n.Content); i += 2 {
		one := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: n.Content[i : i+2]}
		if err := one.Decode(d); err != nil {
			return &FieldError{Line: n.Content[i].Line, Field: n.Content[i].Value, Msg: cleanYAMLError(err)}
		}
	}
	return nil
}

// checkFields reports a key of a job mapping that Def does not have: a
// misspelled field would otherwise be ignored silently.
func checkFields(n *yaml.Node, path, label string) *FieldError {
	if n.Kind != yaml.MappingNode {
		return &FieldError{File: path, Line: n.Line, Job: label, Msg: "want a mapping of fields"}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !defFields[k.Value] {
			return &FieldError{File: path, Line: k.Line, Job: label, Field: k.Value, Msg: "unknown field" + suggest(k.Value)}
		}
	}
	return nil
}

var defFields = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeOf(Def{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		m[name] = true
	}
	return m
}()

// suggest names the field a misspelling most likely meant.
func suggest(key string) string {
	best, bestD := "", 3
	for f := range defFields {
		if d := editDistance(key, f); d < bestD {
			best, bestD = f, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func nodeName(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "name" {
			return n.Content[i+1].Value
		}
	}
	return ""
}

func fieldLine(n *yaml.Node, field string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == field {
			return n.Content[i].Line
		}
	}
	return n.Line
}

// cleanYAMLError drops yaml's "yaml: unmarshal errors:" framing.
func cleanYAMLError(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return strings.Join(te.Errors, "; ")
	}
	return err.Error()
}

// Size is a byte count written as 268435456, 256MiB, 256M or 1.5GB (binary
// units either way, as the load command's flags).
type Size int64

func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseSize(n.Value)
	if err != nil {
		return err
	}
	*s = Size(v)
	return nil
}

// ParseSize reads a Size (internal/bytesize).
func ParseSize(text string) (int64, error) { return bytesize.Parse(text) }

// equal reports whether two jobs have the same definition.
func (j *Job) equal(o *Job) bool {
	return o != nil && j.checksum == o.checksum && bytes.Equal(j.Spec.Schema, o.Spec.Schema)
}
