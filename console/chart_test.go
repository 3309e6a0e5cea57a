package console

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestChart(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pts := []point{
		{now.Add(-2 * time.Hour), 1e9, true}, // older than the hour: left out
		{now.Add(-50 * time.Minute), 10, true},
		{now.Add(-40 * time.Minute), 30, true},
		{now.Add(-30 * time.Minute), 0, false}, // a gap breaks the line
		{now.Add(-20 * time.Minute), 40, true},
		{now.Add(-10 * time.Minute), 20, true},
	}
	svg := string(chart("c", `Rate <"x">`, "records/s", pts, now))
	if n := strings.Count(svg, `<polyline class="line"`); n != 2 {
		t.Errorf("%d lines, want 2 (the gap splits them):\n%s", n, svg)
	}
	for _, want := range []string{`aria-label="Rate &lt;&#34;x&#34;&gt; over the last hour: now 20 records/s, peak 40 records/s"`, `role="img"`, ">50</text>", `id="c"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("no %s in\n%s", want, svg)
		}
	}
	if strings.Contains(svg, "style=") || strings.Contains(svg, "<script") || strings.Contains(svg, `"x"`) {
		t.Errorf("inline style, script or unescaped text:\n%s", svg)
	}
	if empty := string(chart("e", "Lag", "records", nil, now)); !strings.Contains(empty, "no samples yet") || strings.Contains(empty, "polyline") {
		t.Errorf("an empty chart:\n%s", empty)
	}
	for v, want := range map[float64]float64{0: 1, 0.3: 0.5, 7: 10, 10: 10, 11: 20, 1234: 2000} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", v, got, want)
		}
	}
}

func TestSamplerRing(t *testing.T) {
	s := newSampler(nil, 30*time.Second) // 120 points an hour
	if len(s.ring) != 120 {
		t.Fatalf("ring of %d", len(s.ring))
	}
	// The last of 300 samples, 30 s apart, is now: the ring keeps 120.
	start := time.Now().Add(-299 * 30 * time.Second)
	for i := range 300 {
		at := start.Add(time.Duration(i) * 30 * time.Second)
		s.add(sample{At: at, In: -1, Out: -1}, offsets{{"t", 0}: int64(i * 10)}, map[string]offsets{"g": {{"t", 0}: int64(i * 3)}, "new": {}})
	}
	got := s.samples()
	if len(got) != 120 || !got[len(got)-1].At.Equal(start.Add(299*30*time.Second)) {
		t.Fatalf("%d samples, last %v", len(got), got[len(got)-1].At)
	}
	for i := 1; i < len(got); i++ {
		if !got[i].At.After(got[i-1].At) {
			t.Fatal("samples out of order")
		}
	}
	if last := got[len(got)-1]; last.In != 10.0/30 || last.Out != 3.0/30 {
		t.Errorf("rates in %v out %v, want %v and %v", last.In, last.Out, 10.0/30, 3.0/30)
	}
	// A reset (commits back) and a new group's first commit are no
	// consumption; end offsets going back (a topic deleted) are no rate.
	at := start.Add(300 * 30 * time.Second)
	s.add(sample{At: at, In: -1, Out: -1}, offsets{{"t", 0}: 0}, map[string]offsets{"g": {{"t", 0}: 0}, "new": {}, "newer": {{"t", 0}: 500}})
	if last := s.samples(); last[len(last)-1].In != 0 || last[len(last)-1].Out != 0 {
		t.Errorf("after going back: in %v out %v", last[len(last)-1].In, last[len(last)-1].Out)
	}
}

func TestParseSample(t *testing.T) {
	for _, c := range []struct {
		line, name, labels string
		v                  float64
		ok                 bool
	}{
		{`tributary_tracker_events_accepted_total{source="web"} 42`, "tributary_tracker_events_accepted_total", `source="web"`, 42, true},
		{`tributary_tracker_delivered_total 7 1700000000000`, "tributary_tracker_delivered_total", "", 7, true},
		{`# HELP x y`, "", "", 0, false},
		{`broken{`, "", "", 0, false},
		{`x{a="}"} 1`, "x", `a="}"`, 1, true},
		{`x NaN`, "x", "", 0, true},
	} {
		name, labels, v, ok := parseSample(c.line)
		if ok != c.ok || ok && (name != c.name || labels != c.labels || v != c.v && c.line != `x NaN`) {
			t.Errorf("parseSample(%q) = %q %q %v %v", c.line, name, labels, v, ok)
		}
	}
	if got := label(`source="web",reason="schema"`, "reason"); got != "schema" {
		t.Errorf("label reason = %q", got)
	}
	if got := label(`reason="a \"quoted\" one",x="y"`, "x"); got != "y" {
		t.Errorf("label after an escaped quote = %q", got)
	}
}

// TestSampledGroups: 300 idle groups with 32 KB ids named to sort first
// neither push a live group out of the sample nor make it hold their
// names; each name is held once whatever the samples (review 11).
func TestSampledGroups(t *testing.T) {
	gs := kadm.ListedGroups{"live": {Group: "live", State: "Stable"}, "idle": {Group: "idle", State: "Empty"}}
	for i := range 300 {
		g := fmt.Sprintf("!%03d", i) + strings.Repeat("x", 32000)
		gs[g] = kadm.ListedGroup{Group: g, State: "Empty"}
	}
	for i := range 300 {
		g := fmt.Sprintf("!short-%03d", i)
		gs[g] = kadm.ListedGroup{Group: g, State: "Empty"}
	}
	names := sampledGroups(gs)
	if len(names) != maxSampledGroups || names[0] != "live" {
		t.Fatalf("%d groups sampled, first %.20q: want %d, live first", len(names), names[0], maxSampledGroups)
	}
	for _, n := range names {
		if len(n) > maxGroupName {
			t.Fatalf("a %d-byte group id is sampled", len(n))
		}
	}
	s := newSampler(nil, time.Second)
	a := s.intern(strings.Clone("live"))
	b := s.intern(strings.Clone("live"))
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Errorf("the same group id is held twice")
	}
}

// TestSamplerGaps: a partition that does not answer in one sample, or a
// sample that fails whole, makes no spike in the next (review 12).
func TestSamplerGaps(t *testing.T) {
	s := newSampler(nil, 10*time.Second)
	at := time.Now().Add(-time.Minute)
	a, b := tp{"t", 0}, tp{"t", 1}
	s.add(sample{At: at, In: -1, Out: -1}, offsets{a: 1000, b: 50_000_000}, map[string]offsets{"g": {a: 1000, b: 50_000_000}})
	// b's leader is moving: it is missing from this sample.
	s.add(sample{At: at.Add(10 * time.Second), In: -1, Out: -1}, offsets{a: 1100}, map[string]offsets{"g": {a: 1100}})
	s.add(sample{At: at.Add(20 * time.Second), In: -1, Out: -1}, offsets{a: 1200, b: 50_000_100}, map[string]offsets{"g": {a: 1200, b: 50_000_100}})
	// A sample fails whole; the next rate spans both intervals.
	s.add(sample{At: at.Add(30 * time.Second), In: -1, Out: -1, Err: "down"}, nil, nil)
	s.add(sample{At: at.Add(40 * time.Second), In: -1, Out: -1}, offsets{a: 1400, b: 50_000_300}, map[string]offsets{"g": {a: 1400, b: 50_000_300}})
	got := s.samples()
	want := []float64{-1, 10, 10, -1, 20}
	for i, p := range got {
		if p.In != want[i] || p.Out != want[i] {
			t.Errorf("sample %d: in %v out %v, want %v", i, p.In, p.Out, want[i])
		}
	}
}
