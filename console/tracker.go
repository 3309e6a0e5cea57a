package console

import (
	"bufio"
	"context"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// trackerStats scrapes the tracker's /metrics (its admin address,
// --tracker) into a ring: the tracker's counters are the only place its
// accepted and rejected events are counted, and Prometheus text is its
// stable interface. Only a few named series are kept; the rest of the
// scrape is read and dropped, up to maxScrape bytes.
type trackerStats struct {
	url   string // .../metrics, without credentials: what pages and errors show
	every time.Duration
	// user and pass are the URL's credentials (an admin endpoint behind a
	// proxy with basic auth), sent as basic auth and never shown (review 14).
	user, pass string
	auth       bool
	http       *http.Client

	mu   sync.Mutex
	ring []trackerSample // oldest first, at most maxPoints
	last trackerCounters
	have bool
	// lastAt is when last was scraped.
	lastAt time.Time
	err    string

	stop context.CancelFunc
	done chan struct{}
}

// maxScrape bounds what one scrape reads: a tracker's page is tens of KB.
const maxScrape = 4 << 20

// trackerCounters are the totals of one scrape.
type trackerCounters struct {
	Received, Accepted, Rejected, Delivered, Failed float64
	Spooled                                         float64 // a gauge: events not yet acknowledged by the broker
	Reasons                                         map[string]float64
}

// trackerSample is one point: rates since the previous scrape.
type trackerSample struct {
	At                            time.Time
	Accepted, Rejected, Delivered float64 // events/s
	Spooled                       float64
	OK                            bool
}

func newTrackerStats(base string, every time.Duration) *trackerStats {
	if every <= 0 {
		every = DefaultSampleEvery
	}
	t := &trackerStats{every: every, http: &http.Client{Timeout: 5 * time.Second}}
	if pu, err := url.Parse(base); err == nil && pu.User != nil {
		t.user, t.auth = pu.User.Username(), true
		t.pass, _ = pu.User.Password()
		pu.User = nil
		base = pu.String()
	}
	u := strings.TrimSuffix(base, "/")
	if !strings.HasSuffix(u, "/metrics") {
		u += "/metrics"
	}
	t.url = u
	return t
}

func (t *trackerStats) start() {
	ctx, stop := context.WithCancel(context.Background())
	t.stop, t.done = stop, make(chan struct{})
	go func() {
		defer close(t.done)
		tick := time.NewTicker(t.every)
		defer tick.Stop()
		for {
			t.once(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

func (t *trackerStats) close() {
	if t.stop != nil {
		t.stop()
		<-t.done
	}
}

func (t *trackerStats) once(ctx context.Context) {
	now := time.Now()
	c, err := t.scrape(ctx)
	if ctx.Err() != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := trackerSample{At: now}
	if err != nil {
		t.err = err.Error()
	} else {
		t.err = ""
		p.Spooled = c.Spooled
		if t.have && len(t.ring) > 0 {
			// From the last good scrape: after a failed one, the delta
			// spans two intervals (review 12).
			dt := now.Sub(t.lastAt).Seconds()
			// A tracker restart resets its counters: no rate then.
			if dt > 0 && c.Accepted >= t.last.Accepted && c.Rejected >= t.last.Rejected && c.Delivered >= t.last.Delivered {
				p.Accepted = (c.Accepted - t.last.Accepted) / dt
				p.Rejected = (c.Rejected - t.last.Rejected) / dt
				p.Delivered = (c.Delivered - t.last.Delivered) / dt
				p.OK = true
			}
		}
		t.last, t.lastAt, t.have = c, now, true
	}
	if len(t.ring) == maxPoints {
		copy(t.ring, t.ring[1:])
		t.ring = t.ring[:maxPoints-1]
	}
	t.ring = append(t.ring, p)
}

func (t *trackerStats) scrape(ctx context.Context) (trackerCounters, error) {
	c := trackerCounters{Reasons: map[string]float64{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return c, fmt.Errorf("tracker metrics: %w", err)
	}
	if t.auth {
		req.SetBasicAuth(t.user, t.pass)
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return c, fmt.Errorf("tracker metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("tracker metrics: %s answered %s", t.url, resp.Status)
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, maxScrape))
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		name, labels, v, ok := parseSample(sc.Text())
		if !ok {
			continue
		}
		switch name {
		case "tributary_tracker_events_received_total":
			c.Received += v
		case "tributary_tracker_events_accepted_total":
			c.Accepted += v
		case "tributary_tracker_events_rejected_total":
			c.Rejected += v
			if len(c.Reasons) < 64 {
				c.Reasons[label(labels, "reason")] += v
			}
		case "tributary_tracker_delivered_total":
			c.Delivered += v
		case "tributary_tracker_delivery_failures_total":
			c.Failed += v
		case "tributary_tracker_spool_events":
			c.Spooled += v
		}
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("tracker metrics: %w", err)
	}
	return c, nil
}

// parseSample reads one line of the Prometheus text format: name,
// optional {labels}, value. Comments and anything else are not samples.
func parseSample(line string) (name, labels string, v float64, ok bool) {
	if line == "" || line[0] == '#' {
		return "", "", 0, false
	}
	rest := line
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return "", "", 0, false
		}
		name, labels, rest = line[:i], line[i+1:j], strings.TrimSpace(line[j+1:])
	} else {
		var ok2 bool
		name, rest, ok2 = strings.Cut(line, " ")
		if !ok2 {
			return "", "", 0, false
		}
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", "", 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return name, labels, v, err == nil
}

// label is one label's value in a {a="x",b="y"} body.
func label(labels, key string) string {
	for labels != "" {
		k, rest, ok := strings.Cut(labels, "=")
		if !ok || len(rest) == 0 || rest[0] != '"' {
			return ""
		}
		// Values escape " as \", which Unquote reads.
		end := 1
		for end < len(rest) && (rest[end] != '"' || rest[end-1] == '\\') {
			end++
		}
		if end >= len(rest) {
			return ""
		}
		if strings.TrimSpace(k) == key {
			v, err := strconv.Unquote(rest[:end+1])
			if err != nil {
				return rest[1:end]
			}
			return v
		}
		labels = strings.TrimPrefix(rest[end+1:], ",")
	}
	return ""
}

// trackerView is the tracker part of the Pipeline page.
type trackerView struct {
	URL     string
	Err     string
	Totals  trackerCounters
	Have    bool
	Reasons []reasonCount
	Charts  []template.HTML
}

type reasonCount struct {
	Reason string
	Events float64
}

func (t *trackerStats) view(now time.Time) trackerView {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := trackerView{URL: t.url, Err: t.err, Totals: t.last, Have: t.have}
	for r, n := range t.last.Reasons {
		v.Reasons = append(v.Reasons, reasonCount{r, n})
	}
	sortReasons(v.Reasons)
	var acc, rej, spool []point
	for _, s := range t.ring {
		acc = append(acc, point{s.At, s.Accepted, s.OK})
		rej = append(rej, point{s.At, s.Rejected, s.OK})
		spool = append(spool, point{s.At, s.Spooled, s.OK || s.Spooled > 0})
	}
	v.Charts = []template.HTML{
		chart("chart-accepted", "Events accepted", "events/s", acc, now),
		chart("chart-rejected", "Events rejected", "events/s", rej, now),
		chart("chart-spooled", "Events spooled, not yet on the broker", "events", spool, now),
	}
	return v
}

func sortReasons(rs []reasonCount) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && (rs[j].Events > rs[j-1].Events || rs[j].Events == rs[j-1].Events && rs[j].Reason < rs[j-1].Reason); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}
