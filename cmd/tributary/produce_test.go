package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// consumed is one record as printed by consume --format '%p %o %T %k|%s|%h\n'.
type consumed struct {
	partition   int
	offset, ts  int64
	key, value  string
	headers     string
	line        string
	inputNumber int
}

const consumeFormat = `%p %o %T %k|%s|%h\n`

func parseConsumed(t *testing.T, out string) []consumed {
	t.Helper()
	var recs []consumed
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var c consumed
		head, rest, _ := strings.Cut(l, " ")
		c.partition, _ = strconv.Atoi(head)
		head, rest, _ = strings.Cut(rest, " ")
		c.offset, _ = strconv.ParseInt(head, 10, 64)
		head, rest, _ = strings.Cut(rest, " ")
		c.ts, _ = strconv.ParseInt(head, 10, 64)
		parts := strings.Split(rest, "|")
		if len(parts) != 3 {
			t.Fatalf("consumed line %q: want 3 |-separated fields after partition, offset and time", l)
		}
		c.key, c.value, c.headers, c.line = parts[0], parts[1], parts[2], l
		recs = append(recs, c)
	}
	return recs
}

func TestProduceConsume(t *testing.T) {
	b := testbroker.Start(t)
	bs := []string{"--bootstrap", b.Addr()}
	run := func(stdin string, args ...string) (string, string) {
		t.Helper()
		out, errOut, err := runKafkaCmd(t, stdin, append(args, bs...)...)
		if err != nil {
			t.Fatalf("tributary %s: %v\nstderr:\n%s", strings.Join(args, " "), err, errOut)
		}
		return out, errOut
	}
	run("", "topic", "create", "events", "-p", "3")

	// 100 keyed lines with two headers. Three keys are murmur2 test vectors
	// from Kafka's and librdkafka's suites, whose partition is known.
	javaHash := map[string]uint32{"kafka": 0xd067cf64, "1234": 0x9fc97b14, "34": 0x873930da}
	var in strings.Builder
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = fmt.Sprintf("user-%d", i%17)
		switch i {
		case 10:
			keys[i] = "kafka"
		case 20:
			keys[i] = "1234"
		case 30:
			keys[i] = "34"
		}
		sep := "\n"
		if i%2 == 1 {
			sep = "\r\n" // Windows line ends are stripped too
		}
		fmt.Fprintf(&in, "%s=>value %03d with spaces%s", keys[i], i, sep)
	}
	before := time.Now().UnixMilli()
	_, summary := run(in.String(), "produce", "events", "--key-separator", "=>", "-H", "trace=abc", "--header", "env=test", "--acks", "all")
	after := time.Now().UnixMilli()
	m := regexp.MustCompile(`^produced 100 records to "events" in \S+ \(partition:records 0:(\d+) 1:(\d+) 2:(\d+)\)\n$`).FindStringSubmatch(summary)
	if m == nil {
		t.Fatalf("produce summary: %q", summary)
	}

	out, errOut := run("", "consume", "events", "--from-beginning", "--count", "100", "--format", consumeFormat)
	if errOut != "consumed 100 records\n" {
		t.Errorf("consume summary: %q", errOut)
	}
	recs := parseConsumed(t, out)
	if len(recs) != 100 {
		t.Fatalf("consumed %d records, want 100:\n%s", len(recs), out)
	}
	byValue := map[string]consumed{}
	perPartition := map[int][]consumed{}
	for _, r := range recs {
		byValue[r.value] = r
		perPartition[r.partition] = append(perPartition[r.partition], r)
	}
	for i, k := range keys {
		v := fmt.Sprintf("value %03d with spaces", i)
		r, ok := byValue[v]
		switch {
		case !ok:
			t.Errorf("record %d (%q) not consumed", i, v)
		case r.key != k || r.headers != "trace=abc,env=test":
			t.Errorf("record %d: key %q headers %q, want %q and trace=abc,env=test", i, r.key, r.headers, k)
		case r.ts < before || r.ts > after:
			t.Errorf("record %d: timestamp %d outside the produce call [%d, %d]", i, r.ts, before, after)
		}
		if h, ok := javaHash[k]; ok && r.partition != int((h&0x7fffffff)%3) {
			t.Errorf("key %q in partition %d, Java's client puts it in %d", k, r.partition, (h&0x7fffffff)%3)
		}
		r.inputNumber = i
		byValue[v] = r
	}
	for p, rs := range perPartition {
		if strconv.Itoa(len(rs)) != m[1+p] {
			t.Errorf("partition %d: consumed %d records, produce said %s", p, len(rs), m[1+p])
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].offset < rs[j].offset })
		for i, r := range rs {
			r = byValue[r.value]
			if r.offset != int64(i) {
				t.Errorf("partition %d: offsets %v..., want 0, 1, 2, ...", p, rs[i].offset)
				break
			}
			if i > 0 && r.inputNumber < byValue[rs[i-1].value].inputNumber {
				t.Errorf("partition %d: offset %d holds line %d, after line %d", p, i, r.inputNumber, byValue[rs[i-1].value].inputNumber)
			}
		}
	}
	// The same key always went to the same partition.
	keyPartition := map[string]int{}
	for _, r := range recs {
		if p, ok := keyPartition[r.key]; ok && p != r.partition {
			t.Errorf("key %q in partitions %d and %d", r.key, p, r.partition)
		}
		keyPartition[r.key] = r.partition
	}

	// --offset: absolute, then from the end; --partition picks partitions.
	n0, _ := strconv.Atoi(m[1])
	out, _ = run("", "consume", "events", "-p", "0", "--offset", "2", "--count", "1", "-f", `%p:%o\n`)
	if out != "0:2\n" {
		t.Errorf("--offset 2 -p 0: %q", out)
	}
	out, _ = run("", "consume", "events", "-p", "0", "--offset", "-1", "--count", "1", "-f", `%p:%o\n`)
	if out != fmt.Sprintf("0:%d\n", n0-1) {
		t.Errorf("--offset -1 -p 0: %q, want 0:%d", out, n0-1)
	}
	out, _ = run("", "consume", "events", "-p", "1,2", "--offset", "-2", "--count", "4", "-f", `%p\n`)
	if got := strings.Fields(out); len(got) != 4 || strings.Count(out, "0") != 0 {
		t.Errorf("-p 1,2 --offset -2: %q", out)
	}

	// --partition on produce.
	run("a\nb\nc\n", "produce", "events", "--partition", "1", "-z", "lz4")
	out, _ = run("", "consume", "events", "-p", "1", "--offset", "-3", "--count", "3", "-f", `%K:%s\n`)
	if out != "-1:a\n-1:b\n-1:c\n" {
		t.Errorf("produce --partition 1: consumed %q", out)
	}

	// --timestamp: only what was produced at or after the time.
	run("", "topic", "create", "timed")
	run("old 1\nold 2\n", "produce", "timed")
	time.Sleep(10 * time.Millisecond)
	mark := time.Now()
	time.Sleep(10 * time.Millisecond)
	run("new 1\nnew 2\nnew 3\n", "produce", "timed", "-z", "zstd")
	for _, ts := range []string{strconv.FormatInt(mark.UnixMilli(), 10), mark.UTC().Format(time.RFC3339Nano)} {
		out, _ = run("", "consume", "timed", "--timestamp", ts, "--count", "3")
		if out != "new 1\nnew 2\nnew 3\n" {
			t.Errorf("--timestamp %s: %q", ts, out)
		}
	}

	// Every codec goes through.
	run("", "topic", "create", "codecs")
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		run(codec+" 1\n"+codec+" 2\n", "produce", "codecs", "--compression", codec, "--acks", "1")
	}
	out, _ = run("", "consume", "codecs", "--from-beginning", "--count", "10")
	if out != "none 1\nnone 2\ngzip 1\ngzip 2\nsnappy 1\nsnappy 2\nlz4 1\nlz4 2\nzstd 1\nzstd 2\n" {
		t.Errorf("codecs: %q", out)
	}

	// Errors name the bad value.
	for _, c := range []struct {
		stdin string
		args  []string
		want  []string
	}{
		{"x\n", []string{"produce", "nope"}, []string{`topic "nope" does not exist`}},
		{"", []string{"consume", "nope"}, []string{`topic "nope" does not exist`}},
		{"x\n", []string{"produce", "events", "--partition", "3"}, []string{`--partition 3: topic "events" has 3 partitions, 0 to 2`}},
		{"", []string{"consume", "events", "-p", "0,7"}, []string{`--partition 7: topic "events" has 3 partitions`}},
		{"", []string{"consume", "timed", "-p", "1"}, []string{`--partition 1: topic "timed" has 1 partition, 0`}},
		{"", []string{"consume", "events", "-f", `%s %q`}, []string{`--format "%s %q"`, "unknown directive %q"}},
		{"", []string{"consume", "events", "--timestamp", "yesterday"}, []string{`--timestamp "yesterday"`, "RFC 3339"}},
		{"", []string{"consume", "events", "--offset", "1k"}, []string{`--offset "1k"`}},
		{"", []string{"consume", "events", "-p", "0", "--offset", "1000"}, []string{"--offset 1000", `partition 0 of "events" holds offsets 0 to`}},
		{"", []string{"consume", "events", "--offset", "1", "--from-beginning"}, []string{"at most one of --from-beginning, --offset and --timestamp"}},
		{"", []string{"consume", "events", "--count", "-2"}, []string{"--count -2"}},
		{"a|1\nno separator here\n", []string{"produce", "events", "-k", "|"}, []string{`line 2: no key separator "|" in "no separator here"`}},
		{"x\n", []string{"produce", "events", "--acks", "2"}, []string{`--acks "2"`}},
		{"x\n", []string{"produce", "events", "-z", "brotli"}, []string{`--compression "brotli"`}},
		{"x\n", []string{"produce", "events", "-H", "novalue"}, []string{`--header "novalue": want key=value`}},
		{"x\n", []string{"produce", "events", "--partition", "-5"}, []string{"--partition -5"}},
	} {
		wantCLIError(t, c.stdin, c.want, append(c.args, bs...)...)
	}
}

// Without --count, consume follows new records until Ctrl-C, then exits 0.
func TestConsumeFollowAndInterrupt(t *testing.T) {
	b := testbroker.Start(t)
	mustRunCLI(t, "", "topic", "create", "live", "-p", "2", "--bootstrap", b.Addr())

	cmd := exec.Command(testbroker.Binary(t), "consume", "live", "--bootstrap", b.Addr(), "-f", `%k=%s\n`)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	// Records produced after it started reach it, from either partition;
	// it may take a moment to have its fetches in place, so produce until
	// one arrives.
	deadline := time.After(20 * time.Second)
	got := map[string]bool{}
	for i := 0; len(got) < 2; i++ {
		mustRunCLI(t, fmt.Sprintf("a|%d\nb|%d\n", i, i), "produce", "live", "-k", "|", "--bootstrap", b.Addr())
		select {
		case l := <-lines:
			got[l[:1]] = true
		case <-time.After(300 * time.Millisecond):
		case <-deadline:
			t.Fatalf("consume printed nothing in 20s; stderr:\n%s", stderr.String())
		}
	}

	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() {
		for range lines {
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("consume after SIGINT: %v\nstderr:\n%s", err, stderr.String())
		}
		if !regexp.MustCompile(`^consumed \d+ records\n$`).MatchString(stderr.String()) {
			t.Errorf("stderr after SIGINT: %q", stderr.String())
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("consume took %s to stop after SIGINT", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("consume still running 10s after SIGINT; stderr:\n%s", stderr.String())
	}
}
