package log

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// Checkpoint files are Kafka's plain-text format, so Kafka's tools and
// operators' habits carry over:
//
//	0                  version, always 0
//	2                  number of entries
//	events 0 1200      one entry a line, fields separated by one space
//	events 1 1187
//
// Offset checkpoints of a log dir (recovery-point-offset-checkpoint,
// log-start-offset-checkpoint, replication-offset-checkpoint) have entries
// "topic partition offset"; a partition's leader-epoch-checkpoint has
// "epoch startOffset". A reader refuses any other version, and a file whose
// entry count disagrees with its lines, rather than guess.
const checkpointVersion = 0

// ErrCorruptCheckpoint is a checkpoint file that does not parse.
var ErrCorruptCheckpoint = errors.New("broker/log: corrupt checkpoint file")

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.Itoa(int(tp.Partition))
}

// writeCheckpoint replaces path atomically: a crash leaves the old file or the
// new one, never a mix.
func writeCheckpoint(path string, lines []string, sync bool) error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		buf.WriteString(l)
		buf.WriteByte('\n')
	}
	return writeFile(path, buf.Bytes(), sync)
}

// readCheckpoint returns the entries' fields, each entry having exactly
// fields fields. A missing file is no entries and os.ErrNotExist.
func readCheckpoint(path string, fields int) ([][]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseCheckpoint(path, data, fields)
}

func parseCheckpoint(name string, data []byte, fields int) ([][]string, error) {
	bad := func(line int, why string) error {
		return fmt.Errorf("%w %s, line %d: %s", ErrCorruptCheckpoint, name, line, why)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	v, ok := next()
	if !ok || v != strconv.Itoa(checkpointVersion) {
		return nil, bad(1, fmt.Sprintf("version %q, want %d", v, checkpointVersion))
	}
	c, ok := next()
	n, err := strconv.Atoi(c)
	if !ok || err != nil || n < 0 {
		return nil, bad(2, fmt.Sprintf("entry count %q", c))
	}
	entries := make([][]string, 0, min(n, 1<<16))
	for i := 0; i < n; i++ {
		l, ok := next()
		if !ok {
			return nil, bad(3+i, fmt.Sprintf("%d entries declared, %d present", n, i))
		}
		f := strings.Split(l, " ")
		if len(f) != fields {
			return nil, bad(3+i, fmt.Sprintf("%q has %d fields, want %d", l, len(f), fields))
		}
		entries = append(entries, f)
	}
	if l, ok := next(); ok && l != "" {
		return nil, bad(3+n, "more lines than the entry count")
	}
	return entries, sc.Err()
}

// WriteOffsetCheckpoint writes a log dir's per-partition offsets.
func WriteOffsetCheckpoint(path string, offsets map[TopicPartition]int64, sync bool) error {
	lines := make([]string, 0, len(offsets))
	for tp, o := range offsets {
		lines = append(lines, fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, o))
	}
	return writeCheckpoint(path, lines, sync)
}

// ReadOffsetCheckpoint reads a log dir's per-partition offsets; a missing
// file is an empty map.
func ReadOffsetCheckpoint(path string) (map[TopicPartition]int64, error) {
	entries, err := readCheckpoint(path, 3)
	if errors.Is(err, os.ErrNotExist) {
		return map[TopicPartition]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(entries))
	for i, e := range entries {
		p, err1 := strconv.ParseInt(e[1], 10, 32)
		o, err2 := strconv.ParseInt(e[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || o < 0 {
			return nil, fmt.Errorf("%w %s, line %d: %q", ErrCorruptCheckpoint, path, 3+i, strings.Join(e, " "))
		}
		out[TopicPartition{e[0], int32(p)}] = o
	}
	return out, nil
}

// writeFile replaces path atomically, durably when sync.
func writeFile(path string, data []byte, sync bool) error {
	if sync {
		return atomicfile.WriteFile(path, data)
	}
	return atomicfile.WriteFileNoSync(path, data)
}
