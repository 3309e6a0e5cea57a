package loader_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/loader"
)

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// The bad situations of issue 7 that need no HDFS fault: each is a clear
// error, a non-zero exit, and nothing committed.
func TestLoadFailsClearly(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "events", 2)
	var want produced
	produce(t, b.Addr(), "events", 0, 1000, 0, &want)
	local := t.TempDir()
	base := []string{"load", "run", "--topics", "events", "--schema", activitySchema}

	for _, tc := range []struct {
		name string
		args []string
		want []string // in the message
	}{
		{"namenode down", []string{"-b", b.Addr(), "--target", "hdfs://" + closedAddr(t) + "/lake"}, []string{"NameNode", "connection refused"}},
		{"broker down", []string{"-b", closedAddr(t), "--target", "file://" + local}, []string{"cannot reach a broker"}},
		{"target not writable", []string{"-b", b.Addr(), "--target", "file:///proc/version/lake"}, []string{"/proc/version/lake", "not writable"}},
		{"unknown topic", []string{"-b", b.Addr(), "--target", "file://" + local, "--topics", "nope"}, []string{`"nope"`, "does not exist"}},
		{"bad format", []string{"-b", b.Addr(), "--target", "file://" + local, "--format", "xml"}, []string{`--format "xml"`}},
		{"no target", []string{"-b", b.Addr()}, []string{"--target is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tributary(t, nil, append(append([]string{}, base...), tc.args...)...)
			if err == nil {
				t.Fatalf("exit 0, want a failure:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the message does not say %q:\n%s", w, out)
				}
			}
			if _, err := os.Stat(filepath.Join(local, "_tributary", "state")); err == nil {
				t.Errorf("something was committed")
			}
		})
	}
}

// Retention passed the committed offset: the run stops, naming the first
// offset still available; with --allow-gaps it continues from there and
// the manifest records the gap.
func TestLoadRetentionGap(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "events", 1)
	var want produced
	produce(t, b.Addr(), "events", 0, 1000, 0, &want)
	target := "file://" + t.TempDir()
	args := []string{"load", "run", "-b", b.Addr(), "--topics", "events", "--schema", activitySchema, "--target", target}
	if out, err := tributary(t, nil, args...); err != nil {
		t.Fatalf("first load: %v\n%s", err, out)
	}
	produce(t, b.Addr(), "events", 1000, 1000, 0, &want)
	// Records 1000 to 1499 go before the loader sees them.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "events", Partition: 0, At: 1500})
	if resp, err := adm.DeleteRecords(context.Background(), offs); err != nil || resp.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, resp.Error())
	}

	out, err := tributary(t, nil, args...)
	if err == nil || !strings.Contains(out, "the first available is 1500") || !strings.Contains(out, "--allow-gaps") {
		t.Fatalf("want a failure naming offset 1500 and --allow-gaps, got %v:\n%s", err, out)
	}
	out, err = tributary(t, nil, append(args, "--allow-gaps")...)
	if err != nil {
		t.Fatalf("with --allow-gaps: %v\n%s", err, out)
	}
	if !strings.Contains(out, "gap: events/0 offsets 1000 to 1499") {
		t.Errorf("the run does not report the gap:\n%s", out)
	}
	fs, err := fsys.Open(target, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := (&loader.Loader{FS: fs}).LatestManifest(loader.DefaultJob)
	if err != nil || m == nil || len(m.Gaps) != 1 || m.Gaps[0].From != 1000 || m.Gaps[0].To != 1500 {
		t.Fatalf("manifest gaps: %+v (%v)", m, err)
	}
	if m.Rows != 500 {
		t.Errorf("loaded %d rows after the gap, want 500", m.Rows)
	}
}

// A topic the job loaded and that was deleted since is reported with the
// offsets the job had committed, not silently dropped.
func TestLoadDeletedTopic(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "gone", 1)
	var want produced
	produce(t, b.Addr(), "gone", 0, 100, 0, &want)
	target := "file://" + t.TempDir()
	args := []string{"load", "run", "-b", b.Addr(), "--topics", "gone", "--schema", activitySchema, "--target", target}
	if out, err := tributary(t, nil, args...); err != nil {
		t.Fatalf("first load: %v\n%s", err, out)
	}
	if out, err := tributary(t, nil, "topic", "delete", "gone", "-b", b.Addr()); err != nil {
		t.Fatalf("topic delete: %v\n%s", err, out)
	}
	out, err := tributary(t, nil, args...)
	if err == nil || !strings.Contains(out, `topic "gone" does not exist any more`) || !strings.Contains(out, "0:100") {
		t.Fatalf("want an error naming the deleted topic and its committed offsets, got %v:\n%s", err, out)
	}
}
