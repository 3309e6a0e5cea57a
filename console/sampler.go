package console

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// The charts are fed over the Kafka protocol, not from the brokers'
// /metrics: the console knows only the bootstrap address (a broker's admin
// listener is another port, often firewalled), the same sampling works
// against Apache Kafka (which has JMX, not Prometheus), and what a sample
// sees is what the console's principal may describe. What the protocol
// cannot give is bytes sent to fetchers, so "out" is records committed by
// consumer groups per second: the consumption a pipeline cares about,
// without the replication and re-read traffic of BytesOutPerSec.
const (
	// DefaultSampleEvery is how often the console samples the cluster.
	DefaultSampleEvery = 10 * time.Second
	// chartSpan is what a chart shows.
	chartSpan = time.Hour
	// maxPoints bounds the ring whatever the interval (tests sample fast).
	maxPoints = 720
	// maxSampledGroups bounds the groups a sample fetches the offsets of
	// (the first by name): on a cluster of thousands of groups a sample
	// must stay cheap; the rest show no lag chart, and the page says so.
	maxSampledGroups = 200
	// maxGroupName skips groups with longer ids: the broker takes ids up
	// to 32 KB, and 200 of them in each of 720 samples would hold GBs
	// (review 11). Real group ids are short.
	maxGroupName = 255
	// sampleTimeout bounds one sample's Kafka requests.
	sampleTimeout = 8 * time.Second
)

// sample is one point of every chart.
type sample struct {
	At time.Time
	// In and Out are records per second since the previous sample:
	// appended to every partition (end offsets), and committed by the
	// sampled groups. -1 when there was no previous sample to compare.
	In, Out         float64
	UnderReplicated int
	Offline         int
	// Lag is the total lag of each sampled group.
	Lag map[string]int64
	Err string
}

// sampler keeps the last hour of samples in a ring.
type sampler struct {
	adm   *kadm.Client
	every time.Duration

	mu   sync.Mutex
	ring []sample
	next int // where the next sample goes
	full bool
	// ends and commits are the last sample's end offsets and each sampled
	// group's commits, per partition: rates sum forward moves over the
	// partitions seen both times, so a partition missing from one sample
	// (its leader moving) is not counted whole in the next (review 12).
	ends      offsets            // nil before a sample
	commits   map[string]offsets // nil before a sample
	endsAt    time.Time          // when ends was taken
	commitsAt time.Time
	// names interns group ids, so that the ring's samples share one copy
	// of each name rather than one per sample; reset when it outgrows a
	// few samples' worth, so churning names cannot grow it for ever.
	names map[string]string
	stop  context.CancelFunc
	done  chan struct{}
}

func newSampler(adm *kadm.Client, every time.Duration) *sampler {
	if every <= 0 {
		every = DefaultSampleEvery
	}
	n := int(chartSpan / every)
	n = min(max(n, 2), maxPoints)
	return &sampler{adm: adm, every: every, ring: make([]sample, n)}
}

type tp struct {
	topic     string
	partition int32
}

type offsets map[tp]int64

// forward is what moved forward from was to o, over the partitions in
// both; a partition gone back (a topic recreated, a reset) counts 0.
func (o offsets) forward(was offsets) int64 {
	var n int64
	for k, v := range o {
		if w, ok := was[k]; ok && v > w {
			n += v - w
		}
	}
	return n
}

func (s *sampler) start() {
	ctx, stop := context.WithCancel(context.Background())
	s.stop, s.done = stop, make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.every)
		defer t.Stop()
		for {
			s.once(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

func (s *sampler) close() {
	if s.stop != nil {
		s.stop()
		<-s.done
	}
}

// once takes one sample and adds it to the ring.
func (s *sampler) once(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, sampleTimeout)
	defer cancel()
	now := time.Now()
	p := sample{At: now, In: -1, Out: -1}
	md, err := s.adm.Metadata(ctx)
	if err != nil {
		if parent.Err() != nil {
			return
		}
		p.Err = err.Error()
		s.add(p, nil, nil)
		return
	}
	h := partitionHealth(md.Topics, nil)
	p.UnderReplicated, p.Offline = h.UnderReplicated, h.Offline
	var ends offsets
	if names := md.Topics.Names(); len(names) > 0 {
		if eos, err := s.adm.ListEndOffsets(ctx, names...); err == nil {
			ends = offsets{}
			eos.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					ends[tp{o.Topic, o.Partition}] = o.Offset
				}
			})
		} else {
			p.Err = "end offsets: " + err.Error()
		}
	} else {
		ends = offsets{}
	}
	var commits map[string]offsets
	if gs, err := s.adm.ListGroups(ctx); err == nil {
		names := sampledGroups(gs)
		commits = make(map[string]offsets, len(names))
		p.Lag = make(map[string]int64, len(names))
		if len(names) > 0 {
			fetched := s.adm.FetchManyOffsets(ctx, names...)
			for g, r := range fetched {
				if r.Err != nil {
					continue
				}
				var lag int64
				c := offsets{}
				r.Fetched.Each(func(o kadm.OffsetResponse) {
					if o.Err != nil || o.At < 0 {
						return
					}
					c[tp{o.Topic, o.Partition}] = o.At
					if e, ok := ends[tp{o.Topic, o.Partition}]; ok {
						lag += max(0, e-o.At)
					}
				})
				g = s.intern(g)
				p.Lag[g] = lag
				commits[g] = c
			}
		}
	} else if p.Err == "" {
		p.Err = "groups: " + err.Error()
	}
	s.add(p, ends, commits)
}

// sampledGroups chooses the groups a sample fetches: those with members
// first, then the rest, each by name, skipping ids over maxGroupName. A
// stranger who commits offsets for many groups named to sort first (no
// members) no longer pushes the live groups out of the charts.
func sampledGroups(gs kadm.ListedGroups) []string {
	var active, idle []string
	for _, g := range gs {
		switch {
		case len(g.Group) > maxGroupName:
		case g.State == "Empty" || g.State == "Dead":
			idle = append(idle, g.Group)
		default:
			active = append(active, g.Group)
		}
	}
	sort.Strings(active)
	sort.Strings(idle)
	names := append(active, idle...)
	if len(names) > maxSampledGroups {
		names = names[:maxSampledGroups]
	}
	return names
}

func (s *sampler) intern(g string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.names[g]; ok {
		return n
	}
	if s.names == nil || len(s.names) >= 4*maxSampledGroups {
		s.names = map[string]string{}
	}
	s.names[g] = g
	return g
}

func (s *sampler) add(p sample, ends offsets, commits map[string]offsets) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Each rate runs from the last sample that had its offsets, so a
	// failed sample between two good ones neither drops nor doubles it.
	if ends != nil && s.ends != nil {
		if dt := p.At.Sub(s.endsAt).Seconds(); dt > 0 {
			p.In = float64(ends.forward(s.ends)) / dt
		}
	}
	// Out counts only what groups seen both times moved forward: a new
	// group's first commit, or a reset, is no consumption.
	if commits != nil && s.commits != nil {
		if dt := p.At.Sub(s.commitsAt).Seconds(); dt > 0 {
			var n int64
			for g, c := range commits {
				if was, ok := s.commits[g]; ok {
					n += c.forward(was)
				}
			}
			p.Out = float64(n) / dt
		}
	}
	if ends != nil {
		s.ends, s.endsAt = ends, p.At
	}
	if commits != nil {
		s.commits, s.commitsAt = commits, p.At
	}
	s.ring[s.next] = p
	s.next = (s.next + 1) % len(s.ring)
	if s.next == 0 {
		s.full = true
	}
}

// samples are the samples of the last hour, oldest first.
func (s *sampler) samples() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sample
	if s.full {
		out = append(out, s.ring[s.next:]...)
	}
	out = append(out, s.ring[:s.next]...)
	cut := time.Now().Add(-chartSpan)
	i := sort.Search(len(out), func(i int) bool { return out[i].At.After(cut) })
	return out[i:]
}
