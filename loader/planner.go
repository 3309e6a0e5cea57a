package loader

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/tributary-io/tributary/formats/schema"
	"github.com/tributary-io/tributary/formats/srclient"
	"github.com/tributary-io/tributary/internal/kafkacli"
)

// Spec is what a load run is asked to do.
type Spec struct {
	Job         string
	Topics      []string // by name
	TopicsRegex string   // and/or matching this (anchored) regex
	Settings
	// Schema, if set, is the YAML schema of every topic (json and avro).
	// Without one, a json topic keeps the schema it was last written with,
	// or has one inferred from a sample of its records.
	Schema []byte
	// MaxRecordsPerUnit and MaxBytesPerUnit bound a work unit; the bytes
	// are estimated from a sample of each partition's records.
	MaxRecordsPerUnit int64
	MaxBytesPerUnit   int64
}

// Defaults of a Spec's zero fields.
const (
	DefaultMaxRecordsPerUnit = 1_000_000
	DefaultMaxBytesPerUnit   = 256 << 20
	DefaultTargetFileBytes   = 256 << 20
	DefaultMaxMemory         = 512 << 20
	DefaultLateness          = 10 * time.Minute
	DefaultJob               = "default"
)

// Validate fills defaults and checks the spec.
func (s *Spec) Validate() error {
	if s.Job == "" {
		s.Job = DefaultJob
	}
	if err := ValidJob(s.Job); err != nil {
		return err
	}
	if len(s.Topics) == 0 && s.TopicsRegex == "" {
		return errors.New("no topics: give --topics or --topics-regex")
	}
	if s.TopicsRegex != "" {
		if _, err := regexp.Compile("^(?:" + s.TopicsRegex + ")$"); err != nil {
			return fmt.Errorf("--topics-regex %q: %w", s.TopicsRegex, err)
		}
	}
	return s.Settings.validate(s.Schema != nil)
}

func (s *Settings) validate(haveSchema bool) error {
	if s.Format == "" {
		s.Format = FormatJSON
	}
	switch s.Format {
	case FormatJSON, FormatRaw:
	case FormatProtobuf:
		if s.Registry == "" {
			return errors.New("--format protobuf needs --registry (the writers' schemas)")
		}
	case FormatAvro:
		if s.Registry != "" {
			if s.AvroSchema != "" {
				return errors.New("--format avro takes --registry or --avro-schema, not both")
			}
			break
		}
		if !haveSchema || s.AvroSchema == "" {
			return errors.New("--format avro needs --schema (the columns) and --avro-schema (the writer's Avro schema), or --registry")
		}
	case FormatAvroConfluent:
		if !haveSchema || s.AvroDir == "" {
			return errors.New("--format avro-confluent needs --schema and --avro-schema-dir (<id>.avsc files)")
		}
	default:
		return fmt.Errorf("--format %q: want json, avro, avro-confluent, protobuf or raw", s.Format)
	}
	if s.Registry != "" && s.Format != FormatAvro && s.Format != FormatJSON && s.Format != FormatProtobuf {
		return fmt.Errorf("--registry works with --format avro, json or protobuf (got %s)", s.Format)
	}
	if s.TimeZone == "" {
		s.TimeZone = "UTC"
	}
	if _, err := time.LoadLocation(s.TimeZone); err != nil {
		return fmt.Errorf("--time-zone %q: %w", s.TimeZone, err)
	}
	if s.Lateness == 0 {
		s.Lateness = Duration(DefaultLateness)
	}
	if s.TargetFileBytes <= 0 {
		s.TargetFileBytes = DefaultTargetFileBytes
	}
	if s.MaxMemory <= 0 {
		s.MaxMemory = DefaultMaxMemory
	}
	if s.Codec == "" {
		s.Codec = "snappy"
	}
	if s.FromTier != "" {
		if err := ValidTierURI(s.FromTier); err != nil {
			return err
		}
	}
	return s.validateTable()
}

// Plan computes a load plan from the job's state and the broker's offsets,
// without saving it. A plan with no units means there is nothing new.
func (l *Loader) Plan(ctx context.Context, spec Spec) (*Plan, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	state, err := ReadState(l.FS, spec.Job)
	if err != nil {
		return nil, err
	}
	run, now, err := l.nextRunID(spec.Job, l.now())
	if err != nil {
		return nil, err
	}
	p := &Plan{
		Version: PlanVersion, Run: run, Job: spec.Job, Kind: "load", Created: now.UTC(),
		Bootstrap: l.Bootstrap, Settings: spec.Settings,
		Schemas: map[string]string{}, Inferred: map[string]bool{}, Next: map[string]map[int32]int64{},
	}
	topics, err := l.matchTopics(ctx, spec, state)
	if err != nil {
		return nil, err
	}
	if err := l.tierTopicIDs(ctx, p, topics); err != nil {
		return nil, err
	}
	var given *schema.Schema
	if spec.Schema != nil {
		if given, err = schema.Parse(spec.Schema); err != nil {
			return nil, fmt.Errorf("--schema: %w", err)
		}
	}
	var gone []string
	for _, t := range topics {
		// A plan ends at the last stable offsets: an open transaction's
		// records wait for the next run, decided.
		ranges, err := l.Cluster.StableOffsets(ctx, t.Name, t.PartitionIndexes())
		if err != nil {
			return nil, err
		}
		var samples [][]byte
		for _, part := range t.PartitionIndexes() {
			r := ranges[part]
			if r.Err != nil {
				return nil, fmt.Errorf("offsets of %s/%d: %w", t.Name, part, r.Err)
			}
			pi := int32(part)
			from, committed := state.Offsets[t.Name][pi]
			if !committed {
				from = r.Start
			}
			if from < r.Start || from > r.End {
				why := fmt.Sprintf("offsets %d to %d are gone (retention, DeleteRecords or a deleted topic); the first available is %d", from, r.Start-1, r.Start)
				if from > r.End {
					why = fmt.Sprintf("the committed offset %d is past the end of the log, %d (was the topic deleted and created again?)", from, r.End)
				}
				if !spec.AllowGaps {
					gone = append(gone, fmt.Sprintf("%s/%d: %s", t.Name, part, why))
					continue
				}
				p.Gaps = append(p.Gaps, Gap{Topic: t.Name, Partition: pi, From: from, To: r.Start, Reason: why})
				from = r.Start
			}
			setOffset(p.Next, t.Name, pi, r.End)
			if r.End == from {
				continue
			}
			sample, avg, err := l.sample(ctx, t.Name, pi, from)
			if err != nil {
				return nil, err
			}
			samples = append(samples, sample...)
			per := spec.MaxRecordsPerUnit
			if per <= 0 {
				per = DefaultMaxRecordsPerUnit
			}
			maxBytes := spec.MaxBytesPerUnit
			if maxBytes <= 0 {
				maxBytes = DefaultMaxBytesPerUnit
			}
			per = max(1, min(per, maxBytes/max(avg, 1)))
			for lo := from; lo < r.End; lo += per {
				p.Units = append(p.Units, Unit{Index: len(p.Units), Topic: t.Name, Partition: pi, From: lo, To: min(lo+per, r.End)})
			}
		}
		topicGiven, givenName := given, "--schema"
		if p.Registry != "" && given == nil {
			if topicGiven, givenName, err = registrySchema(ctx, p.Registry, t.Name, p.Format, p.ProtoMessage); err != nil {
				var se *srclient.Error
				// A topic with nothing to load needs no subject yet.
				if !errors.As(err, &se) || se.Code != 40401 || p.hasUnits(t.Name) {
					return nil, err
				}
				topicGiven = nil
			}
		}
		if err := p.chooseSchema(t.Name, topicGiven, givenName, state, samples); err != nil {
			return nil, err
		}
	}
	if len(gone) > 0 {
		return nil, fmt.Errorf("%w:\n  %s\nrerun with --allow-gaps to continue from the first available offsets; the manifest records the gap", ErrGone, strings.Join(gone, "\n  "))
	}
	if err := l.checkTables(p); err != nil {
		return nil, err
	}
	if err := l.planFieldIDs(p); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Plan) hasUnits(topic string) bool {
	for _, u := range p.Units {
		if u.Topic == topic {
			return true
		}
	}
	return false
}

func setOffset(m map[string]map[int32]int64, topic string, p int32, off int64) {
	if m[topic] == nil {
		m[topic] = map[int32]int64{}
	}
	m[topic][p] = off
}

// matchTopics lists the job's topics. A named topic that does not exist is
// an error; one the job loaded before and that is gone is too, unless the
// job matches by regex only.
func (l *Loader) matchTopics(ctx context.Context, spec Spec, state *State) ([]kafkacli.TopicInfo, error) {
	all, err := l.Cluster.Topics(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]kafkacli.TopicInfo{}
	for _, t := range all {
		byName[t.Name] = t
	}
	want := map[string]bool{}
	for _, n := range spec.Topics {
		if _, ok := byName[n]; !ok {
			if _, loaded := state.Offsets[n]; loaded {
				return nil, fmt.Errorf("topic %q %w any more (deleted?); job %q committed offsets %v for it", n, kafkacli.ErrUnknownTopic, spec.Job, state.Offsets[n])
			}
			return nil, fmt.Errorf("topic %q %w", n, kafkacli.ErrUnknownTopic)
		}
		want[n] = true
	}
	if spec.TopicsRegex != "" {
		re := regexp.MustCompile("^(?:" + spec.TopicsRegex + ")$")
		for _, t := range all {
			if !t.Internal && re.MatchString(t.Name) {
				want[t.Name] = true
			}
		}
	}
	var out []kafkacli.TopicInfo
	for n := range want {
		t := byName[n]
		if t.Err != nil {
			return nil, fmt.Errorf("topic %q: %w", n, t.Err)
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		return nil, fmt.Errorf("--topics-regex %q matches no topic", spec.TopicsRegex)
	}
	return out, nil
}

// sampleRecords is how many records of a partition the plan looks at, to
// estimate record sizes and to infer a schema.
const sampleRecords = 200

// sample reads the first records of a partition's range: their values, and
// the average size of a record.
func (l *Loader) sample(ctx context.Context, topic string, partition int32, from int64) ([][]byte, int64, error) {
	var out [][]byte
	var size, n int64
	resp, err := kafkacli.FetchCommitted(ctx, l.Cluster.Client, topic, partition, from, 1<<20, time.Second, func(rec *kafka.Record) error {
		if n >= sampleRecords || rec.Offset < from {
			return nil
		}
		n++
		d, err := toRecord(topic, partition, rec)
		if err != nil {
			return err
		}
		size += int64(len(d.Key)+len(d.Value)) + 70 // a record's framing in a batch
		// Only JSON objects teach inference anything; the bad records
		// among them go to _errors at load time.
		if v := bytes.TrimSpace(d.Value); len(v) > 0 && v[0] == '{' && json.Valid(v) {
			out = append(out, d.Value)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("sampling %s/%d at %d: %w", topic, partition, from, unwrapKafka(err))
	}
	if resp.Err != nil {
		return nil, 0, fmt.Errorf("sampling %s/%d at %d: %w", topic, partition, from, resp.Err)
	}
	if n == 0 {
		return nil, 1024, nil
	}
	return out, size / int64(n), nil
}

// chooseSchema decides the columns of a topic for this run.
func (p *Plan) chooseSchema(topic string, given *schema.Schema, givenName string, state *State, samples [][]byte) error {
	if p.Format == FormatRaw {
		return nil
	}
	old, hadOld := state.Schemas[topic]
	switch {
	case given != nil:
		if hadOld {
			prev, err := schema.Parse([]byte(old))
			if err == nil {
				if err := schema.Check(prev, given, schema.Backward); err != nil {
					return fmt.Errorf("topic %q: %s is not compatible with the schema its files were written with (version %d), so readers of both would break: %w\n(load into a new target or job, or make the change compatible)", topic, givenName, prev.Version, err)
				}
			}
		}
		text, err := schema.Marshal(given)
		if err != nil {
			return err
		}
		p.Schemas[topic] = string(text)
	case hadOld:
		p.Schemas[topic] = old
		p.Inferred[topic] = state.Inferred[topic]
	case len(samples) > 0:
		s, err := schema.InferWith(samples, schema.InferOptions{Name: topic})
		if err != nil {
			return fmt.Errorf("inferring a schema for topic %q from %d records: %w (give one with --schema)", topic, len(samples), err)
		}
		text, err := schema.Marshal(s)
		if err != nil {
			return err
		}
		p.Schemas[topic] = string(text)
		p.Inferred[topic] = true
	}
	return nil
}

// Describe prints the plan's ranges, one line per unit.
func (p *Plan) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s (job %s, %s): %d units, %d records\n", p.Run, p.Job, p.Kind, len(p.Units), p.Records())
	for _, u := range p.Units {
		fmt.Fprintf(&b, "  unit %d\t%s\tpartition %d\toffsets %d to %d\t(%d records)\n", u.Index, u.Topic, u.Partition, u.From, u.To-1, u.To-u.From)
	}
	for _, g := range p.Gaps {
		fmt.Fprintf(&b, "  gap\t%s\tpartition %d\toffsets %d to %d\t%s\n", g.Topic, g.Partition, g.From, g.To-1, g.Reason)
	}
	for t, s := range p.Schemas {
		if p.Inferred[t] {
			fmt.Fprintf(&b, "schema of %s (inferred; save it, edit it and pass it with --schema):\n%s", t, s)
		}
	}
	return b.String()
}

func (p *Plan) save(l *Loader) error {
	b, err := p.marshal()
	if err != nil {
		return err
	}
	return l.FS.WriteFileAtomic(planPath(p.Run), b)
}

// LoadPlan reads a saved plan by run id.
func (l *Loader) LoadPlan(run string) (*Plan, error) {
	b, err := l.FS.ReadFile(planPath(run))
	if err != nil {
		return nil, fmt.Errorf("plan of run %s: %w", run, err)
	}
	return parsePlan(b, fmt.Sprintf("%s/%s", l.FS, planPath(run)))
}
