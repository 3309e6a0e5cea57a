package console

import (
	"errors"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/tributary-io/tributary/formats/iceberg"
	"github.com/tributary-io/tributary/internal/fsys"
)

// readOnlyFS is the lake as the console sees it: every write fails. The
// console only looks, and a reader such as iceberg.Catalog.Load repairs a
// stale version hint when it can; the console must not.
type readOnlyFS struct{ fsys.FS }

var errReadOnly = errors.New("the console reads the lake only")

func (readOnlyFS) Create(string) (io.WriteCloser, error) { return nil, errReadOnly }
func (readOnlyFS) WriteFileAtomic(string, []byte) error  { return errReadOnly }
func (readOnlyFS) Rename(string, string) error           { return errReadOnly }
func (readOnlyFS) RenameNoReplace(string, string) error  { return errReadOnly }
func (readOnlyFS) RemoveAll(string) error                { return errReadOnly }

// lakeTable is an Iceberg table of the lake (a load job with
// table_format: iceberg makes one per topic directory).
type lakeTable struct {
	Dir       string
	Version   int
	Snapshots int
	Updated   time.Time
	// Of the current snapshot: when, which run, and the table's totals.
	Current                    time.Time
	Run                        string
	Records, Files, AddedFiles int64
	Err                        string
}

// tables lists the Iceberg tables at the lake's root, each as of its
// current metadata version.
func (l *lake) tables() ([]lakeTable, error) {
	cat := &iceberg.Catalog{FS: l.fs}
	dirs, err := cat.Tables("")
	if err != nil {
		return nil, err
	}
	sort.Strings(dirs)
	if len(dirs) > lakeTopics {
		dirs = dirs[:lakeTopics]
	}
	var out []lakeTable
	for _, d := range dirs {
		lt := lakeTable{Dir: d}
		t, err := cat.Load(d)
		if err != nil {
			lt.Err = err.Error()
			out = append(out, lt)
			continue
		}
		m := t.Metadata
		lt.Version, lt.Snapshots, lt.Updated = t.Version, len(m.Snapshots), time.UnixMilli(m.LastUpdatedMs)
		if s := m.Current(); s != nil {
			lt.Current = time.UnixMilli(s.TimestampMs)
			lt.Run = s.Summary["tributary.run-id"]
			lt.Records = summaryInt(s.Summary, "total-records")
			lt.Files = summaryInt(s.Summary, "total-data-files")
			lt.AddedFiles = summaryInt(s.Summary, "added-data-files")
		}
		out = append(out, lt)
	}
	return out, nil
}

func summaryInt(m map[string]string, k string) int64 {
	n, err := strconv.ParseInt(m[k], 10, 64)
	if err != nil {
		return -1
	}
	return n
}
