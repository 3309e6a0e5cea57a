package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/broker/quota"
)

// Client quota enforcement, as Kafka's ClientQuotaManager and KIP-219: a
// request is served, its cost recorded against the client's quota
// (producer_byte_rate: the produce request's bytes, consumer_byte_rate: the
// fetch response's bytes, request_percentage: the time its handler worked,
// as a percentage of one second), and when the rate is over the quota the
// response goes out at once carrying throttle_time_ms, after which the
// connection is not read from until that time has passed (the channel is
// muted). A client over its consumer quota gets an empty fetch response,
// its bytes not counted, as Kafka answers. controller_mutation_rate
// (KIP-599) is checked before CreateTopics, CreatePartitions and
// DeleteTopics: a client whose bucket is empty gets
// THROTTLING_QUOTA_EXCEEDED (versions that know it) or is throttled after.
//
// The client is conn.Principal()'s name and the request's client id;
// connections on controller listeners (other brokers) and replica fetches
// are never throttled, nor ApiVersions and the SASL exchange.

// quotas is the broker's quota enforcement and its metrics.
type quotas struct {
	m *quota.Manager
	// kafka.server:type={Produce,Fetch,Request,ControllerMutation},user=,client-id= throttle-time
	throttleSeconds *prometheus.CounterVec
	throttled       *prometheus.CounterVec
	// kafka.server:type={Produce,Fetch},user=,client-id= byte-rate, as a counter
	bytes *prometheus.CounterVec
}

// quotaTypes are Kafka's quota metric types, by key.
var quotaTypes = map[string]string{
	quota.ProducerByteRate:       "Produce",
	quota.ConsumerByteRate:       "Fetch",
	quota.RequestPercentage:      "Request",
	quota.ControllerMutationRate: "ControllerMutation",
}

func newQuotas(s *Server, cfg *config.Broker, reg prometheus.Registerer) *quotas {
	w := quota.Window{Samples: int(cfg.Int("quota.window.num")), Size: time.Duration(cfg.Int("quota.window.size.seconds")) * time.Second}
	labels := []string{"quota_type", "user", "client_id"}
	q := &quotas{
		m: quota.NewManager(w, func() *quota.Table { return s.ctrl.Image().ClientQuotas }),
		throttleSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tributary_broker_client_quota_throttle_seconds_total",
			Help: "Time clients were throttled for exceeding a client quota, by quota type, user and client id as Kafka tags its sensors (Kafka throttle-time)."}, labels),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tributary_broker_client_quota_throttled_requests_total",
			Help: "Responses that carried a non-zero throttle_time_ms, by quota type, user and client id."}, labels),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tributary_broker_client_quota_bytes_total",
			Help: "Bytes produced (Produce) or fetched (Fetch) by clients under a byte-rate quota, by user and client id as Kafka tags its sensors; rate() is Kafka's byte-rate."}, labels),
	}
	reg.MustRegister(q.throttleSeconds, q.throttled, q.bytes)
	q.m.Expired = func(key string, tags quota.Tags) {
		user, client := tags.Labels()
		l := prometheus.Labels{"quota_type": quotaTypes[key], "user": user, "client_id": client}
		q.throttleSeconds.Delete(l)
		q.throttled.Delete(l)
		q.bytes.Delete(l)
	}
	return q
}

// withQuotas serves a request (dispatch) with the quotas around it: the
// mutation check before, the recording after.
func (c *conn) withQuotas(req kmsg.Request, h handler, size int) (kmsg.Response, error) {
	// quotaExempt first: a controller listener accepts before s.ctrl, which
	// Active reads, exists (acceptRaftEarly).
	if c.quotaExempt() || !c.s.quotas.m.Active() {
		return c.dispatch(req, h)
	}
	var resp kmsg.Response
	var err error
	mutation := isMutation(c.hdr.key)
	var before partitionCounter
	if mutation {
		before = c.partitionsBefore()
		resp = c.mutationQuota(req)
	}
	if resp == nil {
		forwarded := c.s.forwards(c, c.hdr.key)
		resp, err = c.dispatch(req, h)
		if forwarded {
			// The controller did the work; this broker only waited.
			c.waited = time.Since(c.started)
		}
		if mutation && err == nil {
			c.mutationsDone(req, resp, before)
		}
	}
	if c.hdr.key != kmsg.Fetch.Int16() && c.hdr.key != kmsg.ShareFetch.Int16() { // a fetch records before it answers (fetchQuota, shareFetchQuota)
		c.requestQuota(size, time.Since(c.started)-c.waited)
	}
	return resp, err
}

// chargeRefused records the time of a request the authorizer refused
// whole against the client's request_percentage: Kafka charges every
// request, so a client cannot spend the broker's time on refusals free.
func (c *conn) chargeRefused() {
	if c.quotaExempt() || !c.s.quotas.m.Active() {
		return
	}
	c.recordQuota(quota.RequestPercentage, time.Since(c.started).Seconds()*100, time.Now())
}

// quotaExempt is whether c's current request is outside every quota.
func (c *conn) quotaExempt() bool {
	k := c.hdr.key
	return c.s.controllerListeners[c.listener] || c.saslPending ||
		k == kmsg.ApiVersions.Int16() || k == kmsg.SASLHandshake.Int16() || k == kmsg.SASLAuthenticate.Int16()
}

// record adds v to key's quota of c's client and notes the throttle, the
// largest of the request's, in c.throttle.
func (c *conn) recordQuota(key string, v float64, now time.Time) {
	q := c.s.quotas
	d, tags, limited := q.m.Record(key, c.Principal().Name, c.clientID, v, now)
	if !limited {
		return
	}
	if key == quota.ProducerByteRate || key == quota.ConsumerByteRate {
		user, client := tags.Labels()
		q.bytes.WithLabelValues(quotaTypes[key], user, client).Add(v)
	}
	c.noteThrottle(key, tags, d)
}

func (c *conn) noteThrottle(key string, tags quota.Tags, d time.Duration) {
	if d <= 0 {
		return
	}
	q := c.s.quotas
	user, client := tags.Labels()
	q.throttleSeconds.WithLabelValues(quotaTypes[key], user, client).Add(d.Seconds())
	q.throttled.WithLabelValues(quotaTypes[key], user, client).Inc()
	c.throttle = max(c.throttle, d)
}

// requestQuota records, after a handler, the time it worked, and for a
// Produce its bytes; the response then carries c.throttle (see
// applyThrottle).
func (c *conn) requestQuota(size int, handled time.Duration) {
	now := time.Now()
	if c.hdr.key == kmsg.Produce.Int16() {
		c.recordQuota(quota.ProducerByteRate, float64(size), now)
	}
	c.recordQuota(quota.RequestPercentage, handled.Seconds()*100, now)
}

// applyThrottle puts c.throttle into resp, keeping a larger throttle the
// handler set (a replication or mutation quota).
func (c *conn) applyThrottle(resp kmsg.Response) {
	if c.throttle <= 0 || resp == nil {
		return
	}
	tr, ok := resp.(kmsg.SetThrottleResponse)
	if !ok {
		return
	}
	ms := int32(min(c.throttle.Milliseconds(), 1<<31-1))
	if has, ok := resp.(kmsg.ThrottleResponse); ok {
		if have, _ := has.Throttle(); have >= ms {
			return
		}
	}
	tr.SetThrottle(ms)
}

// mute waits out c.throttle before the connection reads its next request
// (KIP-219: the response went out at once; the client, which also knows
// the throttle, should not be sending meanwhile, and what it sends waits
// in the socket). Shutdown ends the wait.
//
// The mute is bounded by connections.max.idle.ms: a client over a tiny
// quota may owe hours, and a connection the client gave up on long ago
// should not hold its place (max.connections) that long.
func (c *conn) mute() {
	d := min(c.throttle, c.s.idleTimeout)
	c.throttle = 0
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.s.stopping:
	}
}

// capFetch lowers a consumer fetch's max_bytes to what its quota allows in
// one window, as Kafka does, so one answer never owes minutes.
func (c *conn) capFetch(req *kmsg.FetchRequest) {
	if req == nil || !c.s.quotas.m.Active() || c.quotaExempt() || isReplicaFetch(req) {
		return
	}
	if most, ok := c.s.quotas.m.MaxInWindow(quota.ConsumerByteRate, c.Principal().Name, c.clientID); ok && most < float64(req.MaxBytes) {
		req.MaxBytes = int32(max(most, 1))
	}
}

// fetchQuota records a consumer fetch's bytes and its handler time; over
// quota, it turns f into Kafka's throttled answer: no records, the
// throttle time, the session kept for an incremental fetch and dropped for
// a new one (so the client starts over with a full fetch). It reports
// whether it did, in which case the session must not note the answer.
func (c *conn) fetchQuota(req *kmsg.FetchRequest, f *fetchResult, session *fetchSession, incremental bool) bool {
	if !c.s.quotas.m.Active() || c.quotaExempt() || isReplicaFetch(req) {
		return false
	}
	now := time.Now()
	c.recordQuota(quota.RequestPercentage, (time.Since(c.started)-c.waited).Seconds()*100, now)
	before := c.throttle
	c.throttle = 0
	c.recordQuota(quota.ConsumerByteRate, float64(f.bytes), now)
	bytesThrottle := c.throttle
	c.throttle = max(before, bytesThrottle)
	if c.throttle <= 0 {
		return false
	}
	c.s.quotas.m.Unrecord(quota.ConsumerByteRate, c.Principal().Name, c.clientID, float64(f.bytes), now)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.SetVersion(req.Version)
	resp.ThrottleMillis = int32(min(c.throttle.Milliseconds(), 1<<31-1))
	if session != nil {
		if incremental {
			resp.SessionID = session.id
		} else {
			c.s.fetchSessions.remove(session.id)
		}
	}
	f.resp, f.files, f.out = resp, nil, nil
	return true
}

// mutationQuota runs before CreateTopics, CreatePartitions and
// DeleteTopics: a client whose controller_mutation_rate is spent gets the
// request refused with THROTTLING_QUOTA_EXCEEDED when its version knows
// that error (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+),
// as Kafka's strict mode; older versions are served and throttled. It
// returns the answer when refused.
func (c *conn) mutationQuota(req kmsg.Request) kmsg.Response {
	d, tags, limited := c.s.quotas.m.MutationThrottle(c.Principal().Name, c.clientID, time.Now())
	if !limited || d <= 0 {
		return nil
	}
	c.noteThrottle(quota.ControllerMutationRate, tags, d)
	ms := int32(min(d.Milliseconds(), 1<<31-1))
	msg := strPtr(kerr.ThrottlingQuotaExceeded.Description)
	code := kerr.ThrottlingQuotaExceeded.Code
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		if r.Version < 6 {
			return nil
		}
		resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
		resp.ThrottleMillis = ms
		for _, t := range r.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode, st.ErrorMessage = t.Topic, code, msg
			st.NumPartitions, st.ReplicationFactor = -1, -1
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.CreatePartitionsRequest:
		if r.Version < 3 {
			return nil
		}
		resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
		resp.ThrottleMillis = ms
		for _, t := range r.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode, st.ErrorMessage = t.Topic, code, msg
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.DeleteTopicsRequest:
		if r.Version < 5 {
			return nil
		}
		resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
		resp.ThrottleMillis = ms
		for _, t := range r.Topics {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID, st.ErrorCode, st.ErrorMessage = t.Topic, t.TopicID, code, msg
			resp.Topics = append(resp.Topics, st)
		}
		for _, name := range r.TopicNames { // v1-v5
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.ErrorCode, st.ErrorMessage = strPtr(name), code, msg
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	return nil
}

// mutationsDone takes from the client's bucket the partitions a served
// CreateTopics, CreatePartitions or DeleteTopics created or deleted.
func (c *conn) mutationsDone(req kmsg.Request, resp kmsg.Response, before partitionCounter) {
	if resp == nil {
		return
	}
	n := 0
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		q := req.(*kmsg.CreateTopicsRequest)
		for i, t := range r.Topics {
			if t.ErrorCode != 0 || q.ValidateOnly || i >= len(q.Topics) {
				continue
			}
			if p := q.Topics[i].NumPartitions; p > 0 {
				n += int(p)
			} else if t.NumPartitions > 0 {
				n += int(t.NumPartitions)
			} else {
				n += int(c.s.cfg.Int("num.partitions"))
			}
		}
	case *kmsg.CreatePartitionsResponse:
		q := req.(*kmsg.CreatePartitionsRequest)
		for i, t := range r.Topics {
			if t.ErrorCode == 0 && !q.ValidateOnly && i < len(q.Topics) {
				n += max(int(q.Topics[i].Count)-before(t.Topic), 0)
			}
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == 0 && t.Topic != nil {
				n += before(*t.Topic)
			}
		}
	default:
		return
	}
	tags, _, _ := c.s.quotas.m.Table().Resolve(quota.ControllerMutationRate, c.Principal().Name, c.clientID)
	c.noteThrottle(quota.ControllerMutationRate, tags, c.s.quotas.m.RecordMutations(c.Principal().Name, c.clientID, n, time.Now()))
}

// partitionCounter is a topic's partition count before a mutation.
type partitionCounter func(topic string) int

// partitionsBefore captures the partition counts a mutation's accounting
// needs, from the metadata as it was before the request.
func (c *conn) partitionsBefore() partitionCounter {
	img := c.s.ctrl.Image()
	return func(topic string) int {
		if t, ok := img.Topics[topic]; ok {
			return len(t.Partitions)
		}
		return 0
	}
}

// isMutation is whether key is one of the APIs controller_mutation_rate
// limits.
func isMutation(key int16) bool {
	return key == kmsg.CreateTopics.Int16() || key == kmsg.CreatePartitions.Int16() || key == kmsg.DeleteTopics.Int16()
}
