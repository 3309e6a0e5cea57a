package iceberg

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Expiry deletes only the table's own data and manifest files (review 2):
// entries of an expired snapshot that name the warehouse root, another
// table, the loader's _tributary, a directory of the table or a hidden
// file are reported as skipped, and all of them are still there.
func TestExpireDeletesOnlyTableFiles(t *testing.T) {
	t.Parallel()
	c, root := localCatalog(t)
	smallTable(t, c, "t", 2, 3, 2)
	mustWrite := func(rel string) {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite("other/dt=2025-11-24/hr=16/other+0+0+9.parquet")
	mustWrite("_tributary/state/job.json")
	mustWrite("t/dt=2025-11-24/hr=16/_SUCCESS")
	mustWrite("t/dt=2025-11-24/hr=16/.hidden.parquet")
	hostile := []NewFile{
		{Path: "", Records: 1, Bytes: 1, Hour: baseHour},                              // the warehouse root
		{Path: "other", Records: 1, Bytes: 1, Hour: baseHour},                         // another table
		{Path: "other/dt=2025-11-24/hr=16/other+0+0+9.parquet", Records: 1, Bytes: 1}, // another table's file
		{Path: "_tributary", Records: 1, Bytes: 1, Hour: baseHour},                    // the loader's state
		{Path: "t/dt=2025-11-24", Records: 1, Bytes: 1, Hour: baseHour},               // a directory of the table
		{Path: "t/../_tributary/state/job.json", Records: 1, Bytes: 1, Hour: baseHour},
		{Path: "t/dt=2025-11-24/hr=16/.hidden.parquet", Records: 1, Bytes: 1, Hour: baseHour},
		{Path: "t/dt=2025-11-24/hr=16/_SUCCESS", Records: 1, Bytes: 1, Hour: baseHour},
	}
	if _, _, err := c.Append(Append{Dir: "t", Schema: smallSchema, Files: hostile}); err != nil {
		t.Fatal(err)
	}
	var del []string
	for _, f := range hostile {
		del = append(del, c.Location(f.Path))
	}
	// A later snapshot drops them, so expiring the earlier ones makes them
	// unreachable: what expiry would delete.
	if _, _, err := c.Rewrite(Rewrite{Dir: "t", Operation: "overwrite", Delete: del}); err != nil {
		t.Fatal(err)
	}
	later := *c
	later.Now = func() time.Time { return time.Now().Add(time.Hour) }
	res, err := later.ExpireSnapshots("t", Expire{MaxAge: time.Minute, MinKeep: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Expired) == 0 || len(res.Skipped) != len(hostile) {
		t.Fatalf("expired %v, skipped %d: %v; want %d skipped", res.Expired, len(res.Skipped), res.Skipped, len(hostile))
	}
	for _, p := range []string{"other/dt=2025-11-24/hr=16/other+0+0+9.parquet", "_tributary/state/job.json",
		"t/dt=2025-11-24/hr=16/_SUCCESS", "t/dt=2025-11-24/hr=16/.hidden.parquet", "t/metadata/v1.metadata.json"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Fatalf("expiry deleted %s: %v", p, err)
		}
	}
	// What the table itself wrote is still deleted: the expired manifest
	// lists.
	if len(res.Deleted) == 0 {
		t.Fatalf("expiry deleted nothing of the table's own: %+v", res)
	}
}
