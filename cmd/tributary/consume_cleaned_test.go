package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestConsumeCleanedEmptyBatches: the cleaner keeps each producer's last
// batch, emptied of its records, for the producer's sequence. Two
// idempotent producers whose keys a third producer overwrote leave two
// such batches side by side. `tributary consume` reads past them at both
// isolation levels (kafka-go's Reader, which read_uncommitted used,
// panicked on them: kafka-go issue #874).
func TestConsumeCleanedEmptyBatches(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t, "log.cleaner.backoff.ms=100")
	const topic = "cleaned"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	resp, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("1024"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	produce := func(key, value string, opts ...kgo.Opt) {
		t.Helper()
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A record that stays, then two idempotent producers (each client
	// gets its own producer id), one batch each, adjacent.
	produce("0", "kept", kgo.DisableIdempotentWrite())
	produce("a", "a1")
	produce("b", "b1")
	plain, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, kv := range [][2]string{{"a", "a2"}, {"b", "b2"}} {
		if err := plain.ProduceSync(ctx, &kgo.Record{Key: []byte(kv[0]), Value: []byte(kv[1])}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(b.DataDir(), "data", topic+"-0")
	if _, err := os.Stat(dir); err != nil {
		dir = findDir(t, b.DataDir(), topic+"-0")
	}
	// Filler rolls segments, so the first one gets cleaned.
	filler := strings.Repeat("x", 100)
	for i := 0; !adjacentEmptyBatches(dir); i++ {
		if ctx.Err() != nil {
			t.Fatal("the cleaner never left the two producers' batches emptied side by side")
		}
		if err := plain.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint("f", i%4)), Value: []byte(filler)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, iso := range []string{"read_uncommitted", "read_committed"} {
		out := mustRunCLI(t, "", "consume", topic, "--bootstrap", b.Addr(), "--from-beginning", "--count", "3", "--isolation", iso, "-f", `%k=%s\n`)
		if out != "0=kept\na=a2\nb=b2\n" {
			t.Errorf("consume --isolation %s: %q, want 0=kept, a=a2, b=b2", iso, out)
		}
	}
}

// adjacentEmptyBatches reports whether a segment of dir holds two data
// batches with no records one after the other.
func adjacentEmptyBatches(dir string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		prevEmpty := false
		for b, rest, ok := record.Split(data); ok; b, rest, ok = record.Split(rest) {
			empty := !b.Control() && b.RecordCount() == 0
			if empty && prevEmpty {
				return true
			}
			prevEmpty = empty
		}
	}
	return false
}

func findDir(t *testing.T, root, name string) string {
	t.Helper()
	var found string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == name {
			found = p
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no directory %s under %s", name, root)
	}
	return found
}
