package console

import (
	"context"
	"strings"
)

// The lake is read with the console's file system handle, which Kafka's
// ACLs do not cover; its _errors files hold the raw records that failed to
// load. With per-user login, a person sees a lake topic's hours, bad
// records, tables, runs and job states only when the broker lets them
// describe that topic (review 2). A lake directory is named after its
// topic, as the loader writes it.

// lakeTopics are the topics the request's principal may describe; nil
// means everything (no per-user login: everyone acts as the console).
func (s *Server) lakeTopicFilter(ctx context.Context) (func(string) bool, error) {
	if s.sessions == nil {
		return nil, nil
	}
	md, err := s.admin(ctx).Metadata(ctx)
	if err != nil {
		return nil, err
	}
	ok := map[string]bool{}
	for _, t := range md.Topics {
		if t.Err == nil {
			ok[t.Topic] = true
		}
	}
	return func(topic string) bool { return ok[topic] }, nil
}

// allVisible: a run or a job that touched one hidden topic is hidden
// whole, since its counts mix that topic's.
func allVisible(topics []string, ok func(string) bool) bool {
	for _, t := range topics {
		if !ok(t) {
			return false
		}
	}
	return true
}

// filter keeps what ok lets the person see.
func (v lakeView) filter(ok func(string) bool) lakeView {
	if ok == nil {
		return v
	}
	out := lakeView{URI: v.URI, Warn: v.Warn}
	for _, j := range v.Jobs {
		if allVisible(j.Topics, ok) {
			out.Jobs = append(out.Jobs, j)
		}
	}
	for _, r := range v.Runs {
		if allVisible(r.Topics, ok) {
			out.Runs = append(out.Runs, r)
		}
	}
	for _, h := range v.Hours {
		if ok(h.Topic) {
			out.Hours = append(out.Hours, h)
		}
	}
	for _, e := range v.Errors {
		if ok(errorsTopic(e.Path)) {
			out.Errors = append(out.Errors, e)
		}
	}
	for _, t := range v.Tables {
		if top, _, _ := strings.Cut(t.Dir, "/"); ok(top) {
			out.Tables = append(out.Tables, t)
		}
	}
	return out
}

// errorsTopic is the topic of _errors/<topic>/<file>.
func errorsTopic(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}
