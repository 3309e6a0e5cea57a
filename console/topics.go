package console

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type topicRow struct {
	Name              string
	Internal          bool
	Partitions        int
	ReplicationFactor int
	Size              int64 // bytes on disk, every replica counted
	Retention         string
	Err               string
}

type topicsData struct {
	Topics   []topicRow
	Query    string
	Internal bool
	Warnings []string
}

func (s *Server) topics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := ctxOf(r)
	defer cancel()
	q := r.URL.Query()
	d := topicsData{Query: q.Get("q"), Internal: q.Get("internal") != ""}
	md, err := s.admin(ctx).Metadata(ctx)
	if err != nil {
		s.fail(w, r, "topics", err)
		return
	}
	var names []string
	for _, t := range md.Topics {
		if (t.IsInternal && !d.Internal) || !strings.Contains(t.Topic, d.Query) {
			continue
		}
		names = append(names, t.Topic)
	}
	sort.Strings(names)
	sizes := map[string]int64{}
	if len(names) > 0 {
		if dirs, err := s.admin(ctx).DescribeAllLogDirs(ctx, nil); err != nil {
			d.Warnings = append(d.Warnings, "sizes: "+err.Error())
		} else {
			dirs.Each(func(ld kadm.DescribedLogDir) {
				ld.Topics.Each(func(p kadm.DescribedLogDirPartition) { sizes[p.Topic] += p.Size })
			})
		}
	}
	retention := map[string]string{}
	if len(names) > 0 {
		if rcs, err := s.admin(ctx).DescribeTopicConfigs(ctx, names...); err != nil {
			d.Warnings = append(d.Warnings, "configs: "+err.Error())
		} else {
			for _, rc := range rcs {
				for _, c := range rc.Configs {
					if c.Key == "retention.ms" && c.Value != nil {
						retention[rc.Name] = formatRetention(*c.Value)
					}
				}
			}
		}
	}
	for _, n := range names {
		t := md.Topics[n]
		row := topicRow{Name: n, Internal: t.IsInternal, Partitions: len(t.Partitions), ReplicationFactor: t.Partitions.NumReplicas(), Size: sizes[n], Retention: retention[n]}
		if t.Err != nil {
			row.Err = t.Err.Error()
		}
		d.Topics = append(d.Topics, row)
	}
	s.render(w, r, http.StatusOK, "topics", page{Title: "Topics", Nav: "topics", Data: d})
}

func formatRetention(ms string) string {
	n, err := strconv.ParseInt(ms, 10, 64)
	switch {
	case err != nil:
		return ms
	case n < 0:
		return "forever"
	case n%86_400_000 == 0:
		return fmt.Sprintf("%dd", n/86_400_000)
	case n%3_600_000 == 0:
		return fmt.Sprintf("%dh", n/3_600_000)
	default:
		return ms + " ms"
	}
}

// legalTopic is Kafka's rule for topic names (org.apache.kafka.common.internals.Topic).
var legalTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// parseConfigLines reads "key=value" lines; blank lines and # comments are
// skipped.
func parseConfigLines(text string) (map[string]*string, error) {
	out := map[string]*string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, badInput("config line %d: %q is not key=value", i+1, line)
		}
		v = strings.TrimSpace(v)
		out[strings.TrimSpace(k)] = &v
	}
	return out, nil
}

func (s *Server) createTopic(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.PostForm.Get("name"))
	if !legalTopic.MatchString(name) || name == "." || name == ".." {
		s.fail(w, r, "create topic", badInput("topic name %q: use 1 to 249 of a-z A-Z 0-9 . _ -", name))
		return
	}
	partitions, err := formInt(r, "partitions", -1)
	if err != nil {
		s.fail(w, r, "create topic", err)
		return
	}
	rf, err := formInt(r, "replication", -1)
	if err != nil {
		s.fail(w, r, "create topic", err)
		return
	}
	configs, err := parseConfigLines(r.PostForm.Get("configs"))
	if err != nil {
		s.fail(w, r, "create topic", err)
		return
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	if _, err := s.admin(ctx).CreateTopic(ctx, int32(partitions), int16(rf), configs, name); err != nil {
		s.fail(w, r, "create topic "+name, err)
		return
	}
	s.log.Info("console: created topic", "topic", name, "partitions", partitions, "replication", rf)
	s.done(w, r, "/topics/"+name, "created topic "+name)
}

// formInt reads an integer field; empty means def.
func formInt(r *http.Request, field string, def int64) (int64, error) {
	v := strings.TrimSpace(r.Form.Get(field))
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, badInput("%s: %q is not a number", field, v)
	}
	return n, nil
}

type partitionRow struct {
	kadm.PartitionDetail
	Start, End int64
	Size       int64
}

type configRow struct {
	Name, Value, Source string
	Sensitive, Default  bool
}

type topicData struct {
	Name       string
	Internal   bool
	ID         string
	Partitions []partitionRow
	Configs    []configRow
	Messages   int64
	Size       int64
	Warnings   []string
}

func (s *Server) topic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	ctx, cancel := ctxOf(r)
	defer cancel()
	md, err := s.admin(ctx).Metadata(ctx, name)
	if err != nil {
		s.fail(w, r, "topic "+name, err)
		return
	}
	t, ok := md.Topics[name]
	if !ok || t.Err != nil {
		err := t.Err
		if err == nil {
			err = fmt.Errorf("no such topic")
		}
		s.render(w, r, http.StatusNotFound, "error", page{Title: "Topic " + name, Error: "topic " + name + ": " + err.Error()})
		return
	}
	d := topicData{Name: name, Internal: t.IsInternal, ID: t.ID.String()}
	starts, err := s.admin(ctx).ListStartOffsets(ctx, name)
	if err != nil {
		d.Warnings = append(d.Warnings, "start offsets: "+err.Error())
	}
	ends, err := s.admin(ctx).ListEndOffsets(ctx, name)
	if err != nil {
		d.Warnings = append(d.Warnings, "end offsets: "+err.Error())
	}
	sizes := map[int32]int64{}
	if dirs, err := s.admin(ctx).DescribeAllLogDirs(ctx, kadm.TopicsSet{name: {}}); err != nil {
		d.Warnings = append(d.Warnings, "sizes: "+err.Error())
	} else {
		dirs.Each(func(ld kadm.DescribedLogDir) {
			ld.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				if p.Topic == name {
					sizes[p.Partition] += p.Size
				}
			})
		})
	}
	for _, p := range t.Partitions.Sorted() {
		row := partitionRow{PartitionDetail: p, Start: -1, End: -1, Size: sizes[p.Partition]}
		if o, ok := starts.Lookup(name, p.Partition); ok && o.Err == nil {
			row.Start = o.Offset
		}
		if o, ok := ends.Lookup(name, p.Partition); ok && o.Err == nil {
			row.End = o.Offset
		}
		if row.Start >= 0 && row.End >= row.Start {
			d.Messages += row.End - row.Start
		}
		d.Size += row.Size
		d.Partitions = append(d.Partitions, row)
	}
	rcs, err := s.admin(ctx).DescribeTopicConfigs(ctx, name)
	if err == nil {
		var rc kadm.ResourceConfig
		rc, err = rcs.On(name, nil)
		if err == nil {
			err = rc.Err
		}
		for _, c := range rc.Configs {
			row := configRow{Name: c.Key, Source: c.Source.String(), Sensitive: c.Sensitive,
				Default: c.Source != kmsg.ConfigSourceDynamicTopicConfig}
			// A sensitive value never reaches a page, whatever the
			// broker sent.
			if c.Value != nil && !c.Sensitive {
				row.Value = *c.Value
			}
			d.Configs = append(d.Configs, row)
		}
		sort.Slice(d.Configs, func(i, j int) bool { return d.Configs[i].Name < d.Configs[j].Name })
	}
	if err != nil {
		d.Warnings = append(d.Warnings, "configs: "+err.Error())
	}
	s.render(w, r, http.StatusOK, "topic", page{Title: "Topic " + name, Nav: "topics", Data: d})
}

func (s *Server) alterConfig(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	key := strings.TrimSpace(r.PostForm.Get("key"))
	value := strings.TrimSpace(r.PostForm.Get("value"))
	if key == "" {
		s.fail(w, r, "edit config", badInput("no config name"))
		return
	}
	op := kadm.AlterConfig{Op: kadm.SetConfig, Name: key, Value: &value}
	what := fmt.Sprintf("set %s=%s on %s", key, value, name)
	if r.PostForm.Get("op") == "delete" {
		op = kadm.AlterConfig{Op: kadm.DeleteConfig, Name: key}
		what = fmt.Sprintf("removed the override of %s on %s", key, name)
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	rs, err := s.admin(ctx).AlterTopicConfigs(ctx, []kadm.AlterConfig{op}, name)
	if err == nil {
		var res kadm.AlterConfigsResponse
		if res, err = rs.On(name, nil); err == nil {
			err = res.Err
			if err != nil && res.ErrMessage != "" {
				err = fmt.Errorf("%w: %s", err, res.ErrMessage)
			}
		}
	}
	if err != nil {
		s.fail(w, r, "edit config of "+name, err)
		return
	}
	s.log.Info("console: "+what, "topic", name)
	s.done(w, r, "/topics/"+name, what)
}

func (s *Server) addPartitions(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	total, err := formInt(r, "count", 0)
	if err == nil && (total <= 0 || total > 1<<20) {
		err = badInput("count: want the new total number of partitions")
	}
	if err != nil {
		s.fail(w, r, "add partitions", err)
		return
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	rs, err := s.admin(ctx).UpdatePartitions(ctx, int(total), name)
	if err == nil {
		var res kadm.CreatePartitionsResponse
		if res, err = rs.On(name, nil); err == nil {
			err = res.Err
			if err != nil && res.ErrMessage != "" {
				err = fmt.Errorf("%w: %s", err, res.ErrMessage)
			}
		}
	}
	if err != nil {
		s.fail(w, r, "add partitions to "+name, err)
		return
	}
	what := fmt.Sprintf("%s has %d partitions", name, total)
	s.log.Info("console: " + what)
	s.done(w, r, "/topics/"+name, what)
}

func (s *Server) deleteTopic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	// The page's script only enables the button; the server decides, so a
	// form posted without the script is held to the same rule.
	if got := r.PostForm.Get("confirm"); got != name {
		s.fail(w, r, "delete topic", badInput("to delete %s, type its name in the confirmation field (got %q)", name, got))
		return
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	res, err := s.admin(ctx).DeleteTopic(ctx, name)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		s.fail(w, r, "delete topic "+name, err)
		return
	}
	s.log.Info("console: deleted topic", "topic", name)
	s.done(w, r, "/topics", "deleted topic "+name)
}
