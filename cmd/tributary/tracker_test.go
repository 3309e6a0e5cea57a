package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/tracker/collect"
)

func TestTrackerRefusesWithoutWriteKey(t *testing.T) {
	_, _, err := execute(t, newRootCommand(), "tracker", "--admin-listen", "")
	if err == nil || !strings.Contains(err.Error(), "no write key configured") || !strings.Contains(err.Error(), "--write-key KEY") {
		t.Fatalf("err = %v", err)
	}
}

func TestTrackerConfigFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tracker.yaml")
	os.WriteFile(file, []byte(`topic: site
ip: keep
trusted:
  proxies: [10.0.0.0/8, 192.168.1.1]
sources:
  - name: website
    write_key: wk1
    types: [page, track]
    cors_origins: ["https://www.example.com"]
    send_invalid: true
  - write_key: wk2
    topic: backend
limits: {event_bytes: 1000, batch_bytes: 10000}
dedup: {enabled: false}
privacy: {gpc: true, action: strip}
timeouts: {read_header: 2s}
`), 0o644)
	var (
		cfg collect.Config
		o   trackerOptions
	)
	root := newRootCommand()
	root.RemoveCommand(findCommand(root, "tracker"))
	root.AddCommand(trackerCommand(func(_ *cobra.Command, c collect.Config, opts *trackerOptions) error {
		cfg, o = c, *opts
		return nil
	}))
	if _, _, err := execute(t, root, "--config", file, "tracker", "--write-key", "cli", "--send-invalid"); err != nil {
		t.Fatal(err)
	}
	if o.topic != "site" || o.ip != "keep" || len(o.trustedProxies) != 2 {
		t.Fatalf("flags from the file: topic %q ip %q proxies %v", o.topic, o.ip, o.trustedProxies)
	}
	if len(cfg.Sources) != 3 {
		t.Fatalf("%d sources", len(cfg.Sources))
	}
	cli, web, back := cfg.Sources[0], cfg.Sources[1], cfg.Sources[2]
	if cli.Topic != "site" || cli.InvalidTopic != "site.invalid" || cli.WriteKey != "cli" {
		t.Errorf("cli source %+v", cli)
	}
	if web.Name != "website" || web.Topic != "site" || web.InvalidTopic != "site.invalid" || len(web.Types) != 2 || web.CORSOrigins[0] != "https://www.example.com" {
		t.Errorf("website source %+v", web)
	}
	if back.Name != "source-2" || back.Topic != "backend" || back.InvalidTopic != "" {
		t.Errorf("backend source %+v", back)
	}
	if cfg.MaxEventBytes != 1000 || cfg.MaxBatchBytes != 10000 || !cfg.DedupDisabled || !cfg.HonorGPC || cfg.PrivacyAction != "strip" || cfg.ReadHeaderTimeout != 2*time.Second {
		t.Errorf("config %+v", cfg)
	}
	if len(cfg.TrustedProxies) != 2 || cfg.TrustedProxies[1].String() != "192.168.1.1/32" {
		t.Errorf("proxies %v", cfg.TrustedProxies)
	}
}

// The command end to end against the real broker: an event posted to the
// tracker is in the topic, enriched and keyed.
func TestTrackerToBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	b := testbroker.Start(t)
	if _, errOut, err := runKafkaCmd(t, "", "topic", "create", "events", "-p", "1", "--bootstrap", b.Addr()); err != nil {
		t.Fatalf("topic create: %v %s", err, errOut)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		root := newRootCommand()
		root.SetArgs([]string{"tracker", "--write-key", "k1", "--listen", addr, "--bootstrap", b.Addr(), "--admin-listen", "", "--spool-dir", t.TempDir()})
		done <- root.ExecuteContext(ctx)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("tracker: %v", err)
		}
	}()
	var res *http.Response
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/track", strings.NewReader(`{"userId":"u-1","event":"Signed Up","messageId":"m-1"}`))
		req.SetBasicAuth("k1", "")
		req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0")
		if res, err = http.DefaultClient.Do(req); err == nil {
			break
		}
	}
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("POST: %v %v", res, err)
	}
	res.Body.Close()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr()}, Topic: "events", MaxWait: 100 * time.Millisecond})
	defer r.Close()
	rctx, rcancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer rcancel()
	m, err := r.ReadMessage(rctx)
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	json.Unmarshal(m.Value, &ev)
	if string(m.Key) != "u-1" || ev["messageId"] != "m-1" || ev["context"].(map[string]any)["ip"] != "127.0.0.0" || ev["context"].(map[string]any)["browser"].(map[string]any)["name"] != "Firefox" {
		t.Fatalf("record key %q value %s", m.Key, m.Value)
	}
}

// findCommand is root's first subcommand named name.
func findCommand(root *cobra.Command, name string) *cobra.Command {
	for _, c := range root.Commands() {
		if c.Name() == name {
			return c
		}
	}
	return nil
}
