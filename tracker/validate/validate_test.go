package validate

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tributary-io/tributary/formats/compat"
)

func TestSubject(t *testing.T) {
	for _, c := range [][4]string{
		{"shop", "track", "Order Completed", "shop-Order Completed-value"},
		{"shop", "page", "", "shop-page-value"},
		{"shop", "identify", "ignored", "shop-identify-value"},
	} {
		if got := Subject(c[0], c[1], c[2]); got != c[3] {
			t.Errorf("Subject(%q, %q, %q) = %q, want %q", c[0], c[1], c[2], got, c[3])
		}
	}
}

// check validates event against s as Check does once the schema is
// fetched.
func check(t *testing.T, s compat.Schema, event string) []Violation {
	t.Helper()
	sch, err := compile("shop-Order Completed-value", s)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(event)))
	if err != nil {
		t.Fatal(err)
	}
	var ve *jsonschema.ValidationError
	if err := sch.Validate(inst); errors.As(err, &ve) {
		return violations(ve, nil)
	}
	return nil
}

// A reference resolves by its name, every leaf failure is reported with
// its dotted path, and a schema cannot make the tracker fetch anything.
func TestCompileAndViolations(t *testing.T) {
	money := compat.Ref{Name: "money.json", Text: `{"type":"object","properties":{"amount":{"type":"number"},"currency":{"enum":["EUR","USD"]}},"required":["amount","currency"]}`}
	s := compat.Schema{Type: compat.JSON, Refs: []compat.Ref{money},
		Text: `{"properties":{"properties":{"properties":{"total":{"$ref":"money.json"},"orderId":{"type":"string"}},"required":["orderId"]}}}`}
	if v := check(t, s, `{"properties":{"orderId":"o1","total":{"amount":1,"currency":"EUR"}}}`); len(v) != 0 {
		t.Fatalf("valid event refused: %v", v)
	}
	v := check(t, s, `{"properties":{"total":{"amount":"1","currency":"GBP"}}}`)
	got := fmt.Sprint(v)
	for _, want := range []string{"{properties missing property 'orderId'}", "properties.total.amount", "properties.total.currency"} {
		if !bytes.Contains([]byte(got), []byte(want)) {
			t.Errorf("violations %s lack %q", got, want)
		}
	}
	for _, ref := range []string{"https://example.com/s.json", "file:///etc/passwd", "other.json"} {
		if _, err := compile("s", compat.Schema{Text: `{"$ref":"` + ref + `"}`}); err == nil {
			t.Errorf("$ref %s compiled: it must not be fetched", ref)
		}
	}
	// Without $schema, draft-07: "dependencies" works, 2020-12's
	// dependentRequired does not exist.
	d7 := compat.Schema{Text: `{"dependencies":{"a":["b"]}}`}
	if v := check(t, d7, `{"a":1}`); len(v) != 1 {
		t.Errorf("draft-07 dependencies not applied: %v", v)
	}
}
