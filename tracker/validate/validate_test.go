package validate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tributary-io/tributary/formats/compat"
	"github.com/tributary-io/tributary/formats/srclient"
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

// Event names are the senders' to choose: unknown ones cost no request
// and no memory, over-long ones are not even looked up, the list of
// subjects is fetched once per TTL, and the cache stays bounded however
// many subjects the registry holds.
func TestCheckerBounds(t *testing.T) {
	const known = "shop-Order Completed-value"
	names := []string{known, strings.Repeat("x", MaxSubjectLen+1)}
	for i := 0; i < maxEntries+100; i++ {
		names = append(names, fmt.Sprintf("shop-e%d-value", i))
	}
	var lists, latests atomic.Int64
	now := time.Unix(1e9, 0)
	c := New(nil, time.Minute)
	c.now = func() time.Time { return now }
	c.listFn = func(context.Context) ([]string, error) { lists.Add(1); return names, nil }
	c.latestFn = func(_ context.Context, subject string) (srclient.Schema, error) {
		latests.Add(1)
		if subject != known {
			return srclient.Schema{}, &srclient.Error{Status: 404, Code: 40401}
		}
		return srclient.Schema{Schema: compat.Schema{Type: compat.JSON, Text: `{"required":["event"]}`}, ID: 1, Version: 1}, nil
	}
	ctx := context.Background()
	for i := 0; i < 1000; i++ {
		v, err := c.Check(ctx, Subject("shop", "track", fmt.Sprintf("unknown %d", i)), []byte(`{}`))
		if err != nil || v.Found {
			t.Fatalf("unknown subject: %+v %v, want not found", v, err)
		}
	}
	if v, err := c.Check(ctx, names[1], []byte(`{}`)); err != nil || v.Found {
		t.Fatalf("over-long subject: %+v %v, want not found", v, err)
	}
	if lists.Load() != 1 || latests.Load() != 0 || len(c.subjects) != 0 {
		t.Fatalf("1001 unknown or over-long subjects: %d listings, %d lookups, %d cached; want 1, 0, 0", lists.Load(), latests.Load(), len(c.subjects))
	}
	for i := 0; i < 2; i++ {
		if v, err := c.Check(ctx, known, []byte(`{}`)); err != nil || !v.Found || len(v.Violations) != 1 {
			t.Fatalf("registered subject: %+v %v, want one violation", v, err)
		}
	}
	if latests.Load() != 1 {
		t.Fatalf("a registered subject checked twice: %d lookups, want 1", latests.Load())
	}
	for _, n := range names[2:] {
		if _, err := c.Check(ctx, n, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.subjects) > maxEntries {
		t.Fatalf("%d subjects cached, want at most %d", len(c.subjects), maxEntries)
	}
	now = now.Add(time.Minute)
	c.Check(ctx, known, []byte(`{}`))
	if lists.Load() != 2 {
		t.Fatalf("after the TTL: %d listings, want 2", lists.Load())
	}
}
