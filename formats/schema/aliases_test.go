package schema

import (
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
)

// A field's aliases (its former names) survive a round trip through YAML,
// come from Avro's aliases, reach the Arrow field's metadata, and make a
// rename compatible both ways: the table renames the column keeping its
// id (formats/iceberg). A required field renamed without an alias is not.
func TestAliases(t *testing.T) {
	old := fieldsSchema(t, 1, "  - {name: user, type: string}\n")
	renamed := fieldsSchema(t, 2, "  - {name: account, type: string, aliases: [user]}\n")
	if got := renamed.Fields[0].Aliases; len(got) != 1 || got[0] != "user" {
		t.Fatalf("aliases %v, want [user]", got)
	}
	text, err := Marshal(renamed)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(text)
	if err != nil {
		t.Fatalf("%v:\n%s", err, text)
	}
	if got := again.Fields[0].Aliases; len(got) != 1 || got[0] != "user" {
		t.Fatalf("after a round trip, aliases %v:\n%s", got, text)
	}
	a, err := renamed.Arrow()
	if err != nil {
		t.Fatal(err)
	}
	if md := a.Field(0).Metadata; md.FindKey(AliasesKey) < 0 || md.Values()[md.FindKey(AliasesKey)] != "user" {
		t.Fatalf("Arrow metadata %v, want %s=user", md, AliasesKey)
	}
	for _, m := range []Mode{Backward, Forward, Full} {
		if err := Check(old, renamed, m); err != nil {
			t.Errorf("a rename by alias, mode %d: %v", m, err)
		}
	}
	plain := fieldsSchema(t, 2, "  - {name: account, type: string}\n")
	if err := Check(old, plain, Backward); err == nil {
		t.Error("a required field renamed without an alias passed the backward check")
	}

	av, err := avro.Parse(`{"type":"record","name":"r","fields":[{"name":"account","type":"string","aliases":["user"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	fromAvro, err := FromAvro(av, "r", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := fromAvro.Fields[0].Aliases; len(got) != 1 || got[0] != "user" {
		t.Fatalf("from Avro: aliases %v, want [user]", got)
	}

	for _, bad := range []string{"[account]", "[1x]", "user"} {
		_, err := Parse([]byte("name: t\nversion: 1\nfields:\n  - {name: account, type: string, aliases: " + bad + "}\n"))
		if err == nil || !strings.Contains(err.Error(), "alias") {
			t.Errorf("aliases %s: %v, want an error about the alias", bad, err)
		}
	}
}

// Review M3: aliases that make a rename ambiguous are refused when the
// schema is parsed, naming the field and the alias.
func TestAmbiguousAliases(t *testing.T) {
	for _, tc := range []struct{ fields, want string }{
		{"  - {name: a, type: string, aliases: [b]}\n  - {name: b, type: string, aliases: [a]}\n", `alias "b" is the name of another field here`},
		{"  - {name: m, type: string, aliases: [p]}\n  - {name: n, type: string, aliases: [p]}\n", `alias "p" is listed by m too`},
		{"  - {name: r, type: string, aliases: [p]}\n  - {name: p, type: string}\n", `alias "p" is the name of another field here`},
	} {
		_, err := Parse([]byte("name: s\nversion: 1\nfields:\n" + tc.fields))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %s", tc.fields, err, tc.want)
		}
	}
}
