package console

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"
)

// Charts are inline SVG written by the server: no chart library, no
// script, nothing a strict CSP refuses (colours come from classes in
// console.css, not style attributes), and a page without JavaScript shows
// them as well.

// point is one value of a chart; a missing value (no rate yet, a failed
// sample) breaks the line.
type point struct {
	At time.Time
	V  float64
	OK bool
}

const (
	chartW, chartH = 560, 140
	padL, padR     = 56, 8
	padT, padB     = 8, 22
)

// chart renders pts over the hour before now as an SVG line chart. Its
// accessible name says what a person would read off it: the last value
// and the peak.
func chart(id, title, unit string, pts []point, now time.Time) template.HTML {
	from := now.Add(-chartSpan)
	peak, last, any := 0.0, 0.0, false
	for _, p := range pts {
		if p.OK && !p.At.Before(from) {
			peak = math.Max(peak, p.V)
			last, any = p.V, true
		}
	}
	top := niceCeil(peak)
	x := func(t time.Time) float64 {
		f := float64(t.Sub(from)) / float64(chartSpan)
		return padL + math.Max(0, math.Min(1, f))*float64(chartW-padL-padR)
	}
	y := func(v float64) float64 {
		return padT + (1-v/top)*float64(chartH-padT-padB)
	}
	label := title + ": no samples yet"
	if any {
		label = fmt.Sprintf("%s over the last hour: now %s %s, peak %s %s", title, num(last), unit, num(peak), unit)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<figure class="chart" id="%s"><figcaption>%s</figcaption>`, html.EscapeString(id), html.EscapeString(title+" ("+unit+")"))
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s"><title>%s</title>`,
		chartW, chartH, chartW, chartH, html.EscapeString(label), html.EscapeString(label))
	// Axes and grid: 0, half and the top; the hour's start and now.
	for _, v := range []float64{0, top / 2, top} {
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padL, chartW-padR, y(v), y(v))
		fmt.Fprintf(&b, `<text class="axis" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-4, y(v)+4, num(v))
	}
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d">-60 min</text>`, padL, chartH-6)
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="middle">-30</text>`, (padL+chartW-padR)/2, chartH-6)
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="end">now</text>`, chartW-padR, chartH-6)
	var seg []string
	flush := func() {
		switch len(seg) {
		case 0:
		case 1: // a lone point still shows
			fmt.Fprintf(&b, `<polyline class="line" points="%s %s"/>`, seg[0], seg[0])
		default:
			fmt.Fprintf(&b, `<polyline class="line" points="%s"/>`, strings.Join(seg, " "))
		}
		seg = seg[:0]
	}
	for _, p := range pts {
		if !p.OK || p.At.Before(from) {
			flush()
			continue
		}
		seg = append(seg, fmt.Sprintf("%.1f,%.1f", x(p.At), y(p.V)))
	}
	flush()
	b.WriteString(`</svg></figure>`)
	return template.HTML(b.String())
}

// niceCeil is the axis top: 1, 2 or 5 times a power of ten, at least v.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func num(v float64) string {
	switch {
	case v >= 1e6:
		return trimZero(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case v >= 1e4:
		return trimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	default:
		return trimZero(fmt.Sprintf("%.2f", v))
	}
}

func trimZero(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// overviewCharts are the overview's charts, from the sampler's ring.
func overviewCharts(samples []sample, now time.Time) []template.HTML {
	var in, out, urp []point
	for _, s := range samples {
		ok := s.Err == ""
		in = append(in, point{s.At, s.In, ok && s.In >= 0})
		out = append(out, point{s.At, s.Out, ok && s.Out >= 0})
		urp = append(urp, point{s.At, float64(s.UnderReplicated), ok})
	}
	return []template.HTML{
		chart("chart-in", "Records in", "records/s", in, now),
		chart("chart-out", "Records consumed (committed by groups)", "records/s", out, now),
		chart("chart-urp", "Under-replicated partitions", "partitions", urp, now),
	}
}

// lagChart is one group's total lag over the hour.
func lagChart(samples []sample, group string, now time.Time) template.HTML {
	var pts []point
	for _, s := range samples {
		v, ok := s.Lag[group]
		pts = append(pts, point{s.At, float64(v), ok})
	}
	return chart("chart-lag", "Lag of "+group, "records", pts, now)
}
