package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// perfProduceLine is the final line of perf produce, Kafka's layout.
var perfProduceLine = regexp.MustCompile(`^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, ([\d.]+) ms 50th, ([\d.]+) ms 95th, ([\d.]+) ms 99th, ([\d.]+) ms 99\.9th\.\n$`)

// perfProgressLine is a progress line of perf produce.
var perfProgressLine = regexp.MustCompile(`^\d+ records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, [\d.]+ ms max latency\.$`)

func parseFloats(t *testing.T, ss []string) []float64 {
	t.Helper()
	out := make([]float64, len(ss))
	for i, s := range ss {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = f
	}
	return out
}

func TestPerf(t *testing.T) {
	b := testbroker.Start(t)
	bs := []string{"--bootstrap", b.Addr()}
	mustRunCLI(t, "", append([]string{"topic", "create", "perf", "-p", "3"}, bs...)...)

	// Unthrottled.
	out, errOut, err := runKafkaCmd(t, "", append([]string{"perf", "produce", "--topic", "perf", "--records", "3000", "--record-size", "64", "--report-interval", "1h"}, bs...)...)
	if err != nil {
		t.Fatalf("perf produce: %v\n%s", err, errOut)
	}
	m := perfProduceLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("perf produce summary: %q", out)
	}
	v := parseFloats(t, m[1:])
	records, rate, mb, avg, maxLat, p50, p95, p99, p999 := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]
	if records != 3000 || rate <= 0 || mb <= 0 {
		t.Errorf("perf produce: %s", out)
	}
	if !(p50 <= p95 && p95 <= p99 && p99 <= p999 && p999 <= maxLat && avg <= maxLat && p50 > 0) {
		t.Errorf("perf produce: latencies out of order: %s", out)
	}
	if got, want := mb, rate*64/(1<<20); got < want*0.99-0.01 || got > want*1.01+0.01 {
		t.Errorf("perf produce: %.2f MB/s for %.1f records/s of 64 bytes, want %.2f", got, rate, want)
	}

	// Throttled, with progress lines on stderr and a JSON summary.
	start := time.Now()
	out, errOut, err = runKafkaCmd(t, "", append([]string{"perf", "produce", "--topic", "perf", "--records", "1000", "--record-size", "64",
		"--throughput", "2000", "--report-interval", "100ms", "--acks", "1", "-z", "snappy", "--json"}, bs...)...)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("perf produce --throughput: %v\n%s", err, errOut)
	}
	var res struct {
		Records       int64   `json:"records"`
		Failed        int64   `json:"failed"`
		Bytes         int64   `json:"bytes"`
		RecordsPerSec float64 `json:"records_per_sec"`
		P999          float64 `json:"latency_p99_9_ms"`
		Max           float64 `json:"latency_max_ms"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("perf produce --json: %v: %q", err, out)
	}
	if res.Records != 1000 || res.Failed != 0 || res.Bytes != 64000 || res.P999 > res.Max || res.Max == 0 {
		t.Errorf("perf produce --json: %s", out)
	}
	if res.RecordsPerSec > 2000*1.1 || elapsed < 400*time.Millisecond {
		t.Errorf("perf produce --throughput 2000: %.0f records/s, %s for 1000 records", res.RecordsPerSec, elapsed)
	}
	progress := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(progress) < 2 {
		t.Errorf("perf produce --report-interval 100ms over %s: progress lines:\n%s", elapsed, errOut)
	}
	for _, l := range progress {
		if !perfProgressLine.MatchString(l) {
			t.Errorf("progress line %q", l)
		}
	}

	// perf consume reads the 4000 records back.
	out, errOut, err = runKafkaCmd(t, "", append([]string{"perf", "consume", "--topic", "perf", "--records", "4000"}, bs...)...)
	if err != nil {
		t.Fatalf("perf consume: %v\n%s", err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || lines[0] != "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec" {
		t.Fatalf("perf consume output:\n%s", out)
	}
	cols := strings.Split(lines[1], ", ")
	if len(cols) != 10 {
		t.Fatalf("perf consume line has %d columns: %q", len(cols), lines[1])
	}
	for _, c := range cols[:2] {
		if _, err := time.Parse("2006-01-02 15:04:05", c[:19]); err != nil || !regexp.MustCompile(`:\d{3}$`).MatchString(c) {
			t.Errorf("perf consume time %q", c)
		}
	}
	if cols[2] != "0.2441" || cols[4] != "4000" || cols[6] != "0" { // 4000 × 64 bytes = 0.2441 MB
		t.Errorf("perf consume: MB %s, records %s, rebalance %s: %s", cols[2], cols[4], cols[6], lines[1])
	}

	// Asking for more than there is ends after --timeout, with a summary
	// of what was read and an error.
	out, _, err = runKafkaCmd(t, "", append([]string{"perf", "consume", "--topic", "perf", "--records", "5000", "--timeout", "500ms", "--json"}, bs...)...)
	if err == nil || !strings.Contains(err.Error(), "4000 of 5000 records read") || !strings.Contains(err.Error(), "no record arrived in 500ms") {
		t.Errorf("perf consume past the end: err = %v", err)
	}
	if !strings.Contains(out, `"records":4000,`) {
		t.Errorf("perf consume past the end: %s", out)
	}

	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"perf", "produce", "--records", "1"}, []string{"--topic: required"}},
		{[]string{"perf", "produce", "--topic", "perf"}, []string{"--records 0"}},
		{[]string{"perf", "produce", "--topic", "perf", "--records", "1", "--throughput", "0"}, []string{"--throughput 0"}},
		{[]string{"perf", "produce", "--topic", "perf", "--records", "1", "--batch-size", "0"}, []string{"--batch-size 0"}},
		{[]string{"perf", "produce", "--topic", "perf", "--records", "1", "--acks", "most"}, []string{`--acks "most"`}},
		{[]string{"perf", "produce", "--topic", "nope", "--records", "1"}, []string{`topic "nope" does not exist`}},
		{[]string{"perf", "consume", "--topic", "nope", "--records", "1"}, []string{`topic "nope" does not exist`}},
		{[]string{"perf", "consume", "--topic", "perf", "--records", "-1"}, []string{"--records -1"}},
	} {
		wantCLIError(t, "", c.want, append(c.args, bs...)...)
	}
}
