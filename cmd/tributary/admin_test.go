package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// An operator turns on debug logging of a running broker, sees debug lines
// appear, and turns it off again, without a restart.
func TestAdminLogLevelOnRunningBroker(t *testing.T) {
	// Tiny segments, so that every produce rolls one: "rolled segment" is
	// a debug line.
	b := testbroker.Start(t, "log.segment.bytes=1024")
	admin := b.AdminAddr()
	produce := func(topic string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for i := range 20 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%0600d", i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cli := func(args ...string) string {
		t.Helper()
		out, _, err := execute(t, newRootCommand(), append(args, "--admin-listen", admin)...)
		if err != nil {
			t.Fatalf("tributary %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(out)
	}

	if got := cli("admin", "health", "--ready"); got != "ready" {
		t.Errorf("admin health --ready: %q", got)
	}
	produce("before")
	if rolled(b.Log(), "before-0") {
		t.Fatal("debug lines logged at the default level info")
	}
	if got := cli("admin", "loglevel", "debug"); got != "debug" {
		t.Fatalf("admin loglevel debug printed %q", got)
	}
	produce("during")
	if !rolled(b.Log(), "during-0") {
		t.Fatalf("no debug line of the produce after the level was set to debug:\n%s", b.Log())
	}
	if got := cli("admin", "loglevel", "info"); got != "info" {
		t.Fatalf("admin loglevel info printed %q", got)
	}
	produce("after")
	if rolled(b.Log(), "after-0") {
		t.Errorf("debug lines logged after the level went back to info:\n%s", b.Log())
	}
	if got := cli("admin", "loglevel"); got != "info" {
		t.Errorf("admin loglevel printed %q, want info", got)
	}
	if _, _, err := execute(t, newRootCommand(), "admin", "loglevel", "chatty", "--admin-listen", admin); err == nil || !strings.Contains(err.Error(), "want debug, info, warn or error") {
		t.Errorf("admin loglevel chatty: %v, want the levels named", err)
	}
}

// rolled says whether the log has the debug line of a segment roll of
// partition.
func rolled(log, partition string) bool {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "rolled segment") && strings.Contains(line, "partition="+partition+" ") {
			return true
		}
	}
	return false
}
