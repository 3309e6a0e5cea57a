package jobs

import (
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
)

// Old records expire by count and by age; the newest always stays.
func TestHistoryExpiry(t *testing.T) {
	fs := leaseFS(t)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i := range 6 {
		r := &Record{Version: RecordVersion, ID: newRecordID(now.Add(time.Duration(i-5) * 24 * time.Hour)), Job: "j", Outcome: Succeeded}
		if err := writeRecord(fs, r); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		ids, err := listRecords(fs, "j")
		if err != nil {
			t.Fatal(err)
		}
		return len(ids)
	}
	if err := expireRecords(fs, "j", 4, 100*24*time.Hour, now); err != nil || count() != 4 {
		t.Fatalf("keep 4: %d left (%v)", count(), err)
	}
	if err := expireRecords(fs, "j", 100, 36*time.Hour, now); err != nil || count() != 2 {
		t.Fatalf("max age 36h: %d left (%v)", count(), err)
	}
	if err := expireRecords(fs, "j", 100, time.Hour, now.Add(1000*time.Hour)); err != nil || count() != 1 {
		t.Fatalf("all expired: %d left, want the newest (%v)", count(), err)
	}
	recs, err := ReadHistory(fs, "j", 0)
	if err != nil || len(recs) != 1 || recs[0].Job != "j" {
		t.Fatalf("history: %v %v", recs, err)
	}
}

func leaseFS(t *testing.T) fsys.FS {
	fs, err := fsys.Open("file://"+t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}
