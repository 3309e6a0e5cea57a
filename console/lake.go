package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/loader"
)

// The lake is read through internal/fsys (file:// and hdfs://), in the
// loader's on-disk layout (loader/doc.go): the layout is a contract a
// newer loader must keep reading, so the console reads it too, read-only,
// and never through a running loader. The paths below are the loader's.
const (
	lakePlans   = "_tributary/plans"
	lakeRuns    = "_tributary/runs"
	lakeStaging = "_tributary/staging"
	lakeState   = "_tributary/state"
	lakeErrors  = "_errors"
	lakeSuccess = "_SUCCESS"
)

// Bounds of one Pipeline page over the lake: listing an HDFS directory is
// a NameNode call, and a big lake has thousands of hours.
const (
	lakeRunsShown   = 15       // newest runs
	lakeTopics      = 20       // topic directories
	lakeHours       = 24       // newest hours per topic
	lakeFilesShown  = 500      // files on a run's page
	lakeErrorBytes  = 64 << 10 // of an _errors file shown
	lakeMaxPlanSize = 8 << 20  // a plan file read whole
	lakeErrorFiles  = 50
)

type lake struct {
	uri  string
	fs   fsys.FS
	root *os.Root // of a file:// lake, for _errors (lakefile.go)
	// reads bounds the single-file reads (a run's page, an _errors file)
	// running at once; the Pipeline's view is shared (lakecache.go).
	reads chan struct{}
	cache lakeCache
}

func openLake(uri string) (*lake, error) {
	f, err := fsys.Open(uri, fsys.Options{})
	if err != nil {
		return nil, err
	}
	root, err := openRoot(uri)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &lake{uri: uri, fs: readOnlyFS{f}, root: root, reads: make(chan struct{}, lakeReads)}, nil
}

type lakeJob struct {
	Job       string
	Run       string
	Committed time.Time
	Watermark time.Time
	OpenHours int
	Topics    []string // of its offsets: who may see the job (lakeacl.go)
	Err       string
}

type lakeRun struct {
	Run, Job, Kind   string
	Created          time.Time
	Units, UnitsDone int
	Records          int64
	Committed        bool
	CommittedAt      time.Time
	Rows, Bad, Bytes int64
	Files, ErrFiles  int
	Superseded       string
	BrokerCommit     string
	Topics           []string // of its plan's units (lakeacl.go)
	Err              string
}

type lakeHour struct {
	Topic, Dir string
	Complete   bool
	Files      int
	Bytes      int64
}

type lakeErrorFile struct {
	Path  string
	Size  int64
	MTime time.Time
}

type lakeView struct {
	URI    string
	Jobs   []lakeJob
	Runs   []lakeRun
	Hours  []lakeHour
	Errors []lakeErrorFile
	Tables []lakeTable
	Warn   []string
}

func (l *lake) view() lakeView {
	v := lakeView{URI: l.uri}
	warn := func(what string, err error) {
		if err != nil && !fsys.IsNotExist(err) {
			v.Warn = append(v.Warn, what+": "+err.Error())
		}
	}
	states, err := l.fs.ReadDir(lakeState)
	warn("job states", err)
	for _, st := range states {
		job, ok := strings.CutSuffix(st.Name(), ".json")
		if !ok {
			continue
		}
		j := lakeJob{Job: job}
		if s, err := loader.ReadState(l.fs, job); err != nil {
			j.Err = err.Error()
		} else {
			j.Run, j.Committed, j.Watermark, j.OpenHours = s.Run, s.Committed, s.Watermark, len(s.OpenHours)
			for t := range s.Offsets {
				j.Topics = append(j.Topics, t)
			}
		}
		v.Jobs = append(v.Jobs, j)
	}
	plans, err := l.fs.ReadDir(lakePlans)
	warn("runs", err)
	// The newest plans by modification time (a plan is written once, when
	// its run is planned): only those are read, however many runs the
	// lake has kept.
	var recent []fs.FileInfo
	for _, p := range plans {
		if strings.HasSuffix(p.Name(), ".json") && !p.IsDir() {
			recent = append(recent, p)
		}
	}
	sort.Slice(recent, func(i, j int) bool { return recent[i].ModTime().After(recent[j].ModTime()) })
	if len(recent) > lakeRunsShown {
		recent = recent[:lakeRunsShown]
	}
	var rs []lakeRun
	for _, p := range recent {
		r := lakeRun{Run: strings.TrimSuffix(p.Name(), ".json")}
		if p.Size() > lakeMaxPlanSize {
			r.Err = fmt.Sprintf("plan of %d bytes, more than the console reads", p.Size())
		} else {
			r = l.run(r.Run)
		}
		rs = append(rs, r)
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Created.After(rs[j].Created) })
	v.Runs = rs
	v.Hours, err = l.hours()
	warn("lake partitions", err)
	v.Errors, err = l.errorFiles()
	warn("_errors", err)
	v.Tables, err = l.tables()
	warn("Iceberg tables", err)
	return v
}

// run summarizes a run: its plan, and its manifest when committed, else
// how many of its units have a result.
func (l *lake) run(run string) lakeRun {
	r, _ := l.runManifest(run)
	return r
}

// runManifest is run with the manifest it read, nil if none: a run's page
// lists its files without reading the manifest again.
func (l *lake) runManifest(run string) (lakeRun, *loader.Manifest) {
	r := lakeRun{Run: run}
	b, err := l.fs.ReadFile(lakePlans + "/" + run + ".json")
	if err != nil {
		r.Err = err.Error()
		return r, nil
	}
	var p loader.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		r.Err = "plan: " + err.Error()
		return r, nil
	}
	r.Job, r.Kind, r.Created, r.Units, r.Records = p.Job, p.Kind, p.Created, len(p.Units), p.Records()
	seen := map[string]bool{}
	for _, u := range p.Units {
		if !seen[u.Topic] {
			seen[u.Topic] = true
			r.Topics = append(r.Topics, u.Topic)
		}
	}
	if _, err := l.fs.Stat(lakeRuns + "/" + run + "/" + lakeSuccess); err == nil {
		r.Committed = true
		// A manifest lists every file of its run: a big one is not read.
		if st, err := l.fs.Stat(lakeRuns + "/" + run + "/manifest.json"); err == nil && st.Size() > lakeMaxPlanSize {
			r.Err = fmt.Sprintf("manifest of %d bytes, more than the console reads", st.Size())
			return r, nil
		}
		m, err := loader.ReadManifest(l.fs, run)
		if err != nil {
			r.Err = "manifest: " + err.Error()
			return r, nil
		}
		r.UnitsDone, r.CommittedAt = r.Units, m.Committed
		r.Rows, r.Bad, r.Bytes, r.Files, r.ErrFiles = m.Rows, m.Bad, m.Bytes, len(m.Files), len(m.Errors)
		r.Superseded, r.BrokerCommit = m.Superseded, m.BrokerCommit
		return r, m
	}
	units, err := l.fs.ReadDir(lakeStaging + "/" + run)
	if err != nil && !fsys.IsNotExist(err) {
		r.Err = "staging: " + err.Error()
	}
	for _, u := range units {
		if !u.IsDir() || !strings.HasPrefix(u.Name(), "unit-") {
			continue
		}
		files, _ := l.fs.ReadDir(lakeStaging + "/" + run + "/" + u.Name())
		for _, f := range files {
			if strings.HasSuffix(f.Name(), ".done.json") {
				r.UnitsDone++
				break
			}
		}
	}
	return r, nil
}

// hours are the newest event hours of each topic directory, with their
// _SUCCESS marker.
func (l *lake) hours() ([]lakeHour, error) {
	top, err := l.fs.ReadDir(".")
	if err != nil {
		return nil, err
	}
	var out []lakeHour
	topics := 0
	for _, t := range top {
		if !t.IsDir() || strings.HasPrefix(t.Name(), "_") || strings.HasPrefix(t.Name(), ".") {
			continue
		}
		if topics++; topics > lakeTopics {
			break
		}
		days, err := l.fs.ReadDir(t.Name())
		if err != nil {
			return out, err
		}
		n := 0
		for i := len(days) - 1; i >= 0 && n < lakeHours; i-- {
			d := days[i]
			if !d.IsDir() || !strings.HasPrefix(d.Name(), "dt=") {
				continue
			}
			hrs, err := l.fs.ReadDir(t.Name() + "/" + d.Name())
			if err != nil {
				return out, err
			}
			for k := len(hrs) - 1; k >= 0 && n < lakeHours; k-- {
				h := hrs[k]
				if !h.IsDir() || !strings.HasPrefix(h.Name(), "hr=") {
					continue
				}
				dir := t.Name() + "/" + d.Name() + "/" + h.Name()
				lh := lakeHour{Topic: t.Name(), Dir: dir}
				files, err := l.fs.ReadDir(dir)
				if err != nil {
					return out, err
				}
				for _, f := range files {
					switch {
					case f.Name() == lakeSuccess:
						lh.Complete = true
					case strings.HasSuffix(f.Name(), ".parquet"):
						lh.Files++
						lh.Bytes += f.Size()
					}
				}
				out = append(out, lh)
				n++
			}
		}
	}
	return out, nil
}

func (l *lake) errorFiles() ([]lakeErrorFile, error) {
	topics, err := l.fs.ReadDir(lakeErrors)
	if err != nil {
		return nil, err
	}
	var out []lakeErrorFile
	n := 0
	for _, t := range topics {
		if !t.IsDir() {
			continue
		}
		if n++; n > lakeTopics {
			break
		}
		files, err := l.fs.ReadDir(lakeErrors + "/" + t.Name())
		if err != nil {
			return out, err
		}
		for _, f := range files {
			if f.Mode().IsRegular() {
				out = append(out, lakeErrorFile{Path: lakeErrors + "/" + t.Name() + "/" + f.Name(), Size: f.Size(), MTime: f.ModTime()})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MTime.After(out[j].MTime) })
	if len(out) > lakeErrorFiles {
		out = out[:lakeErrorFiles]
	}
	return out, nil
}

type lakeErrorsData struct {
	Path      string
	Lines     []string
	Truncated bool
	Size      int64
}

// lakeErrors shows the start of one _errors file: bad records, a JSON
// object a line, as the loader wrote them.
func (s *Server) lakeErrors(w http.ResponseWriter, r *http.Request) {
	if s.lake == nil {
		s.refuse(w, r, http.StatusNotFound, "no lake: start the console with --lake file:///path or hdfs://namenode/path")
		return
	}
	p := r.URL.Query().Get("file")
	if !strings.HasPrefix(p, lakeErrors+"/") || strings.Contains(p, "..") || strings.Count(p, "/") != 2 {
		s.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("file %q: want _errors/<topic>/<file>", p))
		return
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	ok, err := s.lakeTopicFilter(ctx)
	if err != nil {
		s.refuse(w, r, http.StatusBadGateway, "which topics you may see: "+err.Error())
		return
	}
	if ok != nil && !ok(errorsTopic(p)) {
		s.refuse(w, r, http.StatusForbidden, fmt.Sprintf("file %q: you may not describe topic %q, so not its bad records either", p, errorsTopic(p)))
		return
	}
	select {
	case s.lake.reads <- struct{}{}:
		defer func() { <-s.lake.reads }()
	case <-r.Context().Done():
		return
	}
	f, st, err := s.lake.openRegular(p)
	if err != nil {
		status := http.StatusBadGateway
		switch {
		case fsys.IsNotExist(err) || errors.Is(err, fs.ErrNotExist):
			status = http.StatusNotFound
		case errors.Is(err, errNotRegular):
			status = http.StatusForbidden
		}
		s.refuse(w, r, status, "reading "+p+": "+err.Error())
		return
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, lakeErrorBytes+1))
	if err != nil {
		s.refuse(w, r, http.StatusBadGateway, "reading "+p+": "+err.Error())
		return
	}
	d := lakeErrorsData{Path: p, Size: st.Size()}
	if len(b) > lakeErrorBytes {
		b, d.Truncated = b[:lakeErrorBytes], true
	}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line != "" {
			d.Lines = append(d.Lines, line)
		}
	}
	s.render(w, r, http.StatusOK, "lakeerrors", page{Title: "Bad records " + p, Nav: "pipeline", Data: d})
}

// lakeRunFiles is a run's page: its files, from the manifest.
type lakeRunData struct {
	Run       lakeRun
	Files     []loader.FileEntry
	ErrFiles  []loader.ErrorFile
	Truncated bool
}

func (s *Server) lakeRun(w http.ResponseWriter, r *http.Request) {
	if s.lake == nil {
		s.refuse(w, r, http.StatusNotFound, "no lake: start the console with --lake file:///path or hdfs://namenode/path")
		return
	}
	run := r.PathValue("run")
	if run == "" || strings.ContainsAny(run, "/\\") || strings.Contains(run, "..") {
		s.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("run %q", run))
		return
	}
	st, err := s.lake.fs.Stat(lakePlans + "/" + run + ".json")
	if err != nil {
		s.refuse(w, r, http.StatusNotFound, "run "+run+": no plan")
		return
	}
	if st.Size() > lakeMaxPlanSize {
		s.refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("run %s: plan of %d bytes, more than the console reads", run, st.Size()))
		return
	}
	select {
	case s.lake.reads <- struct{}{}:
		defer func() { <-s.lake.reads }()
	case <-r.Context().Done():
		return
	}
	run1, m := s.lake.runManifest(run)
	d := lakeRunData{Run: run1}
	ctx, cancel := ctxOf(r)
	defer cancel()
	ok, err := s.lakeTopicFilter(ctx)
	if err != nil {
		s.refuse(w, r, http.StatusBadGateway, "which topics you may see: "+err.Error())
		return
	}
	if ok != nil && !allVisible(d.Run.Topics, ok) {
		s.refuse(w, r, http.StatusForbidden, fmt.Sprintf("run %s loaded a topic you may not describe", run))
		return
	}
	if m != nil {
		d.Files, d.ErrFiles = m.Files, m.Errors
	}
	if len(d.Files) > lakeFilesShown {
		d.Files, d.Truncated = d.Files[:lakeFilesShown], true
	}
	s.render(w, r, http.StatusOK, "lakerun", page{Title: "Run " + run, Nav: "pipeline", Data: d})
}

func errorsLink(p string) string { return "/pipeline/errors?file=" + url.QueryEscape(p) }
