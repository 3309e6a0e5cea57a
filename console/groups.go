package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

type groupRow struct {
	Name, State, Protocol string
	Members               int
	Lag                   int64
	Err                   string
}

// groupsPerPage bounds the groups one page describes: kadm's Lag
// describes each group and fetches its offsets, which took 1.3 s for 1,000
// groups; a page of them costs the same whatever the cluster's size.
const groupsPerPage = 100

type groupsData struct {
	Rows                 []groupRow
	Filter               string
	Page, Pages, Matched int
	Prev, Next           string // links, "" at an end
}

func (s *Server) groups(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := ctxOf(r)
	defer cancel()
	listed, err := s.admin(ctx).ListGroups(ctx)
	if err != nil {
		s.fail(w, r, "groups", err)
		return
	}
	q := r.URL.Query()
	d := groupsData{Filter: strings.TrimSpace(q.Get("q")), Page: 1}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 1 {
		d.Page = n
	}
	names := listed.Groups()
	sort.Strings(names)
	if d.Filter != "" {
		kept := names[:0]
		for _, n := range names {
			if strings.Contains(strings.ToLower(n), strings.ToLower(d.Filter)) {
				kept = append(kept, n)
			}
		}
		names = kept
	}
	d.Matched = len(names)
	d.Pages = max(1, (len(names)+groupsPerPage-1)/groupsPerPage)
	d.Page = min(d.Page, d.Pages)
	link := func(p int) string {
		v := url.Values{}
		if d.Filter != "" {
			v.Set("q", d.Filter)
		}
		v.Set("page", strconv.Itoa(p))
		return "/groups?" + v.Encode()
	}
	if d.Page > 1 {
		d.Prev = link(d.Page - 1)
	}
	if d.Page < d.Pages {
		d.Next = link(d.Page + 1)
	}
	names = names[(d.Page-1)*groupsPerPage : min(len(names), d.Page*groupsPerPage)]
	if len(names) > 0 {
		lags, err := s.admin(ctx).Lag(ctx, names...)
		if err != nil {
			s.fail(w, r, "group lag", err)
			return
		}
		for _, l := range lags {
			row := groupRow{Name: l.Group, State: l.State, Protocol: l.Protocol, Members: len(l.Members), Lag: l.Lag.Total()}
			if err := l.Error(); err != nil {
				row.Err = err.Error()
			}
			d.Rows = append(d.Rows, row)
		}
	}
	sort.Slice(d.Rows, func(i, j int) bool { return d.Rows[i].Name < d.Rows[j].Name })
	s.render(w, r, http.StatusOK, "groups", page{Title: "Consumer groups", Nav: "groups", Data: d})
}

type memberRow struct {
	ID, Instance, Client, Host, Assigned string
}

type lagRow struct {
	Topic      string
	Partition  int32
	Member     string
	Committed  int64
	Start, End int64
	Lag        int64
	Err        string
}

type resetRow struct {
	Topic              string
	Partition          int32
	Current, Target    int64
	Start, End, Change int64
}

type resetForm struct {
	Topic, To, Value string
}

type groupData struct {
	Name, State, Protocol string
	Members               []memberRow
	Lag                   []lagRow
	Total                 int64
	Topics                []string
	Form                  resetForm
	Preview               []resetRow
	PreviewErr            string
	Empty                 bool
	LagChart              template.HTML
	NotSampled            bool // the group is past the sampler's bound
}

func (s *Server) group(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("group")
	ctx, cancel := ctxOf(r)
	defer cancel()
	lags, err := s.admin(ctx).Lag(ctx, name)
	if err == nil {
		err = lags.Error()
	}
	l, ok := lags[name]
	if err != nil || !ok {
		if err == nil {
			err = errors.New("no such group")
		}
		s.fail(w, r, "group "+name, err)
		return
	}
	if l.State == "Dead" {
		s.render(w, r, http.StatusNotFound, "error", page{Title: "Group " + name, Error: "group " + name + ": no such group"})
		return
	}
	d := groupData{Name: name, State: l.State, Protocol: l.Protocol, Total: l.Lag.Total(), Empty: groupInactive(l.State)}
	for _, m := range l.Members {
		row := memberRow{ID: m.MemberID, Client: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			row.Instance = *m.InstanceID
		}
		if a, ok := m.Assigned.AsConsumer(); ok {
			var parts []string
			for _, t := range a.Topics {
				parts = append(parts, fmt.Sprintf("%s %s", t.Topic, joinInt32(t.Partitions)))
			}
			row.Assigned = strings.Join(parts, "; ")
		}
		d.Members = append(d.Members, row)
	}
	if s.samp != nil {
		samples := s.samp.samples()
		d.LagChart = lagChart(samples, name, time.Now())
		if n := len(samples); n > 0 {
			_, d.NotSampled = samples[n-1].Lag[name]
			d.NotSampled = !d.NotSampled && samples[n-1].Err == ""
		}
	}
	topics := map[string]bool{}
	for _, ml := range l.Lag.Sorted() {
		row := lagRow{Topic: ml.Topic, Partition: ml.Partition, Committed: ml.Commit.At, Start: ml.Start.Offset, End: ml.End.Offset, Lag: ml.Lag}
		if ml.Member != nil {
			row.Member = ml.Member.ClientID + " " + ml.Member.MemberID
		}
		if ml.Err != nil {
			row.Err = ml.Err.Error()
		}
		topics[ml.Topic] = true
		d.Lag = append(d.Lag, row)
	}
	for t := range topics {
		d.Topics = append(d.Topics, t)
	}
	sort.Strings(d.Topics)
	q := r.URL.Query()
	if q.Get("to") != "" {
		d.Form = resetForm{Topic: q.Get("topic"), To: q.Get("to"), Value: q.Get("value")}
		plan, err := s.planReset(ctx, name, d.Form, l)
		if err != nil {
			d.PreviewErr = err.Error()
		}
		d.Preview = plan
	}
	s.render(w, r, http.StatusOK, "group", page{Title: "Group " + name, Nav: "groups", Data: d})
}

// groupInactive is a state in which a commit from outside the group does
// not fight live members: Kafka's reset tool asks for it too.
func groupInactive(state string) bool { return state == "Empty" || state == "Dead" || state == "" }

// planReset computes where a reset would move each partition's committed
// offset, without changing anything. Targets are clamped to the
// partition's [start, end], as Kafka's reset tool clamps them.
func (s *Server) planReset(ctx context.Context, group string, f resetForm, l kadm.DescribedGroupLag) ([]resetRow, error) {
	var topics []string
	if f.Topic != "" {
		topics = []string{f.Topic}
	} else {
		for t := range l.Lag {
			topics = append(topics, t)
		}
		sort.Strings(topics)
	}
	if len(topics) == 0 {
		return nil, badInput("the group has committed nothing: name a topic to reset")
	}
	starts, err := s.admin(ctx).ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	ends, err := s.admin(ctx).ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	var at int64
	var byTime kadm.ListedOffsets
	switch f.To {
	case "earliest", "latest":
	case "offset":
		if at, err = strconv.ParseInt(strings.TrimSpace(f.Value), 10, 64); err != nil || at < 0 {
			return nil, badInput("offset %q", f.Value)
		}
	case "time":
		t, err := parseTime(f.Value)
		if err != nil {
			return nil, err
		}
		if byTime, err = s.admin(ctx).ListOffsetsAfterMilli(ctx, t.UnixMilli(), topics...); err != nil {
			return nil, err
		}
	default:
		return nil, badInput("reset to %q: want earliest, latest, time or offset", f.To)
	}
	var plan []resetRow
	var errs []string
	ends.Each(func(eo kadm.ListedOffset) {
		if eo.Err != nil {
			errs = append(errs, fmt.Sprintf("%s[%d]: %v", eo.Topic, eo.Partition, eo.Err))
			return
		}
		so, ok := starts.Lookup(eo.Topic, eo.Partition)
		if !ok || so.Err != nil {
			errs = append(errs, fmt.Sprintf("%s[%d]: no start offset", eo.Topic, eo.Partition))
			return
		}
		row := resetRow{Topic: eo.Topic, Partition: eo.Partition, Current: -1, Start: so.Offset, End: eo.Offset}
		if ml, ok := l.Lag.Lookup(eo.Topic, eo.Partition); ok && ml.Commit.At >= 0 {
			row.Current = ml.Commit.At
		}
		switch f.To {
		case "earliest":
			row.Target = row.Start
		case "latest":
			row.Target = row.End
		case "offset":
			row.Target = min(max(at, row.Start), row.End)
		case "time":
			row.Target = row.End
			if o, ok := byTime.Lookup(eo.Topic, eo.Partition); ok && o.Err == nil && o.Offset >= 0 {
				row.Target = o.Offset
			}
		}
		if row.Current >= 0 {
			row.Change = row.Target - row.Current
		}
		plan = append(plan, row)
	})
	sort.Slice(plan, func(i, j int) bool {
		a, b := plan[i], plan[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	if len(errs) > 0 {
		return plan, errors.New(strings.Join(errs, "; "))
	}
	return plan, nil
}

func (s *Server) resetOffsets(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("group")
	f := resetForm{Topic: r.PostForm.Get("topic"), To: r.PostForm.Get("to"), Value: r.PostForm.Get("value")}
	ctx, cancel := ctxOf(r)
	defer cancel()
	lags, err := s.admin(ctx).Lag(ctx, name)
	if err == nil {
		err = lags.Error()
	}
	if err != nil {
		s.fail(w, r, "reset offsets of "+name, err)
		return
	}
	l := lags[name]
	if !groupInactive(l.State) {
		s.fail(w, r, "reset offsets of "+name, badInput("group %s is %s with %d members: stop its consumers first, or their next commit undoes the reset", name, l.State, len(l.Members)))
		return
	}
	plan, err := s.planReset(ctx, name, f, l)
	if err != nil {
		s.fail(w, r, "reset offsets of "+name, err)
		return
	}
	os := kadm.Offsets{}
	for _, p := range plan {
		os.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: p.Target, LeaderEpoch: -1})
	}
	rs, err := s.admin(ctx).CommitOffsets(ctx, name, os)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		s.fail(w, r, "reset offsets of "+name, err)
		return
	}
	what := fmt.Sprintf("reset %d partitions of group %s to %s %s", len(plan), name, f.To, f.Value)
	s.log.Info("console: " + what)
	http.Redirect(w, r, "/groups/"+url.PathEscape(name)+"?"+s.noteQuery(what), http.StatusSeeOther)
}
