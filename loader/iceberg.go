package loader

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/tributary-io/tributary/formats/iceberg"
)

// The Iceberg table mode (--table-format iceberg). Each topic is a table in
// the directory <topic> of the target, so the table's data files are the
// Hive-style files the plain mode writes, and each run commits one
// snapshot per table that adds the run's files. The run's commit becomes:
//
//	move the files into place (as in the plain mode)
//	for each topic: append a snapshot to its table, unless a snapshot of
//	                this run is there already             <- table commit
//	write the job's state                                 <- run commit
//
// A crash before a table's commit repeats it; a crash after it (and before
// the state) finds the run's id in the table's snapshot summaries and skips
// it, so every offset is in the table's current snapshot once. The summary
// holds the run's offset ranges per partition and, cumulated over the
// table's history, the next offset of every partition: a table that holds
// offsets past where a run starts (another loader got there first, its
// lease broken) refuses the run instead of loading them twice.
const (
	TableIceberg = "iceberg"
	TableParquet = "parquet"

	// eventTimeColumn is the column every file of a table gets: the event
	// time that placed the row in its hour, the source of the table's
	// hours() partitioning.
	eventTimeColumn = "_event_time"

	// Snapshot summary keys.
	summaryRun    = "tributary.run-id"
	summaryJob    = "tributary.job"
	summaryTopic  = "tributary.topic"
	summaryRanges = "tributary.offsets"      // {"<partition>":[from,to]} of this run
	summaryNext   = "tributary.next-offsets" // {"<partition>":next} cumulated
)

func (s *Settings) validateTable() error {
	switch s.TableFormat {
	case "", TableParquet:
		s.TableFormat = ""
	case TableIceberg:
		if s.Format == FormatRaw {
			return errors.New("--table-format iceberg needs decoded records: not with --format raw")
		}
		loc, _ := time.LoadLocation(s.TimeZone)
		for _, t := range []time.Time{time.Date(2026, 1, 15, 0, 0, 0, 0, loc), time.Date(2026, 7, 15, 0, 0, 0, 0, loc)} {
			if _, off := t.Zone(); off%3600 != 0 {
				return fmt.Errorf("--table-format iceberg: time zone %s is not a whole number of hours from UTC, so its hours are not Iceberg's hours()", s.TimeZone)
			}
		}
	default:
		return fmt.Errorf("--table-format %q: want parquet or iceberg", s.TableFormat)
	}
	c, err := NormalizeCatalog(s.Catalog)
	if err != nil {
		return err
	}
	s.Catalog = c
	if s.Catalog == CatalogHadoop {
		s.Catalog = ""
	}
	if s.Catalog != "" && s.TableFormat != TableIceberg {
		return errors.New("--catalog is for Iceberg tables: use it with --table-format iceberg")
	}
	return s.validatePartitionBy()
}

// tableSchema is the schema of the files of a run: the plain one, with the
// event-time column and the table's field ids (fieldids.go) in the Iceberg
// mode.
func tableSchema(p *Plan, topic string, s *arrow.Schema) *arrow.Schema {
	if p.TableFormat != TableIceberg {
		return s
	}
	md := s.Metadata()
	s = arrow.NewSchema(append(s.Fields(), arrow.Field{Name: eventTimeColumn, Type: eventTimeType, Nullable: true}), &md)
	if ts := p.TableSchemas[topic]; ts != nil {
		s = iceberg.WithFieldIDs(s, ts)
	}
	return s
}

var eventTimeType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// withEventTime appends the event-time column (times are Unix ms), as a
// record of schema, the file's (tableSchema).
func withEventTime(rec arrow.Record, times []int64, schema *arrow.Schema) arrow.Record {
	b := array.NewTimestampBuilder(memory.DefaultAllocator, eventTimeType)
	defer b.Release()
	b.Reserve(len(times))
	for _, ms := range times {
		b.UnsafeAppend(arrow.Timestamp(ms * 1000))
	}
	col := b.NewArray()
	defer col.Release()
	cols := append(append([]arrow.Array{}, rec.Columns()...), col)
	return array.NewRecord(schema, cols, rec.NumRows())
}

// commitTables appends the run's files to the tables of its topics.
func (l *Loader) commitTables(p *Plan, m *Manifest) error {
	if p.TableFormat != TableIceberg {
		return nil
	}
	if p.Kind == "backfill" {
		return l.commitOverwrite(p, m)
	}
	cat, err := l.catalog(p.Catalog)
	if err != nil {
		return err
	}
	starts := p.starts()
	byTopic := map[string][]iceberg.NewFile{}
	for _, f := range m.Files {
		nf, err := newTableFile(f)
		if err != nil {
			return err
		}
		byTopic[f.Topic] = append(byTopic[f.Topic], nf)
	}
	topics := make([]string, 0, len(starts))
	for t := range starts {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, topic := range topics {
		files := byTopic[topic]
		if len(files) == 0 {
			// Only bad records, or a gap: no snapshot, and the next run's
			// ranges start where the state says.
			continue
		}
		schema, err := fileSchema(p, topic)
		if err != nil {
			return err
		}
		ranges := map[string][2]int64{}
		for part, from := range starts[topic] {
			ranges[strconv.Itoa(int(part))] = [2]int64{from, p.Next[topic][part]}
		}
		rj, _ := json.Marshal(ranges)
		start := time.Now()
		var next map[string]int64
		t, snap, err := cat.Append(iceberg.Append{
			Dir: topic, Schema: schema, TimeColumn: eventTimeColumn, Identity: p.PartitionBy, Files: files,
			Summary: map[string]string{summaryRun: p.Run, summaryJob: p.Job, summaryTopic: topic, summaryRanges: string(rj)},
			Done: func(md *iceberg.Metadata) (done bool, err error) {
				if done, next, err = checkTable(md, topic, p.Run, ranges); err != nil || done {
					return done, err
				}
				// Checked at plan time too; this is the table as it is
				// committed on.
				return false, iceberg.CheckIdentity(md, p.PartitionBy)
			},
			SummaryFunc: func(summary map[string]string) {
				cum := map[string]int64{}
				for k, v := range next {
					cum[k] = v
				}
				for part, r := range ranges {
					cum[part] = r[1]
				}
				b, _ := json.Marshal(cum)
				summary[summaryNext] = string(b)
			},
		})
		if err != nil {
			return fmt.Errorf("table %s: %w", topic, err)
		}
		if snap == nil {
			l.log().Info("the table has this run's snapshot already", "table", topic, "run", p.Run, "version", t.Version)
			continue
		}
		l.log().Info("committed a table snapshot", "table", topic, "snapshot", snap.ID, "version", t.Version,
			"files", len(files), "rows", snap.Summary["added-records"], "seconds", since(start))
	}
	return nil
}

// checkTable says whether the table has run's snapshot already, and
// refuses a run whose ranges start below what the table holds: another
// run loaded them. next are the table's next offsets.
func checkTable(md *iceberg.Metadata, topic, run string, ranges map[string][2]int64) (done bool, next map[string]int64, err error) {
	done, next, err = committedBy(md, run)
	if err != nil || done {
		return done, nil, err
	}
	for part, r := range ranges {
		if end, ok := next[part]; ok && end > r[0] {
			return false, nil, fmt.Errorf("table %s already holds partition %s up to offset %d, past this run's start %d: another run loaded it (run %s is superseded)", topic, part, end, r[0], run)
		}
	}
	return false, next, nil
}

// supersededBy is Plan.superseded, then the same question asked of the
// plan's Iceberg tables: a loader that committed a table and died before
// its state (its lease lapsed, a new holder planned from the old state)
// leaves the table ahead of the state. Such a plan is superseded too, and
// state's offsets are advanced to the tables' tributary.next-offsets
// (advanced): closing it without that would leave every later plan
// starting below the table, refused by checkTable, forever.
func (l *Loader) supersededBy(p *Plan, state *State) (by string, advanced bool, err error) {
	if by, stale := p.superseded(state); stale {
		return by, false, nil
	}
	if p.TableFormat != TableIceberg || p.Kind != "load" {
		return "", false, nil
	}
	cat, err := l.catalog(p.Catalog)
	if err != nil {
		return "", false, err
	}
	starts := p.starts()
	topics := make([]string, 0, len(starts))
	for t := range starts {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	ahead := map[string]map[int32]int64{}
	for _, topic := range topics {
		t, err := cat.Load(topic)
		if errors.Is(err, iceberg.ErrNoTable) {
			continue
		}
		if err != nil {
			return "", false, fmt.Errorf("table %s: %w", topic, err)
		}
		done, next, run, err := lineage(t.Metadata, p.Run)
		if err != nil {
			return "", false, fmt.Errorf("table %s: %w", topic, err)
		}
		if done {
			continue // this run committed it: a rerun after a crash
		}
		for part, from := range starts[topic] {
			if end, ok := next[strconv.Itoa(int(part))]; ok && end > from && by == "" {
				by = run
			}
		}
		for k, v := range next {
			part, err := strconv.Atoi(k)
			if err != nil {
				continue
			}
			if cur, ok := state.Offsets[topic][int32(part)]; !ok || v > cur {
				setOffset(ahead, topic, int32(part), v)
			}
		}
	}
	if by == "" {
		return "", false, nil
	}
	if state.Offsets == nil {
		state.Offsets = map[string]map[int32]int64{}
	}
	for t, parts := range ahead {
		for part, v := range parts {
			setOffset(state.Offsets, t, part, v)
		}
	}
	return by, len(ahead) > 0, nil
}

// committedBy says whether the table's current lineage has a snapshot of
// run, and returns the next offsets the newest tributary snapshot records.
func committedBy(md *iceberg.Metadata, run string) (bool, map[string]int64, error) {
	done, next, _, err := lineage(md, run)
	return done, next, err
}

// lineage is committedBy, and the run of the snapshot the next offsets are
// from.
func lineage(md *iceberg.Metadata, run string) (done bool, next map[string]int64, by string, err error) {
	for s := md.Current(); s != nil; {
		if run != "" && s.Summary[summaryRun] == run {
			return true, nil, "", nil
		}
		if v, ok := s.Summary[summaryNext]; ok && next == nil {
			if err := json.Unmarshal([]byte(v), &next); err != nil {
				return false, nil, "", fmt.Errorf("snapshot %d: %s: %w", s.ID, summaryNext, err)
			}
			if by = s.Summary[summaryRun]; by == "" {
				by = fmt.Sprintf("snapshot %d", s.ID)
			}
		}
		if s.ParentID == nil {
			break
		}
		s = md.Snapshot(*s.ParentID)
	}
	return false, next, by, nil
}

// TableOffsets are the next offsets the table of topic records (nil
// without a table or a tributary snapshot), in the Hadoop convention.
func TableOffsets(fs iceberg.FS, topic string) (map[int32]int64, error) {
	return CatalogOffsets(&iceberg.Catalog{FS: fs}, topic)
}

// CatalogOffsets is TableOffsets in any catalog (OpenCatalog).
func CatalogOffsets(cat *iceberg.Catalog, topic string) (map[int32]int64, error) {
	t, err := cat.Load(topic)
	if errors.Is(err, iceberg.ErrNoTable) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	_, next, err := committedBy(t.Metadata, "")
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for k, v := range next {
		p, _ := strconv.Atoi(k)
		out[int32(p)] = v
	}
	return out, nil
}

// fileSchema is the Arrow schema of a topic's files in the plan.
func fileSchema(p *Plan, topic string) (*arrow.Schema, error) {
	dec, err := newDecoder(p, topic)
	if err != nil {
		return nil, err
	}
	if r, ok := dec.(interface{ Release() }); ok {
		defer r.Release()
	}
	return tableSchema(p, topic, outputSchema(dec, false)), nil
}

func init() { iceberg.SetCrashHook(crashPoint) }

// refuseTableBackfill stops a plain backfill of a topic that has an
// Iceberg table before it plans: it would remove files the table's
// snapshots refer to. With --table-format iceberg the backfill is an
// overwrite snapshot of the table (commitOverwrite).
func (l *Loader) refuseTableBackfill(spec Spec) error {
	if spec.TableFormat == TableIceberg {
		return nil
	}
	for _, t := range spec.Topics {
		if hasTableMetadata(l.FS, t) {
			return fmt.Errorf("topic %s has an Iceberg table at %s/%s: a plain backfill would remove files its snapshots refer to; backfill it with --table-format iceberg (an overwrite snapshot)", t, l.FS, t)
		}
	}
	return nil
}

// A backfill of a table (docs/iceberg.md, "Backfill"):
//
//   - it plans from the table's current files, not the directory: the
//     files of the current snapshot whose names (<topic>+<partition>+
//     <first>+<last>[.<tag>].parquet, compactions' included) hold offsets
//     of the range, the range growing to cover them whole as in the plain
//     mode;
//   - its files get names of their own (.b<run>.parquet): the files it
//     replaces stay in place, since earlier snapshots still read them
//     (time travel) until an expiry deletes them;
//   - its table commit is one overwrite snapshot that deletes the rows of
//     its range as the table is then (a compaction since the plan may have
//     merged them with others: those files are rewritten without them)
//     and adds its files; a rerun after a crash finds the snapshot by the
//     run id, as a load's.

// tableFiles are the files of the table's current snapshot that hold
// offsets of the topic's partition, with the bad-record files of have (the
// directory listing: they are not in the table).
func (l *Loader) tableFiles(catalog, topic string, partition int32, have []dataFile) ([]dataFile, error) {
	cat, err := l.catalog(catalog)
	if err != nil {
		return nil, err
	}
	t, err := cat.Load(topic)
	if err != nil {
		return nil, fmt.Errorf("backfilling table %s: %w", topic, err)
	}
	live, err := cat.LiveFiles(t.Metadata.Current())
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", topic, err)
	}
	var out []dataFile
	for _, f := range have {
		if !strings.HasSuffix(f.path, ".parquet") {
			out = append(out, f)
		}
	}
	for _, e := range live {
		if tp, p, first, last, ok := iceberg.OffsetRange(path.Base(e.File.Path)); ok && tp == topic && p == partition {
			out = append(out, dataFile{path: cat.Rel(e.File.Path), first: first, last: last})
		}
	}
	return out, nil
}

// finalPath is where a file of the run goes: its name, but for a
// backfill of a table, tagged with the run so that it never replaces a
// file an earlier snapshot reads.
func (p *Plan) finalPath(name string) string {
	if p.TableFormat != TableIceberg || p.Kind != "backfill" || !strings.HasSuffix(name, ".parquet") {
		return name
	}
	tag := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, p.Run)
	return strings.TrimSuffix(name, ".parquet") + ".b" + tag + ".parquet"
}

// keepsReplaced says whether a file the backfill replaces stays in place:
// a table's data files do (the overwrite snapshot removes them from the
// table; the files go with the snapshots that read them).
func (p *Plan) keepsReplaced(name string) bool {
	return p.TableFormat == TableIceberg && strings.HasSuffix(name, ".parquet")
}

// commitOverwrite commits a backfill's files as one overwrite snapshot of
// its topic's table.
func (l *Loader) commitOverwrite(p *Plan, m *Manifest) error {
	if len(p.Units) == 0 {
		return nil
	}
	topic, part := p.Units[0].Topic, p.Units[0].Partition
	from, to := p.Units[0].From, p.Units[0].To
	for _, u := range p.Units {
		if u.Topic != topic || u.Partition != part {
			return fmt.Errorf("a backfill of a table covers one partition; run %s has %s/%d and %s/%d", p.Run, topic, part, u.Topic, u.Partition)
		}
		from, to = min(from, u.From), max(to, u.To)
	}
	var files []iceberg.NewFile
	for _, f := range m.Files {
		nf, err := newTableFile(f)
		if err != nil {
			return err
		}
		files = append(files, nf)
	}
	schema, err := fileSchema(p, topic)
	if err != nil {
		return err
	}
	rj, _ := json.Marshal(map[string][2]int64{strconv.Itoa(int(part)): {from, to}})
	cat, err := l.catalog(p.Catalog)
	if err != nil {
		return err
	}
	start := time.Now()
	t, snap, err := cat.Rewrite(iceberg.Rewrite{
		Dir: topic, Operation: "overwrite", Add: files, Schema: schema,
		Overwrite: &iceberg.OffsetFilter{Topic: topic, Partition: part, From: from, To: to},
		Summary:   map[string]string{summaryRun: p.Run, summaryJob: p.Job, summaryTopic: topic, summaryRanges: string(rj)},
		Done: func(md *iceberg.Metadata) (bool, error) {
			done, _, err := committedBy(md, p.Run)
			if err != nil || done {
				return done, err
			}
			return false, iceberg.CheckIdentity(md, p.PartitionBy)
		},
	})
	if err != nil {
		return fmt.Errorf("table %s: %w", topic, err)
	}
	if snap == nil {
		l.log().Info("the table has this backfill's snapshot already", "table", topic, "run", p.Run, "version", t.Version)
		return nil
	}
	l.log().Info("committed an overwrite snapshot", "table", topic, "snapshot", snap.ID, "version", t.Version,
		"added", snap.Summary["added-data-files"], "deleted", snap.Summary["deleted-data-files"], "rows", snap.Summary["added-records"], "seconds", since(start))
	return nil
}

// newTableFile is a moved file as a table commit adds it.
func newTableFile(f FileEntry) (iceberg.NewFile, error) {
	if f.Hour%int64(time.Hour/time.Millisecond) != 0 {
		return iceberg.NewFile{}, fmt.Errorf("file %s: its hour does not start on a UTC hour", f.Path)
	}
	return iceberg.NewFile{Path: f.Path, Records: f.Rows, Bytes: f.Bytes, Hour: int32(f.Hour / int64(time.Hour/time.Millisecond)),
		Identity: f.Identity.fields()}, nil
}

// hasTableMetadata says whether the topic's directory has an Iceberg
// table's metadata, kept by either catalog (version-hint.text, or only
// the metadata files a SQL catalog's rows point at).
func hasTableMetadata(fs iceberg.FS, topic string) bool {
	ents, err := fs.ReadDir(topic + "/metadata")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.Name() == "version-hint.text" || strings.HasSuffix(e.Name(), ".metadata.json") && !strings.HasPrefix(e.Name(), ".") {
			return true
		}
	}
	return false
}
