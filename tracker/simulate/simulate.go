package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Config says where the traffic goes and how much of it.
type Config struct {
	// URL is the tracker's base URL, http://127.0.0.1:8080.
	URL string
	// WriteKey is the source's write key.
	WriteKey string
	// Rate is events per second (default 200).
	Rate float64
	// Visitors is how many browsers take turns (default 1000).
	Visitors int
	// Batch is the most events in one /v1/batch request (default 50).
	Batch int
	// Seed makes the visitors and their paths reproducible.
	Seed   uint64
	Client *http.Client
}

// Stats count what was sent; safe to read while Run runs.
type Stats struct {
	Events   atomic.Int64 // sent in batches the tracker accepted
	Rejected atomic.Int64 // events the tracker refused (4xx, or listed as rejected)
	Failed   atomic.Int64 // batches that did not reach the tracker or got a 5xx
}

// event is what a visitor did, before it becomes Segment JSON.
type event struct {
	typ, name, path, referrer string
	props, traits             map[string]any
}

// Run sends traffic until ctx is done. Batches the tracker refuses or cannot
// take are counted, not retried: a demo keeps going when the tracker
// restarts, and the counts say what was lost.
func Run(ctx context.Context, cfg Config, st *Stats) error {
	if cfg.URL == "" || cfg.WriteKey == "" {
		return errors.New("simulate: a tracker URL and a write key are needed")
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 200
	}
	if cfg.Visitors <= 0 {
		cfg.Visitors = 1000
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 50
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	endpoint, err := url.JoinPath(cfg.URL, "/v1/batch")
	if err != nil {
		return fmt.Errorf("simulate: tracker URL %q: %w", cfg.URL, err)
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x73696d))
	visitors := make([]*visitor, cfg.Visitors)
	for i := range visitors {
		visitors[i] = newVisitor(r, i)
	}
	const tick = 100 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	var owed float64
	var batch []map[string]any
	seq := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		owed += cfg.Rate * tick.Seconds()
		for owed >= 1 {
			v := visitors[r.IntN(len(visitors))]
			for _, e := range v.step(r, "https://shop.example") {
				seq++
				batch = append(batch, e.segment(v, seq, cfg.Seed))
				owed--
			}
		}
		for len(batch) > 0 {
			n := min(len(batch), cfg.Batch)
			send(ctx, cfg, endpoint, batch[:n], st)
			batch = batch[n:]
		}
		batch = batch[:0]
	}
}

// segment renders an event as the Segment spec has it.
func (e event) segment(v *visitor, seq int, seed uint64) map[string]any {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	m := map[string]any{
		"type":        e.typ,
		"messageId":   fmt.Sprintf("sim-%d-%d", seed, seq),
		"anonymousId": v.anonymousID,
		"timestamp":   now,
		"sentAt":      now,
		"context": map[string]any{
			"userAgent": v.userAgent,
			"locale":    v.locale,
			"library":   map[string]any{"name": "tributary-simulate", "version": "1"},
			"page":      page(v),
			"campaign":  campaign(v),
		},
	}
	if v.userID != "" {
		m["userId"] = v.userID
	}
	switch e.typ {
	case "track":
		m["event"], m["properties"] = e.name, e.props
	case "identify":
		m["userId"], m["traits"] = v.userID, e.traits
	case "page":
		m["name"] = strings.TrimPrefix(strings.SplitN(e.path, "?", 2)[0], "/")
		m["properties"] = map[string]any{"path": e.path, "referrer": e.referrer}
	}
	return m
}

func page(v *visitor) map[string]any {
	path, search, _ := strings.Cut(v.page, "?")
	p := map[string]any{"url": "https://shop.example" + v.page, "path": path, "title": "Shop: " + path}
	if search != "" {
		p["search"] = "?" + search
	}
	if ref := referrers[v.referrer].url; ref != "" {
		p["referrer"] = ref
	}
	return p
}

func campaign(v *visitor) map[string]any {
	ref := referrers[v.referrer]
	if ref.source == "" {
		return nil
	}
	return map[string]any{"source": ref.source, "medium": ref.medium, "name": "winter"}
}

func send(ctx context.Context, cfg Config, endpoint string, batch []map[string]any, st *Stats) {
	body, _ := json.Marshal(map[string]any{"batch": batch, "writeKey": cfg.WriteKey})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		st.Failed.Add(1)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() == nil { // not just the end of the run
			st.Failed.Add(1)
		}
		return
	}
	defer resp.Body.Close()
	var answer struct {
		Rejected []json.RawMessage `json:"rejected"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode >= 500:
		st.Failed.Add(1)
	case resp.StatusCode >= 400:
		st.Rejected.Add(int64(len(batch)))
	default:
		json.Unmarshal(b, &answer)
		st.Rejected.Add(int64(len(answer.Rejected)))
		st.Events.Add(int64(len(batch) - len(answer.Rejected)))
	}
}
