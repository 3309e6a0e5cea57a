package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestTrackerRegistry runs the real broker with its schema registry and
// the real tracker validating against it: a strict and a permissive
// source, a schema with a reference, events valid, invalid and of
// subjects nobody registered. The answers list each refused event with
// the subject and reason; the topic holds exactly the valid events and
// the bad-events topic the refused ones, as sent, with the reasons.
func TestTrackerRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the broker and the tracker")
	}
	t.Parallel()
	regURL := fmt.Sprintf("http://127.0.0.1:%d", testbroker.FreePort(t))
	b := testbroker.Start(t, "schema.registry.listeners="+regURL)

	// The schemas, registered as a producer team would, over the API.
	register := func(subject, body string) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			res, err := http.Post(regURL+"/subjects/"+strings.ReplaceAll(subject, " ", "%20")+"/versions", "application/vnd.schemaregistry.v1+json", strings.NewReader(body))
			if err == nil {
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode == 200 {
					return
				}
				if res.StatusCode != 500 { // 50002 while the registry reads _schemas
					t.Fatalf("register %s: %d %s", subject, res.StatusCode, b)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("register %s: %v", subject, err)
			}
		}
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	register("shop-money", js(map[string]any{"schemaType": "JSON", "schema": `{"type":"object",
		"properties":{"amount":{"type":"number"},"currency":{"enum":["EUR","USD"]}},"required":["amount","currency"]}`}))
	register("shop-Order Completed-value", js(map[string]any{"schemaType": "JSON",
		"references": []map[string]any{{"name": "money.json", "subject": "shop-money", "version": 1}},
		"schema": `{"type":"object","required":["properties"],"properties":{"properties":{"type":"object",
			"properties":{"total":{"$ref":"money.json"},"orderId":{"type":"string"}},"required":["total","orderId"]}}}`}))

	dir := t.TempDir()
	cfg := filepath.Join(dir, "tracker.yaml")
	if err := os.WriteFile(cfg, []byte(`sources:
  - {name: strict, write_key: wk-strict, topic: shop, validate: strict}
  - {name: loose, write_key: wk-loose, topic: shop, validate: permissive}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// startTracker runs `tributary tracker` validating against registry
	// and returns a function that posts to it.
	startTracker := func(registry string) func(path, body string) (int, map[string]any) {
		addr := freeAddr(t)
		var log bytes.Buffer
		var logMu sync.Mutex
		cmd := exec.Command(testbroker.Binary(t), "tracker", "--config", cfg, "--registry", registry, "--listen", addr,
			"--admin-listen", "", "--bootstrap", b.Addr(), "--spool-dir", t.TempDir())
		cmd.Stdout, cmd.Stderr = lockedWriter{&log, &logMu}, lockedWriter{&log, &logMu}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			if t.Failed() {
				logMu.Lock()
				t.Logf("tracker log:\n%s", log.String())
				logMu.Unlock()
			}
		})
		return func(path, body string) (int, map[string]any) {
			t.Helper()
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				res, err := http.Post("http://"+addr+path, "text/plain", strings.NewReader(body))
				if err == nil {
					defer res.Body.Close()
					var ans map[string]any
					if err := json.NewDecoder(res.Body).Decode(&ans); err != nil {
						t.Fatalf("%s: answer not JSON: %v", path, err)
					}
					return res.StatusCode, ans
				}
				if time.Now().After(deadline) {
					t.Fatalf("tracker at %s: %v", addr, err)
				}
			}
		}
	}
	post := startTracker(regURL)
	order := func(id string, total any) string {
		return js(map[string]any{"type": "track", "event": "Order Completed", "userId": "u1", "messageId": id,
			"properties": map[string]any{"orderId": "o-" + id, "total": total}})
	}
	batch := func(key string, events ...string) string {
		return `{"writeKey":"` + key + `","batch":[` + strings.Join(events, ",") + `]}`
	}

	// Strict: a valid order, two invalid ones, an event and a page of
	// subjects with no schema.
	code, ans := post("/v1/batch", batch("wk-strict",
		order("s-ok", map[string]any{"amount": 12.5, "currency": "EUR"}),
		order("s-bad-currency", map[string]any{"amount": 12.5, "currency": "GBP"}),
		order("s-bad-amount", map[string]any{"amount": "12.5", "currency": "USD"}),
		`{"type":"track","event":"Signed Up","userId":"u2","messageId":"s-unregistered"}`,
		`{"type":"page","name":"Home","anonymousId":"a1","messageId":"s-page"}`))
	if code != 200 || ans["accepted"] != 1.0 {
		t.Fatalf("strict batch: %d %v", code, ans)
	}
	rej := map[string]map[string]any{}
	for _, r := range ans["rejected"].([]any) {
		r := r.(map[string]any)
		rej[r["messageId"].(string)] = r
	}
	for id, want := range map[string][2]string{
		"s-bad-currency": {"properties.total.currency", "shop-Order Completed-value"},
		"s-bad-amount":   {"properties.total.amount", "shop-Order Completed-value"},
		"s-unregistered": {"", "shop-Signed Up-value"},
		"s-page":         {"", "shop-page-value"},
	} {
		r := rej[id]
		path, _ := r["path"].(string)
		if r == nil || r["code"] != "registry_schema" || r["subject"] != want[1] || path != want[0] {
			t.Errorf("strict %s: rejection %v, want code registry_schema, path %q, subject %q", id, r, want[0], want[1])
		}
	}
	if r := rej["s-bad-currency"]; r != nil && r["version"] != 1.0 {
		t.Errorf("rejection names version %v, want 1", r["version"])
	}

	// Permissive: what has no schema passes; what has one is checked.
	code, ans = post("/v1/batch", batch("wk-loose",
		`{"type":"track","event":"Signed Up","userId":"u3","messageId":"l-unregistered"}`,
		order("l-bad", map[string]any{"amount": "1"})))
	if code != 200 || ans["accepted"] != 1.0 || len(ans["rejected"].([]any)) != 1 {
		t.Fatalf("permissive batch: %d %v", code, ans)
	}
	// A single call answers 400 with the reason.
	code, ans = post("/v1/track", `{"writeKey":"wk-loose","event":"Order Completed","userId":"u4","messageId":"l-single","properties":{"orderId":7}}`)
	if code != 400 || ans["code"] != "registry_schema" || !strings.Contains(ans["error"].(string), "properties") {
		t.Fatalf("single invalid track: %d %v", code, ans)
	}

	// A registry that cannot be asked: the strict source refuses with a
	// 503 (the sender retries), the permissive one takes the event
	// unchecked.
	down := startTracker(fmt.Sprintf("http://127.0.0.1:%d", testbroker.FreePort(t)))
	if code, ans := down("/v1/batch", batch("wk-strict", order("down-strict", map[string]any{"amount": 1, "currency": "EUR"}))); code != 503 {
		t.Errorf("strict source, registry down: %d %v, want 503", code, ans)
	}
	if code, ans := down("/v1/batch", batch("wk-loose", order("down-loose", "not even an object"))); code != 200 || ans["accepted"] != 1.0 {
		t.Errorf("permissive source, registry down: %d %v, want 200 with the event accepted unchecked", code, ans)
	}

	good := readTopic(t, b.Addr(), "shop", 3)
	for _, id := range []string{"s-ok", "l-unregistered", "down-loose"} {
		if good[id] == nil {
			t.Errorf("event %s not in the topic: %v", id, good)
		}
	}
	if len(good) != 3 {
		t.Errorf("topic shop holds %d events, want the 2 valid ones and the unchecked one: %v", len(good), good)
	}
	bad := readTopic(t, b.Addr(), "shop.bad", 6)
	for _, id := range []string{"s-bad-currency", "s-bad-amount", "s-unregistered", "s-page", "l-bad", "l-single"} {
		e := bad[id]
		if e == nil {
			t.Errorf("refused event %s not in shop.bad", id)
			continue
		}
		errs, _ := e["errors"].([]any)
		if e["code"] != "registry_schema" || len(errs) == 0 || dig(e, "payload", "messageId") != id || e["topic"] != "shop" {
			t.Errorf("bad event %s: %v", id, e)
		}
	}
	// Both violations of one event are reported in the bad record.
	if e := bad["l-bad"]; e != nil && len(e["errors"].([]any)) < 2 {
		t.Errorf("l-bad misses orderId and currency: both should be listed: %v", e["errors"])
	}
	if e := bad["s-page"]; e != nil && dig(e, "payload", "name") != "Home" {
		t.Errorf("the bad record's payload is not the event as sent: %v", e["payload"])
	}
}

// readTopic reads n records of topic from the start and returns their JSON
// values by messageId (of the event, or of the payload of a bad event).
func readTopic(t *testing.T, addr, topic string, n int) map[string]map[string]any {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := map[string]map[string]any{}
	seen := 0
	for seen < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			seen++
			var v map[string]any
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Errorf("%s: record not JSON: %s", topic, r.Value)
				return
			}
			id, _ := v["messageId"].(string)
			if id == "" {
				id, _ = dig(v, "payload", "messageId").(string)
			}
			out[id] = v
		})
	}
	// Anything beyond n arrives within a short poll.
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	cl.PollFetches(short).EachRecord(func(r *kgo.Record) {
		seen++
		out[fmt.Sprintf("extra-%d", seen)] = map[string]any{"raw": string(r.Value)}
	})
	return out
}
