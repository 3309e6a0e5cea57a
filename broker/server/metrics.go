package server

import (
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/replica"
)

// metrics are the broker's Prometheus series. Each is named after the Kafka
// JMX metric operators know, in Prometheus's spelling: a Kafka "...PerSec"
// meter is a _total counter (rate() makes it per second), a "...TimeMs"
// histogram is in _seconds, and a Kafka tag (topic=, request=) is a label.
// docs/operations.md lists them with their Kafka names.
//
// Counters and histograms are updated where the thing happens; the
// partition, replication and group gauges are read from the metadata image
// and the coordinator when Prometheus scrapes (stateCollector), so they
// need no bookkeeping on any request path.
type metrics struct {
	// kafka.network:type=RequestMetrics,name={RequestsPerSec,TotalTimeMs},request=X
	requests *prometheus.CounterVec
	// byVersion is Kafka RequestsPerSec's version tag: which versions
	// the clients use (what an upgrade or a new API version changes).
	byVersion     *prometheus.CounterVec
	requestErrors *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	// kafka.server:type=socket-server-metrics,{connection-count,connection-creation-total}
	connections        *prometheus.GaugeVec
	connectionsCreated *prometheus.CounterVec
	rejectedFrames     prometheus.Counter
	// Connections closed at accept by max.connections(.per.ip), and
	// accepts that failed and were retried (EMFILE...).
	refusedConnections *prometheus.CounterVec
	acceptErrors       *prometheus.CounterVec
	// kafka.network:type=SocketServer,name={MemoryPoolAvailable,MemoryPoolUsed}
	// are read from the pool at scrape time; these count the waits.
	poolWaits       prometheus.Counter
	poolWaitSeconds prometheus.Counter
	// Handlers that panicked and closed their connection.
	panics prometheus.Counter
	// kafka.server:type=BrokerTopicMetrics,name={BytesInPerSec,BytesOutPerSec,MessagesInPerSec},topic=X
	bytesIn    *prometheus.CounterVec
	bytesOut   *prometheus.CounterVec
	messagesIn *prometheus.CounterVec
	// kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs
	logFlush prometheus.Histogram
	// kafka.server:type=ReplicaManager,name={IsrShrinksPerSec,IsrExpandsPerSec}.
	// A single node's ISR is itself and never changes; replication (issue 5)
	// counts here, and the series exist now so dashboards and alerts need
	// no change then.
	isrShrinks prometheus.Counter
	isrExpands prometheus.Counter
	// kafka.server:type=DelayedOperationPurgatory,name=PurgatorySize,delayedOperation=X:
	// requests parked until data arrives (fetch) or a join or sync phase
	// ends (rebalance).
	purgatory *prometheus.GaugeVec
	// kafka.server:type=ForwardingManagerMetrics: admin requests sent on to
	// the active controller.
	forwarded *prometheus.CounterVec

	reg prometheus.Registerer

	// series are the request series of each API key and version seen,
	// looked up on its first request: observe is on every request's
	// path, and a label lookup hashes the labels (and formats the
	// version) each time.
	series [kmsg.MaxKey + 1][maxCachedVersion + 1]atomic.Pointer[requestSeries]

	// live is what the scrape-time gauges read; nil until Start loaded the
	// metadata, and read by the scraping goroutine, hence atomic.
	live atomic.Pointer[liveState]
}

type liveState struct {
	s      *Server
	ctrl   *cluster.Controller
	parts  *replica.Manager
	groups *group.Coordinator
}

// Purgatory operations, as Kafka's delayedOperation tag.
const (
	purgatoryFetch     = "fetch"
	purgatoryProduce   = "produce"
	purgatoryRebalance = "rebalance"
)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_requests_total", Help: "Requests served, by API (Kafka RequestsPerSec)."}, []string{"api"}),
		byVersion: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_requests_by_version_total", Help: "Requests served, by API and version (Kafka RequestsPerSec's version tag)."}, []string{"api", "version"}),
		requestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_request_failures_total", Help: "Requests that closed their connection, by API."}, []string{"api"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tributary_broker_request_seconds", Help: "Time to handle a request, by API (Kafka TotalTimeMs); long-polling fetches and group joins include their wait.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"api"}),
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_broker_connections", Help: "Open client connections, by listener (Kafka connection-count)."}, []string{"listener"}),
		connectionsCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_connections_created_total", Help: "Client connections accepted, by listener (Kafka connection-creation-total)."}, []string{"listener"}),
		rejectedFrames: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_broker_rejected_frames_total", Help: "Frames refused for their size (socket.request.max.bytes)."}),
		refusedConnections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_connections_refused_total", Help: "Connections closed as they were accepted, by listener and the limit they were past (max.connections, max.connections.per.ip, connection_creation_rate)."}, []string{"listener", "limit"}),
		acceptErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_accept_errors_total", Help: "Accepts that failed and were retried after a pause, by listener: out of file descriptors (EMFILE, ENFILE) or kernel memory."}, []string{"listener"}),
		poolWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_broker_memory_pool_waits_total", Help: "Request frames that waited for queued.max.request.bytes: their connection was not read meanwhile."}),
		poolWaitSeconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_broker_memory_pool_wait_seconds_total", Help: "Time connections spent waiting for queued.max.request.bytes."}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_broker_handler_panics_total", Help: "Requests whose handler panicked; each closed only its connection. Any is a bug: the broker log has the stack."}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_bytes_in_total", Help: "Record bytes appended by producers, by topic (Kafka BytesInPerSec)."}, []string{"topic"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_bytes_out_total", Help: "Record bytes sent to fetchers, by topic (Kafka BytesOutPerSec)."}, []string{"topic"}),
		messagesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_messages_in_total", Help: "Records appended by producers, by topic (Kafka MessagesInPerSec)."}, []string{"topic"}),
		logFlush: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tributary_broker_log_flush_seconds", Help: "Time of each fsync of a partition log (Kafka LogFlushRateAndTimeMs): by flush.messages, flush.ms, roll and shutdown.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}),
		isrShrinks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_broker_isr_shrinks_total", Help: "Replicas removed from a partition's ISR led here (Kafka IsrShrinksPerSec)."}),
		isrExpands: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_broker_isr_expands_total", Help: "Replicas added back to a partition's ISR led here (Kafka IsrExpandsPerSec)."}),
		purgatory: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_broker_purgatory_size", Help: "Requests waiting, by operation (Kafka PurgatorySize): fetch long-polls, acks=all produces waiting for the ISR, and JoinGroup/SyncGroup waiting for a rebalance phase."}, []string{"operation"}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_forwarded_requests_total", Help: "Admin requests forwarded to the active controller, by API (KIP-590)."}, []string{"api"}),
	}
	// Labelled series that must exist before their first event, so that a
	// dashboard shows 0 rather than "no data".
	m.purgatory.WithLabelValues(purgatoryFetch)
	m.purgatory.WithLabelValues(purgatoryProduce)
	m.purgatory.WithLabelValues(purgatoryRebalance)
	reg.MustRegister(m.requests, m.byVersion, m.requestErrors, m.latency, m.connections, m.connectionsCreated, m.rejectedFrames,
		m.refusedConnections, m.acceptErrors, m.poolWaits, m.poolWaitSeconds, m.panics,
		m.bytesIn, m.bytesOut, m.messagesIn, m.logFlush, m.isrShrinks, m.isrExpands, m.purgatory, m.forwarded, stateCollector{m})
	return m
}

// watchPool reports the request pool's bytes at scrape time.
func (m *metrics) watchPool(p *requestPool) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tributary_broker_memory_pool_used_bytes", Help: "Bytes of request frames held now, of queued.max.request.bytes (Kafka MemoryPoolUsed)."},
			func() float64 { return float64(p.inUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tributary_broker_memory_pool_available_bytes", Help: "Bytes of queued.max.request.bytes free now, +Inf when unbounded (Kafka MemoryPoolAvailable)."},
			func() float64 {
				if p.limit < 0 {
					return math.Inf(1)
				}
				return float64(p.limit - p.inUse())
			}))
}

// maxCachedVersion is the highest request version whose series observe
// keeps; a higher one (no API has one yet) is looked up every time.
const maxCachedVersion = 31

// requestSeries are one API key and version's series.
type requestSeries struct {
	api                 string
	requests, byVersion prometheus.Counter
	latency             prometheus.Observer
}

func (m *metrics) observe(key, version int16, d time.Duration, err error) {
	rs := m.requestSeries(key, version)
	rs.requests.Inc()
	rs.byVersion.Inc()
	rs.latency.Observe(d.Seconds())
	if err != nil {
		m.requestErrors.WithLabelValues(rs.api).Inc()
	}
}

// requestSeries are the series of key and version, made on their first
// request as the label lookup makes them.
func (m *metrics) requestSeries(key, version int16) *requestSeries {
	inRange := key >= 0 && int(key) < len(m.series) && version >= 0 && int(version) <= maxCachedVersion
	if inRange {
		if rs := m.series[key][version].Load(); rs != nil {
			return rs
		}
	}
	api := kmsg.NameForKey(key)
	rs := &requestSeries{api: api, requests: m.requests.WithLabelValues(api),
		byVersion: m.byVersion.WithLabelValues(api, strconv.Itoa(int(version))), latency: m.latency.WithLabelValues(api)}
	if inRange {
		// Two first requests may race: both find the same series.
		m.series[key][version].Store(rs)
	}
	return rs
}

// serves makes the failure counter of every served API exist from the
// start: alerts on its rate need a series that is there before the first
// failure.
func (m *metrics) serves(keys []int16) {
	for _, k := range keys {
		m.requestErrors.WithLabelValues(kmsg.NameForKey(k))
	}
}

// produced counts one partition's appended records.
func (m *metrics) produced(topic string, bytes, records int) {
	m.bytesIn.WithLabelValues(topic).Add(float64(bytes))
	m.messagesIn.WithLabelValues(topic).Add(float64(records))
}

// fetched counts what a fetch response carries, once it is sent (a
// long-polling fetch reads several times and sends only the last read).
func (m *metrics) fetched(out []topicBytes) {
	for _, tb := range out {
		m.bytesOut.WithLabelValues(tb.topic).Add(float64(tb.bytes))
	}
}

type topicBytes struct {
	topic string
	bytes int64
}

// started makes the scrape-time gauges live, and drops a topic's series
// when it is deleted, as Kafka removes its topic metrics, so that topic
// churn does not grow /metrics forever.
func (m *metrics) started(s *Server, listeners []string) {
	for _, name := range listeners {
		m.connections.WithLabelValues(name)
		m.connectionsCreated.WithLabelValues(name)
		m.acceptErrors.WithLabelValues(name)
		m.refusedConnections.WithLabelValues(name, refusedMax)
		m.refusedConnections.WithLabelValues(name, refusedPerIP)
	}
	s.ctrl.Subscribe(func(prev, next *cluster.Image) {
		for name, t := range prev.Topics {
			if n, ok := next.Topics[name]; !ok || n.ID != t.ID {
				m.bytesIn.DeleteLabelValues(name)
				m.bytesOut.DeleteLabelValues(name)
				m.messagesIn.DeleteLabelValues(name)
			}
		}
	})
	m.live.Store(&liveState{s: s, ctrl: s.ctrl, parts: s.parts, groups: s.groups})
}

// wait counts a request in the purgatory of op until the returned func runs.
func (m *metrics) wait(op string) func() {
	g := m.purgatory.WithLabelValues(op)
	g.Inc()
	return g.Dec
}

// stateCollector reads the partition and group gauges at scrape time.
type stateCollector struct{ m *metrics }

var (
	descPartitions = prometheus.NewDesc("tributary_broker_partitions",
		"Partitions with a replica on this broker (Kafka ReplicaManager PartitionCount).", nil, nil)
	descLeaders = prometheus.NewDesc("tributary_broker_leader_partitions",
		"Partitions led by this broker (Kafka ReplicaManager LeaderCount).", nil, nil)
	descUnderReplicated = prometheus.NewDesc("tributary_broker_under_replicated_partitions",
		"Partitions led here whose ISR is smaller than their replica set (Kafka UnderReplicatedPartitions); alert when above 0.", nil, nil)
	descUnderMinISR = prometheus.NewDesc("tributary_broker_under_min_isr_partitions",
		"Partitions led here whose ISR is below min.insync.replicas, so acks=all produce fails (Kafka UnderMinIsrPartitionCount).", nil, nil)
	descOffline = prometheus.NewDesc("tributary_broker_offline_partitions",
		"Partitions of the cluster without a live leader (Kafka controller OfflinePartitionsCount); alert when above 0.", nil, nil)
	descOfflineReplicas = prometheus.NewDesc("tributary_broker_offline_replicas",
		"Replicas of this broker whose metadata could not be applied (log not created, config not set, log not deleted), retried with a backoff (Kafka ReplicaManager OfflineReplicaCount); alert when above 0.", nil, nil)
	descOfflineLogDirs = prometheus.NewDesc("tributary_broker_offline_log_dirs",
		"Log dirs of this broker taken offline after an I/O error, until a restart (Kafka LogManager OfflineLogDirectoryCount); alert when above 0.", nil, nil)
	descTopics = prometheus.NewDesc("tributary_broker_topics",
		"Topics in the cluster metadata (Kafka controller GlobalTopicCount).", nil, nil)
	descLogSize = prometheus.NewDesc("tributary_broker_log_size_bytes",
		"Bytes of the segments of the topic's partitions on this broker (Kafka Log Size, summed by topic).", []string{"topic"}, nil)
	descGroups = prometheus.NewDesc("tributary_broker_groups",
		"Consumer groups coordinated here, by state (Kafka GroupMetadataManager NumGroups{Stable,...}).", []string{"state"}, nil)
	descFetchSessions = prometheus.NewDesc("tributary_broker_fetch_sessions",
		"Open fetch sessions (Kafka FetchSessionCache NumIncrementalFetchSessions); max.incremental.fetch.session.cache.slots bounds them.", nil, nil)
	descRemoteFailing = prometheus.NewDesc("tributary_broker_remote_storage_failing_partitions",
		"Tiered partitions whose tier passes fail on remote storage (unreachable, refusing or too slow; not a leader change or a local disk error), until one succeeds: nothing of them is uploaded and local retention keeps what is not remote, so their disks fill; alert when above 0 for longer than a few remote.log.manager.task.interval.ms.", nil, nil)
	descRemoteErrors = prometheus.NewDesc("tributary_broker_remote_storage_errors_total",
		"Tier passes of a partition that failed (each is retried with a backoff of up to 30 s); Kafka counts copy failures as RemoteCopyErrorsPerSec.", nil, nil)
	descSharePartitions = prometheus.NewDesc("tributary_broker_share_partitions",
		"Share partitions held in memory by this broker as their topic partition's leader (Kafka's SharePartitionManager cache); only partitions their group's coordinator initialized are held.", nil, nil)
	descRebalances = prometheus.NewDesc("tributary_broker_group_rebalances_total",
		"Rebalances completed by the groups coordinated here: join phases that ended in a new generation with members.", nil, nil)
)

// groupStates are the states of a live group, always reported.
var groupStates = []group.State{group.Empty, group.PreparingRebalance, group.CompletingRebalance, group.Stable}

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPartitions, descLeaders, descUnderReplicated, descUnderMinISR, descOffline, descOfflineReplicas, descOfflineLogDirs, descTopics, descLogSize, descGroups, descRebalances, descFetchSessions, descRemoteFailing, descRemoteErrors, descSharePartitions} {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	live := c.m.live.Load()
	var hosted, leaders, under, underMin, offline, offlineReplicas, offlineDirs, topics, sessions, shares int
	var stats group.Stats
	var remoteFailing int
	var remoteErrors int64
	sizes := map[string]int64{}
	if live != nil {
		img := live.ctrl.Image()
		self := live.s.nodeID
		topics = len(img.Topics)
		for _, t := range img.Topics {
			for _, p := range t.Partitions {
				if b, ok := img.Brokers[p.Leader]; p.Leader < 0 || (ok && b.Fenced) || (!ok && p.Leader != self) {
					offline++
				}
				if p.Leader == self {
					leaders++
					if len(p.ISR) < len(p.Replicas) {
						under++
					}
					if int64(len(p.ISR)) < live.s.minISR(t.Configs) {
						underMin++
					}
				}
			}
		}
		for _, p := range live.parts.All() {
			hosted++
			sizes[p.TP.Topic] += p.Log.Size()
		}
		// Replicas in a failed log dir are offline too, as in Kafka.
		offlineReplicas = len(live.parts.Failures()) + len(live.parts.OfflineReplicas())
		for _, d := range live.parts.Dirs() {
			if d.Offline() != nil {
				offlineDirs++
			}
		}
		stats = live.groups.Stats()
		sessions = live.s.fetchSessions.open()
		if live.s.tier != nil {
			remoteFailing, remoteErrors = live.s.tier.FailingPartitions(), live.s.tier.PassErrors()
		}
		if live.s.shares != nil {
			shares = live.s.shares.LoadedPartitions()
		}
	}
	gauge(descPartitions, hosted)
	gauge(descLeaders, leaders)
	gauge(descUnderReplicated, under)
	gauge(descUnderMinISR, underMin)
	gauge(descOffline, offline)
	gauge(descOfflineReplicas, offlineReplicas)
	gauge(descOfflineLogDirs, offlineDirs)
	gauge(descTopics, topics)
	gauge(descFetchSessions, sessions)
	gauge(descSharePartitions, shares)
	for topic, n := range sizes {
		ch <- prometheus.MustNewConstMetric(descLogSize, prometheus.GaugeValue, float64(n), topic)
	}
	for _, st := range groupStates {
		gauge(descGroups, stats.Groups[st], st.String())
	}
	ch <- prometheus.MustNewConstMetric(descRebalances, prometheus.CounterValue, float64(stats.Rebalances))
	gauge(descRemoteFailing, remoteFailing)
	ch <- prometheus.MustNewConstMetric(descRemoteErrors, prometheus.CounterValue, float64(remoteErrors))
}
