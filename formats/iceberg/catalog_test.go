package iceberg

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/tributary-io/tributary/internal/fsys"
)

func testSchema(extra ...arrow.Field) *arrow.Schema {
	fs := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "_event_time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	}
	return arrow.NewSchema(append(fs, extra...), nil)
}

// Two committers race for every version: each append lands exactly once,
// and the history is one line of snapshots.
func TestAppendRace(t *testing.T) {
	t.Parallel()
	fs, err := fsys.Open(t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &Catalog{FS: fs}
	const each = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				run := strconv.Itoa(w) + "-" + strconv.Itoa(i)
				_, _, err := c.Append(Append{Dir: "t", Schema: testSchema(), TimeColumn: "_event_time",
					Files:   []NewFile{{Path: "t/data/" + run + ".parquet", Records: 10, Bytes: 100, Hour: 490000}},
					Summary: map[string]string{"tributary.run-id": run}})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	tbl, err := c.Load("t")
	if err != nil {
		t.Fatal(err)
	}
	m := tbl.Metadata
	if len(m.Snapshots) != 2*each || tbl.Version != 2*each+1 {
		t.Fatalf("%d snapshots, version %d; want %d, %d", len(m.Snapshots), tbl.Version, 2*each, 2*each+1)
	}
	runs := map[string]bool{}
	for i, s := range m.Snapshots {
		runs[s.Summary["tributary.run-id"]] = true
		if i > 0 && (s.ParentID == nil || *s.ParentID != m.Snapshots[i-1].ID) {
			t.Fatalf("snapshot %d's parent is not snapshot %d", i, i-1)
		}
	}
	if len(runs) != 2*each || m.Current().Summary["total-records"] != strconv.Itoa(20*each) {
		t.Fatalf("%d distinct runs, total-records %s", len(runs), m.Current().Summary["total-records"])
	}
	meta, err := fs.ReadDir("t/metadata")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range meta {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Fatalf("a losing committer left %s behind", e.Name())
		}
	}
	b, err := fs.ReadFile(c.rel(m.Current().ManifestList))
	if err != nil {
		t.Fatal(err)
	}
	list, err := DecodeManifestList(bytes.NewReader(b))
	if err != nil || len(list) != 2*each {
		t.Fatalf("manifest list: %d manifests, %v", len(list), err)
	}
	mb, err := fs.ReadFile(c.rel(list[0].Path))
	if err != nil {
		t.Fatal(err)
	}
	ents, err := DecodeManifest(bytes.NewReader(mb))
	if err != nil || len(ents) != 1 || fmt.Sprint(ents[0].File.Partition["_event_time_hour"]) != "490000" {
		t.Fatalf("manifest: %+v, %v", ents, err)
	}
}

// A new column gets the next id, old ids stay, a widened type keeps its
// id, and a narrowing to another type stops the append.
func TestEvolve(t *testing.T) {
	t.Parallel()
	s1, last, _, err := Evolve(testSchema(), nil, 0)
	if err != nil || last != 2 {
		t.Fatal(last, err)
	}
	s2, last, changed, err := Evolve(testSchema(arrow.Field{Name: "amount", Type: arrow.PrimitiveTypes.Float32}), s1, last)
	if err != nil || !changed || last != 3 || s2.ID != 1 {
		t.Fatal(last, changed, err)
	}
	a, _ := s2.Field("amount")
	id, _ := s2.Field("id")
	if a.ID != 3 || id.ID != 1 {
		t.Fatalf("ids: amount %d, id %d", a.ID, id.ID)
	}
	wide := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "amount", Type: arrow.PrimitiveTypes.Float64}}, nil)
	s3, last, changed, err := Evolve(wide, s2, last)
	if err != nil || !changed || last != 3 {
		t.Fatal(last, changed, err)
	}
	if f, _ := s3.Field("id"); f.ID != 1 || f.Type.Primitive != "long" {
		t.Fatalf("widened id: %+v", f)
	}
	if _, ok := s3.Field("_event_time"); !ok {
		t.Fatal("a column the data left out was dropped from the table")
	}
	bad := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}, nil)
	if _, _, _, err := Evolve(bad, s3, last); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("long to string: %v", err)
	}
}

// BenchmarkAppend is the latency of one append commit (a manifest, a
// manifest list, the metadata file and the hint) on a local disk, with the
// table's history growing.
func BenchmarkAppend(b *testing.B) {
	fs, err := fsys.Open(b.TempDir(), fsys.Options{})
	if err != nil {
		b.Fatal(err)
	}
	c := &Catalog{FS: fs}
	files := make([]NewFile, 10)
	for i := range files {
		files[i] = NewFile{Path: "t/data/" + strconv.Itoa(i) + ".parquet", Records: 1000, Bytes: 1 << 20, Hour: int32(490000 + i)}
	}
	for b.Loop() {
		if _, _, err := c.Append(Append{Dir: "t", Schema: testSchema(), TimeColumn: "_event_time", Files: files}); err != nil {
			b.Fatal(err)
		}
	}
}

// A committer that died while writing its metadata file left only a
// temporary file: no reader takes it for a version, and the next commit
// takes the number. A version file that does not parse is damage, reported
// and left alone.
func TestDeadCommitter(t *testing.T) {
	t.Parallel()
	fs, err := fsys.Open(t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &Catalog{FS: fs}
	add := func(name string) (*Table, error) {
		tbl, _, err := c.Append(Append{Dir: "t", Schema: testSchema(), TimeColumn: "_event_time",
			Files: []NewFile{{Path: "t/" + name + ".parquet", Records: 1, Bytes: 1, Hour: 1}}})
		return tbl, err
	}
	if _, err := add("a"); err != nil {
		t.Fatal(err)
	}
	w, err := fs.Create("t/metadata/.tmp-dead.metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(`{"format-version": 2, "table-uu`))
	w.Close()
	tbl, err := add("b")
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Version != 3 || len(tbl.Metadata.Snapshots) != 2 {
		t.Fatalf("version %d with %d snapshots, want 3 with 2", tbl.Version, len(tbl.Metadata.Snapshots))
	}
	w, err = fs.Create("t/metadata/v4.metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(`{"format-version": 2, "table-uu`))
	w.Close()
	if _, err := c.Load("t"); err == nil {
		t.Fatal("an unparsable newest version loaded")
	}
	if _, err := add("c"); err == nil {
		t.Fatal("a commit went past an unparsable newest version")
	}
	if b, _ := fs.ReadFile("t/metadata/v4.metadata.json"); len(b) == 0 {
		t.Fatal("the damaged version was moved or emptied")
	}
}
