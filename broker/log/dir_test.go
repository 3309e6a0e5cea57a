package log

import (
	"os"
	"path/filepath"
	"testing"
)

// A clean Close leaves the marker and checkpoints that let the next start
// skip recovery; the marker is gone as soon as the dir is open again, so a
// crash from then on is recovered.
func TestDirCheckpointsAndCleanShutdown(t *testing.T) {
	path := t.TempDir()
	cfg := DefaultDirConfig(path)
	cfg.Defaults.SegmentBytes = 1000
	d, err := OpenDir(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tps := []TopicPartition{{"page-views", 0}, {"page-views", 1}, {"my-topic-with-dashes", 12}}
	for i, tp := range tps {
		l, err := d.Create(tp, cfg.Defaults)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j <= i*3; j++ {
			if _, err := l.AppendAsLeader(testBatch(t, 10, 20, 1000, "none"), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	l, _ := d.Log(tps[2])
	if err := l.DeleteRecordsBefore(25); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path, CleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker after Close: %v", err)
	}
	rec, err := ReadOffsetCheckpoint(filepath.Join(path, RecoveryPointFile))
	if err != nil {
		t.Fatal(err)
	}
	starts, err := ReadOffsetCheckpoint(filepath.Join(path, LogStartOffsetFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, tp := range tps {
		if want := int64(10 * (i*3 + 1)); rec[tp] != want {
			t.Errorf("recovery point of %s = %d, want %d", tp, rec[tp], want)
		}
	}
	if starts[tps[2]] != 25 {
		t.Errorf("log start of %s = %d, want 25", tps[2], starts[tps[2]])
	}

	d, err = OpenDir(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path, CleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatalf("clean-shutdown marker still present while the dir is open (err %v)", err)
	}
	if got := len(d.Logs()); got != len(tps) {
		t.Fatalf("reopened %d logs, want %d", got, len(tps))
	}
	l, _ = d.Log(tps[2])
	if l.LogStartOffset() != 25 || l.LogEndOffset() != 70 {
		t.Fatalf("%s reopened with [%d, %d), want [25, 70)", tps[2], l.LogStartOffset(), l.LogEndOffset())
	}
	if err := d.Delete(tps[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path, tps[0].String())); !os.IsNotExist(err) {
		t.Fatalf("deleted partition's directory remains (err %v)", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestParseDirName(t *testing.T) {
	for name, want := range map[string]TopicPartition{
		"events-0": {"events", 0}, "a-b-c-17": {"a-b-c", 17}, "__consumer_offsets-49": {"__consumer_offsets", 49},
	} {
		got, err := ParseDirName(name)
		if err != nil || got != want {
			t.Errorf("ParseDirName(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	for _, bad := range []string{"events", "-1", "events-x", "events-1x"} {
		if _, err := ParseDirName(bad); err == nil {
			t.Errorf("ParseDirName(%q) accepted", bad)
		}
	}
}
