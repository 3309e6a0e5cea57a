package iceberg

import (
	"encoding/binary"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// Identity partition fields: the spec, the typed values of each manifest
// entry (a null among them), the manifest list's bounds per field through
// two appends and a manifest rewrite, and the refusals: a file without a
// value, a column of another type, a writer whose columns differ.
func TestIdentityPartitions(t *testing.T) {
	t.Parallel()
	c, _ := localCatalog(t)
	schema := testSchema(arrow.Field{Name: "country", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "shard", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	file := func(name string, hour int32, country any, shard int64) NewFile {
		return NewFile{Path: "t/" + name + ".parquet", Records: 1, Bytes: 1, Hour: hour, Identity: map[string]any{"country": country, "shard": shard}}
	}
	app := func(files ...NewFile) error {
		_, _, err := c.Append(Append{Dir: "t", Schema: schema, TimeColumn: "_event_time", Identity: []string{"country", "shard"}, Files: files})
		return err
	}
	if err := app(file("a", 10, "US", 3), file("b", 10, "DE", 1<<40)); err != nil {
		t.Fatal(err)
	}
	if err := app(file("c", 11, nil, 2), file("d", 9, "FR", 5)); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.Load("t")
	if err != nil {
		t.Fatal(err)
	}
	spec := tbl.Metadata.Spec()
	if len(spec.Fields) != 3 || spec.Fields[1].Name != "country" || spec.Fields[1].Transform != "identity" || spec.Fields[1].FieldID != 1001 ||
		spec.Fields[2].Name != "shard" || tbl.Metadata.LastPartitionID != 1002 {
		t.Fatalf("spec %+v, last partition id %d", spec, tbl.Metadata.LastPartitionID)
	}
	if got := IdentityColumns(spec, tbl.Metadata.CurrentSchema()); strings.Join(got, ",") != "country,shard" {
		t.Fatalf("identity columns %v", got)
	}
	check := func(what string, wantManifests int) {
		t.Helper()
		tbl, err := c.Load("t")
		if err != nil {
			t.Fatal(err)
		}
		mfs, err := c.Manifests(tbl.Metadata.Current())
		if err != nil || len(mfs) != wantManifests {
			t.Fatalf("%s: %d manifests (%v), want %d", what, len(mfs), err, wantManifests)
		}
		byName := map[string]map[string]any{}
		var lo, hi string
		var loShard, hiShard int64
		null := false
		for i, mf := range mfs {
			ents, err := c.Entries(mf)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				byName[e.File.Path[strings.LastIndex(e.File.Path, "/")+1:]] = e.File.Partition
			}
			ps := *mf.Partitions
			if len(ps) != 3 {
				t.Fatalf("%s: manifest %d has %d field summaries", what, i, len(ps))
			}
			if i == 0 || string(*ps[1].Lower) < lo {
				lo = string(*ps[1].Lower)
			}
			if i == 0 || string(*ps[1].Upper) > hi {
				hi = string(*ps[1].Upper)
			}
			l, h := int64(binary.LittleEndian.Uint64(*ps[2].Lower)), int64(binary.LittleEndian.Uint64(*ps[2].Upper))
			if i == 0 || l < loShard {
				loShard = l
			}
			if i == 0 || h > hiShard {
				hiShard = h
			}
			null = null || ps[1].ContainsNull
		}
		if p := byName["b.parquet"]; p["country"] != "DE" || p["shard"] != int64(1<<40) || p["_event_time_hour"] != int32(10) {
			t.Fatalf("%s: b's partition %v", what, p)
		}
		if p := byName["c.parquet"]; p["country"] != nil || p["shard"] != int64(2) {
			t.Fatalf("%s: c's partition %v", what, p)
		}
		if lo != "DE" || hi != "US" || loShard != 2 || hiShard != 1<<40 || !null {
			t.Fatalf("%s: country bounds %q..%q, shard %d..%d, null %v", what, lo, hi, loShard, hiShard, null)
		}
	}
	check("two appends", 2)
	if _, _, err := c.RewriteManifests("t"); err != nil {
		t.Fatal(err)
	}
	check("after a manifest rewrite", 1)

	missing := NewFile{Path: "t/e.parquet", Records: 1, Bytes: 1, Hour: 10, Identity: map[string]any{"country": "US"}}
	if err := app(missing); err == nil || !strings.Contains(err.Error(), "no value for the table's partition field shard") {
		t.Fatalf("a file without a shard value: %v", err)
	}
	if err := CheckIdentity(tbl.Metadata, []string{"country"}); err == nil || !strings.Contains(err.Error(), "identity(country), identity(shard)") {
		t.Fatalf("a writer by country only: %v", err)
	}
	if err := CheckIdentity(tbl.Metadata, []string{"country", "shard"}); err != nil {
		t.Fatal(err)
	}
	ts := testSchema(arrow.Field{Name: "seen", Type: &arrow.TimestampType{Unit: arrow.Microsecond}})
	if _, _, err := c.Append(Append{Dir: "u", Schema: ts, TimeColumn: "_event_time", Identity: []string{"seen"}}); err == nil || !strings.Contains(err.Error(), "string, int, long or boolean") {
		t.Fatalf("identity of a timestamp: %v", err)
	}
}

// pyiceberg prunes by identity values of every type the writer takes: int
// (negative), long (past 2^32, negative), boolean, string (non-ASCII,
// empty) and null, each from the manifest's typed tuple.
func TestIdentityPyiceberg(t *testing.T) {
	t.Parallel()
	c, root := localCatalog(t)
	schema := testSchema(
		arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "big", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true})
	f := func(name string, n, big, flag, s any) NewFile {
		return NewFile{Path: "t/" + name + ".parquet", Records: 1, Bytes: 1, Hour: 10,
			Identity: map[string]any{"n": n, "big": big, "flag": flag, "s": s}}
	}
	_, _, err := c.Append(Append{Dir: "t", Schema: schema, TimeColumn: "_event_time", Identity: []string{"n", "big", "flag", "s"},
		Files: []NewFile{f("a", int64(-5), int64(1<<40), true, "é"), f("b", int64(7), int64(-3), false, ""), f("c", nil, nil, nil, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	py := testbroker.Python(t, "pyiceberg")
	out, err := exec.Command(py, filepath.Join(testbroker.RepoRoot(), "formats", "iceberg", "testdata", "prune_identity.py"), filepath.Join(root, "t")).Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("prune_identity.py: %v\n%s", err, stderr)
	}
	var got map[string][]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := map[string]string{
		"n=-5": "a", "n=7": "b", "n>0": "b", "n null": "c",
		"big=2^40": "a", "big<0": "b",
		"flag=true": "a", "flag=false": "b", "flag null": "c",
		"s=é": "a", "s=''": "b", "s null": "c",
	}
	for k, w := range want {
		if strings.Join(got[k], ",") != w {
			t.Errorf("pyiceberg planned %v for %s; want %s", got[k], k, w)
		}
	}
}
