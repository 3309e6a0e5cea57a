package dump

// TestSameOutputAsKafka runs Apache Kafka's own DumpLogSegments (4.4.0, from
// scripts/kafka-jars.sh or TRIBUTARY_KAFKA_LIB) and Run on the same files and
// wants the same stdout, line for line: operators and scripts that know
// kafka-dump-log.sh read ours the same way. Without Java or the jars it is
// skipped, except under CI, where it fails.

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/testbroker"
)

func TestSameOutputAsKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	java, lib := testbroker.KafkaLib(t)

	// Segment 0: every kind of batch the text format distinguishes.
	// Segment 100: the consistent segment with index entries.
	s := writeSegment(t)
	dir := s.dir
	idem := simpleBatch(0, 1000, 2)
	idem.records[1].key = nil
	idem.records[1].headers = []kmsg.Header{{Key: "h1", Value: []byte("v")}, {Key: "h2"}}
	idem.pid, idem.seq = 7, 1<<31-1
	zstd := simpleBatch(2, 2000, 3)
	zstd.codec, zstd.attrs = record.CodecZstd, 0x40
	gzip := simpleBatch(5, 2500, 2)
	gzip.codec = record.CodecGzip
	appendTime := simpleBatch(7, 3000, 2)
	appendTime.attrs, appendTime.maxTs = 0x08, 9999
	marker := testBatch{base: 9, ts: 4000, attrs: 0x30, pid: 7, seq: -1,
		records: []testRecord{{key: []byte{0, 0, 0, 1}, value: []byte{0, 0, 0, 0, 0, 5}}}}
	var data []byte
	for _, b := range []testBatch{idem, zstd, gzip, appendTime, marker} {
		data = append(data, b.encode(t)...)
	}
	files := []string{segName(dir, 0, LogSuffix), segName(dir, 0, IndexSuffix), segName(dir, 0, TimeIndexSuffix), s.log, s.index, s.timeidx}
	writeFile(t, files[0], data)
	writeFile(t, files[1], nil)
	writeFile(t, files[2], nil)

	conf := filepath.Join(t.TempDir(), "log4j2.properties")
	writeFile(t, conf, []byte("status = error\nrootLogger.level = OFF\n"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile="+conf, "-cp", filepath.Join(lib, "*"),
		"org.apache.kafka.tools.DumpLogSegments", "--print-data-log", "--files", strings.Join(files, ","))
	var kout, kerr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &kout, &kerr
	if err := cmd.Run(); err != nil {
		t.Fatalf("DumpLogSegments: %v\n%s", err, kerr.String())
	}
	out, errOut, err := run(t, Options{PrintData: true, Verify: true}, files...)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}

	if n := strings.Count(kout.String(), "\n| offset: "); n != 10+18 {
		t.Errorf("Kafka printed %d records, want 28:\n%s", n, kout.String())
	}
	want := strings.Split(kout.String(), "\n")
	got := strings.Split(out, "\n")
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("line %d:\nkafka: %s\nours:  %s", i+1, w, g)
		}
	}
	if t.Failed() {
		t.Logf("kafka stderr:\n%s", kerr.String())
	}
}
