package console

import (
	"context"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// health counts the partitions an operator must look at first.
type health struct {
	Topics, Partitions, Offline, UnderReplicated, UnderMinISR int
}

type logDir struct {
	Broker              int32
	Dir                 string
	Size, Total, Usable int64
	Err                 string
}

type overviewData struct {
	Cluster    string
	Controller int32
	Brokers    kadm.BrokerDetails
	Health     health
	LogDirs    []logDir
	Groups     int
	Warnings   []string
	// Charts are the last hour's samples, nil when sampling is off.
	Charts []template.HTML
	Every  string
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := ctxOf(r)
	defer cancel()
	md, err := s.admin(ctx).Metadata(ctx)
	if err != nil {
		s.fail(w, r, "cluster metadata", err)
		return
	}
	d := overviewData{Cluster: md.Cluster, Controller: md.Controller, Brokers: md.Brokers}
	minISR, err := s.minISR(ctx, md.Topics)
	if err != nil {
		d.Warnings = append(d.Warnings, "topic configs: "+err.Error())
	}
	d.Health = partitionHealth(md.Topics, minISR)
	if dirs, err := s.admin(ctx).DescribeAllLogDirs(ctx, nil); err != nil {
		d.Warnings = append(d.Warnings, "log dirs: "+err.Error())
	} else {
		dirs.Each(func(ld kadm.DescribedLogDir) {
			e := logDir{Broker: ld.Broker, Dir: ld.Dir, Size: ld.Size(), Total: ld.TotalBytes, Usable: ld.UsableBytes}
			if ld.Err != nil {
				e.Err = ld.Err.Error()
			}
			d.LogDirs = append(d.LogDirs, e)
		})
		sort.Slice(d.LogDirs, func(i, j int) bool {
			a, b := d.LogDirs[i], d.LogDirs[j]
			return a.Broker < b.Broker || a.Broker == b.Broker && a.Dir < b.Dir
		})
	}
	if gs, err := s.admin(ctx).ListGroups(ctx); err != nil {
		d.Warnings = append(d.Warnings, "groups: "+err.Error())
	} else {
		d.Groups = len(gs)
	}
	if s.samp != nil {
		d.Charts = overviewCharts(s.samp.samples(), time.Now())
		d.Every = s.samp.every.String()
	}
	s.render(w, r, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", Data: d})
}

// minISR is each topic's min.insync.replicas, in one DescribeConfigs.
func (s *Server) minISR(ctx context.Context, topics kadm.TopicDetails) (map[string]int, error) {
	names := topics.Names()
	out := make(map[string]int, len(names))
	if len(names) == 0 {
		return out, nil
	}
	rcs, err := s.admin(ctx).DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return out, err
	}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Key == "min.insync.replicas" && c.Value != nil {
				if n, err := strconv.Atoi(*c.Value); err == nil {
					out[rc.Name] = n
				}
			}
		}
	}
	return out, nil
}

func partitionHealth(topics kadm.TopicDetails, minISR map[string]int) health {
	var h health
	for _, t := range topics {
		if t.Err != nil {
			continue
		}
		h.Topics++
		min := minISR[t.Topic]
		for _, p := range t.Partitions {
			h.Partitions++
			switch {
			case p.Leader < 0:
				h.Offline++
			case len(p.ISR) < len(p.Replicas):
				h.UnderReplicated++
			}
			if min > 0 && p.Leader >= 0 && len(p.ISR) < min {
				h.UnderMinISR++
			}
		}
	}
	return h
}
