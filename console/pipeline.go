package console

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"
)

// The Pipeline page follows an event from the tracker (its counters and
// the events its schemas refused) through the broker to the lake (load
// runs, event hours and their _SUCCESS markers, bad records) and the jobs
// that load it (the Jobs pages, linked).

const (
	badTopicsShown = 5  // <topic>.bad topics read
	badEventsShown = 10 // newest events of each
	badPayloadShow = 300
)

type badEvent struct {
	Topic     string // the .bad topic
	Partition int32
	Offset    int64
	Timestamp int64
	Source    string
	Target    string // where a valid event would have gone
	Code      string
	Reasons   []string
	Payload   string
	Raw       bool // not the tracker's JSON: shown as is
}

type pipelineData struct {
	Tracker   *trackerView
	BadTopics []string
	Bad       []badEvent
	BadErr    string
	Lake      *lakeView
	Jobs      bool
}

func (s *Server) pipeline(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := ctxOf(r)
	defer cancel()
	d := pipelineData{Jobs: s.jobs != nil}
	if s.tracker != nil {
		v := s.tracker.view(time.Now())
		d.Tracker = &v
	}
	d.BadTopics, d.Bad, d.BadErr = s.badEvents(ctx)
	if s.lake != nil {
		v := s.lake.cachedView()
		ok, err := s.lakeTopicFilter(ctx)
		if err != nil {
			v = lakeView{URI: v.URI, Warn: []string{"which topics you may see: " + err.Error()}}
		} else {
			v = v.filter(ok)
		}
		d.Lake = &v
	}
	s.render(w, r, http.StatusOK, "pipeline", page{Title: "Pipeline", Nav: "pipeline", Data: d})
}

// badEvents are the newest events of the tracker's bad-events topics
// (<topic>.bad, tracker/collect), newest first, with their reasons.
func (s *Server) badEvents(ctx context.Context) ([]string, []badEvent, string) {
	md, err := s.admin(ctx).Metadata(ctx)
	if err != nil {
		return nil, nil, err.Error()
	}
	var topics []string
	for _, t := range md.Topics {
		if t.Err == nil && strings.HasSuffix(t.Topic, ".bad") {
			topics = append(topics, t.Topic)
		}
	}
	sort.Strings(topics)
	if len(topics) > badTopicsShown {
		topics = topics[:badTopicsShown]
	}
	if len(topics) == 0 {
		return nil, nil, ""
	}
	// The page waits a little for a running browse, not the 15 s a
	// browse may: the rest of the page does not need it.
	wait := time.NewTimer(2 * time.Second)
	defer wait.Stop()
	release, ok := s.acquireBrowse(ctx, wait.C)
	if !ok {
		if ctx.Err() != nil {
			return topics, nil, ctx.Err().Error()
		}
		return topics, nil, "other browses of this console are still running: reload to see bad events"
	}
	defer release()
	var out []badEvent
	var errs []string
	for _, t := range topics {
		res, err := s.browse(ctx, t, browseQuery{Partition: -1, Mode: "newest", Limit: badEventsShown})
		if err != nil {
			errs = append(errs, t+": "+err.Error())
			continue
		}
		for _, m := range res.Messages {
			out = append(out, toBadEvent(t, m))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Timestamp > out[j].Timestamp })
	if len(out) > badEventsShown*2 {
		out = out[:badEventsShown*2]
	}
	return topics, out, strings.Join(errs, "; ")
}

func toBadEvent(topic string, m message) badEvent {
	e := badEvent{Topic: topic, Partition: m.Partition, Offset: m.Offset, Timestamp: m.Timestamp}
	var b struct {
		Source  string                          `json:"source"`
		Topic   string                          `json:"topic"`
		Code    string                          `json:"code"`
		Errors  []struct{ Path, Reason string } `json:"errors"`
		Payload json.RawMessage                 `json:"payload"`
	}
	// A value cut at maxShown is not JSON any more: shown raw then.
	if m.Value.Truncated || json.Unmarshal([]byte(m.Value.Text), &b) != nil {
		e.Raw, e.Payload = true, clip(m.Value.Text, badPayloadShow)
		return e
	}
	e.Source, e.Target, e.Code = b.Source, b.Topic, b.Code
	for _, v := range b.Errors {
		r := v.Reason
		if v.Path != "" {
			r = v.Path + ": " + r
		}
		e.Reasons = append(e.Reasons, r)
	}
	e.Payload = clip(string(b.Payload), badPayloadShow)
	return e
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
