package iceberg

import (
	"errors"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/fsys"
)

// failCreate fails the creation of files whose name has fail in it.
type failCreate struct {
	FS
	fail string
}

func (f failCreate) Create(name string) (io.WriteCloser, error) {
	if strings.Contains(name, f.fail) {
		return nil, errors.New("injected failure creating " + name)
	}
	return f.FS.Create(name)
}

func metadataNames(t *testing.T, fs FS, dir string) []string {
	t.Helper()
	ents, err := fs.ReadDir(dir + "/metadata")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// Review L1: the manifest, manifest list and metadata file of a commit are
// written at once; when one of them fails, the commit's error is returned
// and the others are removed, leaving the metadata directory as it was.
func TestCommitWriteFailureCleansUp(t *testing.T) {
	t.Parallel()
	for _, which := range []string{"snap-", "-m0.avro", ".tmp-"} {
		base, err := fsys.Open(t.TempDir(), fsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := &Catalog{FS: base}
		if _, _, err := c.Append(Append{Dir: "t", Schema: testSchema(), Files: []NewFile{{Path: "t/data/0.parquet", Records: 1, Bytes: 10}}}); err != nil {
			t.Fatal(err)
		}
		before := metadataNames(t, base, "t")
		c.FS = failCreate{base, which}
		_, _, err = c.Append(Append{Dir: "t", Schema: testSchema(), Files: []NewFile{{Path: "t/data/1.parquet", Records: 1, Bytes: 10}}})
		if err == nil || !strings.Contains(err.Error(), "injected failure") {
			t.Fatalf("%s failing: the append returned %v", which, err)
		}
		if after := metadataNames(t, base, "t"); strings.Join(after, " ") != strings.Join(before, " ") {
			t.Errorf("%s failing: the metadata directory went from %v to %v", which, before, after)
		}
	}
}

// Review L5: files written with the field ids of a plan whose new column's
// id another writer took meanwhile are refused at the commit, naming the
// column and both ids, and the table is left as it was.
func TestCommitFieldIDsChanged(t *testing.T) {
	t.Parallel()
	c, _ := localCatalog(t)
	if _, _, err := c.Append(Append{Dir: "t", Schema: strSchema(strField("a")), Files: []NewFile{{Path: "t/data/0.parquet", Records: 1, Bytes: 10}}}); err != nil {
		t.Fatal(err)
	}
	planned := plannedIDs(t, c, "t", strSchema(strField("a"), strField("y"))) // y: id 2
	if _, _, err := c.Append(Append{Dir: "t", Schema: strSchema(strField("a"), strField("z")), Files: []NewFile{{Path: "t/data/1.parquet", Records: 1, Bytes: 10}}}); err != nil {
		t.Fatal(err)
	}
	before, err := c.Load("t")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Append(Append{Dir: "t", Schema: planned, Files: []NewFile{{Path: "t/data/2.parquet", Records: 1, Bytes: 10}}})
	if !errors.Is(err, ErrFieldIDsChanged) || !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "column y was written with field id 2, the table's is 3") {
		t.Fatalf("commit with a taken id: %v", err)
	}
	after, err := c.Load("t")
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != before.Version {
		t.Fatalf("the refused commit changed the table: version %d -> %d", before.Version, after.Version)
	}
}
