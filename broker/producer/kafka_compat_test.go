package producer

// Apache Kafka's DumpLogSegments reads the producer snapshots we write.
//
// The test writes snapshots with Snapshots.Write (one with producers that use
// every field, including a sequence range that wraps, one empty, one with a
// flipped byte) and runs Kafka 4.4.0's DumpLogSegments on them. Kafka must
// print exactly the producers we wrote (ProducerStateManager.readSnapshot
// checks the version, the schema and the CRC) and must refuse the damaged
// one for its CRC, as we do. The jars come from scripts/kafka-jars.sh or
// TRIBUTARY_KAFKA_LIB; see docs/kafka-reference.md.
//
// DumpLogSegments prints one line per producer (wrapped here):
//
//	Dumping /d/events-0/00000000000000000042.snapshot
//	producerId: 900 producerEpoch: 7 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty
//	  lastTimestamp: 5200 firstSequence: 2147483646 lastSequence: 1 lastOffset: 8 offsetDelta: 3 timestamp: 5200
//
// and, on stderr, "Snapshot is corrupt (CRC is no longer valid). Stored crc:
// ... Computed crc: ..." for a damaged file; it exits 0 either way.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testbroker"
)

func TestKafkaDumpLogSegmentsReadsOurSnapshots(t *testing.T) {
	java, lib := testbroker.KafkaLib(t)
	dir := filepath.Join(t.TempDir(), "events-0")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	snaps, err := OpenSnapshots(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	full := testState(t)
	for _, w := range []struct {
		offset int64
		state  *State
	}{{42, full}, {7, NewState()}, {43, full}} {
		if err := snaps.Write(w.offset, EncodeSnapshot(w.state)); err != nil {
			t.Fatal(err)
		}
	}
	damaged := filepath.Join(dir, SnapshotFileName(43))
	data, err := os.ReadFile(damaged)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-20] ^= 0x40 // inside the last entry's timestamp
	if err := os.WriteFile(damaged, data, 0o644); err != nil {
		t.Fatal(err)
	}

	files := []string{filepath.Join(dir, SnapshotFileName(42)), filepath.Join(dir, SnapshotFileName(7)), damaged}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(java, "-cp", filepath.Join(lib, "*"), "org.apache.kafka.tools.DumpLogSegments", "--files", strings.Join(files, ","))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("DumpLogSegments: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}

	// DumpLogSegments' line for a producer (ProducerStateEntry with its one
	// BatchMetadata, as ProducerStateManager.readSnapshot builds it).
	var want strings.Builder
	fmt.Fprintf(&want, "Dumping %s\n", files[0])
	var pids []int64
	for pid := range full.Producers() {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	for _, pid := range pids {
		e := full.Producers()[pid]
		l := e.last()
		fmt.Fprintf(&want, "producerId: %d producerEpoch: %d coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: %d "+
			"firstSequence: %d lastSequence: %d lastOffset: %d offsetDelta: %d timestamp: %d\n",
			pid, e.Epoch, e.LastTimestamp, l.FirstSeq, l.LastSeq, l.LastOffset, l.LastOffset-l.FirstOffset, e.LastTimestamp)
	}
	fmt.Fprintf(&want, "Dumping %s\n", files[1])
	fmt.Fprintf(&want, "Dumping %s\n", files[2])
	if got := stdout.String(); got != want.String() {
		t.Errorf("DumpLogSegments printed\n%s\nwant\n%s", got, want.String())
	}
	if got := strings.TrimSpace(stderr.String()); !strings.HasPrefix(got, "Snapshot is corrupt (CRC is no longer valid)") || strings.Count(got, "\n") != 0 {
		t.Errorf("DumpLogSegments' stderr: %q, want only its CRC complaint about %s", got, filepath.Base(damaged))
	}
}
