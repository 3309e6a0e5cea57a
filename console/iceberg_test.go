package console

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLakeIceberg: the Pipeline page's lake lists an Iceberg table as of
// its newest metadata version, with its current snapshot's totals, and
// never writes to the lake, not even the stale version hint a committer's
// reader would repair.
func TestLakeIceberg(t *testing.T) {
	dir := t.TempDir()
	meta := filepath.Join(dir, "clicks", "metadata")
	if err := os.MkdirAll(meta, 0o755); err != nil {
		t.Fatal(err)
	}
	version := func(v int, snap string) string {
		return `{"format-version":2,"table-uuid":"u","location":"file:///x/clicks","last-sequence-number":1,"last-updated-ms":1764676800000,
"last-column-id":1,"schemas":[{"schema-id":0,"type":"struct","fields":[{"id":1,"name":"a","required":false,"type":"long"}]}],"current-schema-id":0,
"partition-specs":[{"spec-id":0,"fields":[]}],"default-spec-id":0,"last-partition-id":999,"sort-orders":[],"default-sort-order-id":0` + snap + `}`
	}
	snap := `,"current-snapshot-id":7,"snapshots":[{"snapshot-id":7,"sequence-number":1,"timestamp-ms":1764676800000,"manifest-list":"m.avro",
"summary":{"operation":"append","tributary.run-id":"clicks-lake-run-1","total-records":"42","total-data-files":"3","added-data-files":"3"}}]`
	for f, body := range map[string]string{"v1.metadata.json": version(1, ""), "v2.metadata.json": version(2, snap), "version-hint.text": "1"} {
		if err := os.WriteFile(filepath.Join(meta, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := openLake("file://" + dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.fs.Close()
	v := l.view()
	if len(v.Tables) != 1 {
		t.Fatalf("tables: %+v (warnings %v)", v.Tables, v.Warn)
	}
	tb := v.Tables[0]
	if tb.Dir != "clicks" || tb.Version != 2 || tb.Snapshots != 1 || tb.Run != "clicks-lake-run-1" || tb.Records != 42 || tb.Files != 3 || tb.Err != "" {
		t.Errorf("table: %+v", tb)
	}
	if b, _ := os.ReadFile(filepath.Join(meta, "version-hint.text")); string(b) != "1" {
		t.Errorf("the console rewrote the version hint: %q", b)
	}
	if err := l.fs.WriteFileAtomic("x", []byte("y")); err == nil {
		t.Error("the lake is writable through the console")
	}
}
