package jobs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/jobs"
)

func parse(t *testing.T, text string) *jobs.Config {
	t.Helper()
	cfg, err := jobs.ParseConfig([]byte(text), "jobs.yaml", func(k string) bool { return k == "listen" || k == "log" })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestConfigDefaultsAndSchedules(t *testing.T) {
	cfg := parse(t, `
listen: 127.0.0.1:9646
log: {level: debug}
lease_ttl: 10s
history: {keep: 5}
defaults:
  target: file:///tmp/lake
  retries: 1
  parallelism: 3
jobs:
  - name: hourly
    topics: [a, b]
    schedule: "5 * * * *"
  - name: often
    topics_regex: 'web\..*'
    every: 15m
    parallelism: 1
    executor: process
  - name: manual
    topics: [c]
    target: hdfs://nn:8020/other
    enabled: false
`)
	if len(cfg.Problems) != 0 {
		t.Fatalf("problems: %v", cfg.Problems)
	}
	if cfg.LeaseTTL != 10*time.Second || cfg.KeepRuns != 5 || len(cfg.Jobs) != 3 {
		t.Fatalf("config %+v", cfg)
	}
	h, o, m := cfg.Jobs[0], cfg.Jobs[1], cfg.Jobs[2]
	if h.Target != "file:///tmp/lake" || h.Retries != 1 || h.Parallelism != 3 || h.Executor != jobs.ExecLocal {
		t.Errorf("defaults not applied: %+v", h.Def)
	}
	at := time.Date(2026, 11, 30, 14, 7, 0, 0, time.UTC)
	if got := h.Sched.Next(at); !got.Equal(time.Date(2026, 11, 30, 15, 5, 0, 0, time.UTC)) {
		t.Errorf("cron next after %s = %s", at, got)
	}
	if got := o.Sched.Next(at); !got.Equal(at.Add(15*time.Minute)) || o.Parallelism != 1 || o.Executor != jobs.ExecProcess {
		t.Errorf("every: next %s, job %+v", got, o.Def)
	}
	if m.Enabled || m.Sched != nil || m.Target != "hdfs://nn:8020/other" {
		t.Errorf("manual job %+v", m.Def)
	}
}

// A bad definition names its job, field and line, and leaves the other
// jobs alone.
func TestConfigProblems(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "s.yaml"), []byte("name: x\nfields: []\n"), 0o644)
	cfg := parse(t, `
defaults: {target: file:///tmp/lake}
jobs:
  - name: good
    topics: [a]
    every: 1m
  - name: typo
    topics: [a]
    shedule: "* * * * *"
  - name: badcron
    topics: [a]
    schedule: "61 * * * *"
  - name: both
    topics: [a]
    schedule: "@hourly"
    every: 1h
  - name: notopics
    every: 1m
  - name: bad name!
    topics: [a]
  - name: exec
    topics: [a]
    executor: slurm
  - topics: [a]
  - name: dup
    topics: [a]
  - name: dup
    topics: [b]
  - name: size
    topics: [a]
    max_bytes_per_unit: lots
`)
	if len(cfg.Jobs) != 1 || cfg.Jobs[0].Name != "good" {
		t.Fatalf("valid jobs: %d", len(cfg.Jobs))
	}
	want := []struct{ job, field, text string }{
		{`"typo"`, "shedule", `did you mean "schedule"`},
		{`"badcron"`, "schedule", "61"},
		{`"both"`, "schedule", "not both"},
		{`"notopics"`, "topics", "topics_regex"},
		{`"bad name!"`, "name", "letters"},
		{`"exec"`, "executor", "slurm"},
		{"jobs[7]", "name", "missing"},
		{`"dup"`, "name", "defined twice"},
		{`"size"`, "max_bytes_per_unit", "not a size"},
	}
	if len(cfg.Problems) != len(want) {
		t.Fatalf("%d problems, want %d: %v", len(cfg.Problems), len(want), cfg.Problems)
	}
	for i, w := range want {
		p := cfg.Problems[i]
		if p.Job != w.job || p.Field != w.field || !strings.Contains(p.Error(), w.text) || p.Line == 0 {
			t.Errorf("problem %d: %q (job %s, field %q, line %d); want job %s, field %q, containing %q", i, p.Error(), p.Job, p.Field, p.Line, w.job, w.field, w.text)
		}
	}
	t.Logf("for example: %v", cfg.Problems[0])
}

func TestConfigFileErrors(t *testing.T) {
	for _, text := range []string{
		"jobs: [\n",                 // not YAML
		"jbos: []\n",                // unknown top-level key
		"lease_ttl: 1s\njobs: []\n", // too short to renew
		"defaults: {name: x}\n",     // a name in defaults
		"defaults: {shedule: x}\n",  // an unknown field in defaults
	} {
		if _, err := jobs.ParseConfig([]byte(text), "jobs.yaml", nil); err == nil {
			t.Errorf("%q: no error", text)
		} else {
			t.Logf("%q: %v", text, err)
		}
	}
}

// Maintenance jobs: actions and their settings are checked like any field.
func TestConfigMaintenance(t *testing.T) {
	cfg := parse(t, `
defaults: {target: file:///tmp/lake}
jobs:
  - name: tidy
    topics: [a]
    maintenance: [compact, expire_snapshots, remove_orphans]
    min_snapshots_to_keep: 5
    orphan_age: 96h
    every: 6h
  - name: load
    topics: [a]
    table_format: iceberg
  - name: vacuum
    topics: [a]
    maintenance: [vacuum]
  - name: hasty
    topics: [a]
    maintenance: [remove_orphans]
    orphan_age: 59m
  - name: remote
    topics: [a]
    maintenance: [compact]
    executor: process
  - name: delta
    topics: [a]
    table_format: delta
`)
	if len(cfg.Jobs) != 2 || cfg.Jobs[0].Name != "tidy" || cfg.Jobs[1].Spec.TableFormat != "iceberg" {
		t.Fatalf("valid jobs: %d", len(cfg.Jobs))
	}
	if j := cfg.Jobs[0]; j.MinSnapshotsToKeep != 5 || j.OrphanAge != 96*time.Hour || len(j.Maintenance) != 3 {
		t.Fatalf("tidy: %+v", j.Def)
	}
	want := []struct{ job, field, text string }{
		{`"vacuum"`, "maintenance", "vacuum"},
		{`"hasty"`, "orphan_age", "at least 1h"},
		{`"remote"`, "executor", "local"},
		{`"delta"`, "table_format", "delta"},
	}
	if len(cfg.Problems) != len(want) {
		t.Fatalf("%d problems, want %d: %v", len(cfg.Problems), len(want), cfg.Problems)
	}
	for i, w := range want {
		p := cfg.Problems[i]
		if p.Job != w.job || p.Field != w.field || !strings.Contains(p.Error(), w.text) {
			t.Errorf("problem %d: %q (job %s, field %q); want job %s, field %q, containing %q", i, p.Error(), p.Job, p.Field, w.job, w.field, w.text)
		}
	}
}

// Issue 24: a load job's identity partition columns and SQL catalog, and a
// maintenance job's catalog, with a bad value of each named by its field.
func TestConfigPartitionByCatalog(t *testing.T) {
	cfg := parse(t, `
defaults: {target: file:///tmp/lake}
jobs:
  - name: load
    topics: [a]
    table_format: iceberg
    partition_by: [country, device]
    catalog: sql:/var/lib/tributary/catalog.db
  - name: tidy
    topics: [a]
    maintenance: [compact]
    catalog: sql:/var/lib/tributary/catalog.db
  - name: plain
    topics: [a]
    partition_by: [country]
  - name: twice
    topics: [a]
    table_format: iceberg
    partition_by: [country, country]
  - name: mysql
    topics: [a]
    table_format: iceberg
    catalog: mysql://db/lake
  - name: tidy-mysql
    topics: [a]
    maintenance: [compact]
    catalog: mysql://db/lake
`)
	if len(cfg.Jobs) != 2 {
		t.Fatalf("valid jobs: %d (%v)", len(cfg.Jobs), cfg.Problems)
	}
	if s := cfg.Jobs[0].Spec; strings.Join(s.PartitionBy, ",") != "country,device" || s.Catalog != "sql:/var/lib/tributary/catalog.db" {
		t.Fatalf("load: partition by %v, catalog %q", s.PartitionBy, s.Catalog)
	}
	want := []struct{ job, field, text string }{
		{`"plain"`, "partition_by", "--table-format iceberg"},
		{`"twice"`, "partition_by", "named twice"},
		{`"mysql"`, "catalog", "mysql://db/lake"},
		{`"tidy-mysql"`, "catalog", "mysql://db/lake"},
	}
	if len(cfg.Problems) != len(want) {
		t.Fatalf("%d problems, want %d: %v", len(cfg.Problems), len(want), cfg.Problems)
	}
	for i, w := range want {
		if p := cfg.Problems[i]; p.Job != w.job || p.Field != w.field || !strings.Contains(p.Error(), w.text) {
			t.Errorf("problem %d: %v; want job %s, field %s, %q", i, p, w.job, w.field, w.text)
		}
	}
}
