package iceberg

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/tributary-io/tributary/internal/fsys"
)

func strField(name string, aliases ...string) arrow.Field {
	f := arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}
	if len(aliases) > 0 {
		f.Metadata = arrow.NewMetadata([]string{AliasesKey}, []string{strings.Join(aliases, ",")})
	}
	return f
}

func strSchema(fs ...arrow.Field) *arrow.Schema { return arrow.NewSchema(fs, nil) }

// A column's former name taken by a new column (an older producer's
// schema, a backfill on the old schema) is refused, naming both: the name
// mapping would give the name to two ids, which Iceberg's Java readers
// refuse to parse, and files written before the ids would read as the new
// column.
func TestEvolveFormerName(t *testing.T) {
	t.Parallel()
	fs, err := fsys.Open(t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &Catalog{FS: fs}
	app := func(run string, s *arrow.Schema) error {
		_, _, err := c.Append(Append{Dir: "t", Schema: s,
			Files:   []NewFile{{Path: "t/data/" + run + ".parquet", Records: 1, Bytes: 10}},
			Summary: map[string]string{"tributary.run-id": run}})
		return err
	}
	if err := app("1", strSchema(strField("user"), strField("x"))); err != nil {
		t.Fatal(err)
	}
	if err := app("2", strSchema(strField("account", "user"), strField("x"))); err != nil {
		t.Fatal(err)
	}
	before, err := c.Load("t")
	if err != nil {
		t.Fatal(err)
	}
	err = app("3", strSchema(strField("user"), strField("x")))
	if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "column user was renamed to account (field id 1)") {
		t.Fatalf("a new column named like the renamed column's former name: %v, want ErrIncompatible naming user and account", err)
	}
	after, err := c.Load("t")
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != before.Version {
		t.Fatalf("the refused append changed the table: version %d -> %d", before.Version, after.Version)
	}
	// The plan-time check (the loader's) refuses it too.
	if _, _, _, err := EvolveTable(strSchema(strField("user")), after.Metadata); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("EvolveTable: %v", err)
	}
	// Writing the renamed column under its old name, by alias, is fine.
	if err := app("4", strSchema(strField("user", "account"), strField("x"))); err != nil {
		t.Fatalf("renaming account back to user: %v", err)
	}
	tb, _ := c.Load("t")
	if f, _ := tb.Metadata.CurrentSchema().Field("user"); f.ID != 1 {
		t.Fatalf("renamed back, user has id %d, want 1", f.ID)
	}

	// A mapping that would name two ids alike is never written.
	s := &Schema{Fields: []Field{{ID: 1, Name: "account", Type: Type{Primitive: "string"}}, {ID: 3, Name: "user", Type: Type{Primitive: "string"}}}}
	if _, err := nameMapping(s, `[{"field-id":1,"names":["account","user"]}]`); err == nil || !strings.Contains(err.Error(), "field ids 1 and 3") {
		t.Fatalf("nameMapping with user under ids 1 and 3: %v", err)
	}
}

// Renames that could mean two things are refused: which column's id a
// field takes decides what its old files read as, for good.
func TestEvolveAmbiguousAliases(t *testing.T) {
	t.Parallel()
	base, last, _, err := Evolve(strSchema(strField("p"), strField("q")), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data *arrow.Schema
		want string
	}{
		{"swap", strSchema(strField("p", "q"), strField("q", "p")), "field p lists q in its aliases, but the data has a field q too"},
		{"two fields alias one name", strSchema(strField("m", "p"), strField("n", "p"), strField("q")), "fields m and n both list p"},
		{"alias of a field still there", strSchema(strField("r", "p"), strField("p"), strField("q")), "field r lists p in its aliases, but the data has a field p too"},
	} {
		_, _, _, err := Evolve(tc.data, base, last)
		if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrIncompatible: ...%s...", tc.name, err, tc.want)
		}
	}

	// An alias naming a column by a name from two renames ago finds it
	// through the name mapping.
	fs, err := fsys.Open(t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &Catalog{FS: fs}
	for i, s := range []*arrow.Schema{
		strSchema(strField("a")),
		strSchema(strField("b", "a")),
		strSchema(strField("c", "a")),
	} {
		if _, _, err := c.Append(Append{Dir: "t", Schema: s, Files: []NewFile{{Path: "t/data/x.parquet", Records: 1, Bytes: 10}}}); err != nil {
			t.Fatalf("schema %d: %v", i, err)
		}
	}
	tb, err := c.Load("t")
	if err != nil {
		t.Fatal(err)
	}
	if cur := tb.Metadata.CurrentSchema(); len(cur.Fields) != 1 || cur.Fields[0].Name != "c" || cur.Fields[0].ID != 1 {
		t.Fatalf("a -> b, then c aliases [a]: schema %+v, want c with id 1 alone", cur.Fields)
	}
}
