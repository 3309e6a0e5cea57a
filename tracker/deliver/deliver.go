package deliver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/tracker"
	"github.com/tributary-io/tributary/tracker/spool"
)

// Errors.
var (
	// ErrClosed is returned by Submit after Close.
	ErrClosed = errors.New("tracker/deliver: closed")
	// ErrNotAcknowledged wraps the broker's failure in AckBroker mode.
	ErrNotAcknowledged = errors.New("tracker/deliver: broker did not acknowledge")
	errPayload         = errors.New("tracker/deliver: bad spool payload")
)

// Config configures a Sink. Brokers and SpoolDir are required.
type Config struct {
	Brokers  []string        // bootstrap host:port addresses
	Ack      tracker.AckMode // "" means AckSpool
	SpoolDir string
	Spool    spool.Options

	Compression kafka.Compression // default lz4
	BatchSize   int               // records per partition batch; default 1,000 (see fill)
	BatchBytes  int64             // bytes per partition batch; default 1 MiB
	Linger      time.Duration     // default kafkacli.DefaultLinger (5 ms)
	DrainBatch  int               // spool entries per drain round; default 20,000
	RetryMin    time.Duration     // drainer backoff; default 100 ms
	RetryMax    time.Duration     // default 2 s

	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Validate reports a config that cannot work.
func (c *Config) Validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("tracker/deliver: no broker address")
	}
	if c.SpoolDir == "" {
		return errors.New("tracker/deliver: no spool directory")
	}
	switch c.Ack {
	case "", tracker.AckSpool, tracker.AckBroker:
	default:
		return fmt.Errorf("tracker/deliver: ack %q: want %q or %q", c.Ack, tracker.AckSpool, tracker.AckBroker)
	}
	return nil
}

func (c *Config) fill() {
	if c.Ack == "" {
		c.Ack = tracker.AckSpool
	}
	if c.Compression == 0 {
		c.Compression = kafka.Lz4
	}
	if c.BatchSize <= 0 {
		// kafka-go allocates room for BatchSize messages (about 150 bytes
		// each) with every batch, however few it then holds: at 10,000
		// that was 1.5 MB of zeroed memory per partition per drain round,
		// half of the tracker's allocations under load. 1,000 activity
		// events (about 400 KB) still make a produce request large enough
		// to amortise its cost.
		c.BatchSize = 1000
	}
	if c.BatchBytes <= 0 {
		c.BatchBytes = 1 << 20
	}
	if c.Linger <= 0 {
		c.Linger = kafkacli.DefaultLinger
	}
	if c.DrainBatch <= 0 {
		c.DrainBatch = 20000
	}
	if c.RetryMin <= 0 {
		c.RetryMin = 100 * time.Millisecond
	}
	if c.RetryMax <= 0 {
		c.RetryMax = 2 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Spool.Logger == nil {
		c.Spool.Logger = c.Logger
	}
}

// Sink delivers events to the broker; see the package doc.
type Sink struct {
	cfg Config
	sp  *spool.Spool
	w   *kafka.Writer
	m   *metrics

	stop    chan struct{} // closed by Close
	drained chan struct{} // closed when the drainer returned
	closeMu sync.Once

	oldest atomic.Int64 // AppendedAt (Unix ms) of the oldest undelivered entry; 0: none
}

var _ tracker.Sink = (*Sink)(nil)

// New opens the spool (recovering it) and starts the drainer.
func New(cfg Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.fill()
	sp, err := spool.Open(cfg.SpoolDir, cfg.Spool)
	if err != nil {
		return nil, err
	}
	tr := &kafka.Transport{ClientID: kafkacli.ClientID, DialTimeout: 5 * time.Second,
		// kafka-go keeps a failed metadata lookup for MetadataTTL (6 s by
		// default): a broker that comes back would wait that long.
		MetadataTTL: time.Second}
	// The process's client properties (TLS, SASL; docs/security.md).
	if err := kafkacli.SecureTransport(tr); err != nil {
		sp.Close()
		return nil, err
	}
	s := &Sink{cfg: cfg, sp: sp, stop: make(chan struct{}), drained: make(chan struct{})}
	s.w = &kafka.Writer{
		Addr:         kafka.TCP(cfg.Brokers...),
		Transport:    tr,
		Balancer:     kafkacli.NewPartitioner(-1),
		RequiredAcks: kafka.RequireAll,
		// As Kafka's own producers do: the broker's
		// auto.create.topics.enable decides whether a new topic appears.
		AllowAutoTopicCreation: true,
		Compression:            cfg.Compression,
		BatchSize:              cfg.BatchSize,
		BatchBytes:             cfg.BatchBytes,
		BatchTimeout:           cfg.Linger,
		MaxAttempts:            3,
		WriteBackoffMin:        50 * time.Millisecond,
		WriteBackoffMax:        500 * time.Millisecond,
		WriteTimeout:           10 * time.Second,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			cfg.Logger.Debug("kafka-go writer: " + fmt.Sprintf(msg, args...))
		}),
	}
	s.m, err = newMetrics(cfg.Registerer, s)
	if err != nil {
		sp.Close()
		return nil, err
	}
	if r := sp.Recovery(); r.TruncatedBytes > 0 {
		s.m.truncated.Add(float64(r.TruncatedBytes))
	}
	go s.drain()
	return s, nil
}

// Spool is the sink's spool, for its Stats.
func (s *Sink) Spool() *spool.Spool { return s.sp }

// Submit implements tracker.Sink.
func (s *Sink) Submit(ctx context.Context, events []tracker.Event) error {
	select {
	case <-s.stop:
		return ErrClosed
	default:
	}
	if len(events) == 0 {
		return nil
	}
	if s.cfg.Ack == tracker.AckBroker {
		msgs := make([]kafka.Message, len(events))
		for i := range events {
			msgs[i] = message(&events[i])
		}
		start := time.Now()
		err := s.w.WriteMessages(ctx, msgs...)
		s.m.produce.Observe(time.Since(start).Seconds())
		if err != nil {
			s.m.failed.Add(float64(failedCount(err, len(msgs))))
			s.m.delivered.Add(float64(len(msgs) - failedCount(err, len(msgs))))
			return fmt.Errorf("%w: %w", ErrNotAcknowledged, firstError(err))
		}
		s.m.delivered.Add(float64(len(msgs)))
		return nil
	}
	payloads := make([][]byte, len(events))
	for i := range events {
		payloads[i] = encode(&events[i])
	}
	err := s.sp.Append(payloads...)
	if errors.Is(err, spool.ErrSpoolFull) {
		s.m.spoolFull.Inc()
	}
	return err
}

// Flush waits until everything spooled before it is delivered, or ctx ends.
func (s *Sink) Flush(ctx context.Context) error {
	target := s.sp.Stats().Appended
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for s.sp.Stats().Committed < target {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.drained:
			return ErrClosed
		case <-t.C:
		}
	}
	return nil
}

// Close stops the drainer (what is not delivered stays in the spool for the
// next start), closes the producer and the spool.
func (s *Sink) Close() error {
	var err error
	s.closeMu.Do(func() {
		close(s.stop)
		<-s.drained
		err = errors.Join(s.w.Close(), s.sp.Close())
	})
	return err
}

// drain is the drainer goroutine: spool → broker, in order, committing the
// position after each acknowledged batch.
func (s *Sink) drain() {
	defer close(s.drained)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	backoff := s.cfg.RetryMin
	for {
		es, err := s.sp.Next(s.stop, s.cfg.DrainBatch, int(s.cfg.BatchBytes)*8)
		if err != nil {
			if errors.Is(err, spool.ErrClosed) {
				return
			}
			// A corrupt entry under a running spool: nothing to do but
			// say so loudly and retry; a restart truncates it.
			s.cfg.Logger.Error("tracker/deliver: reading the spool", "err", err)
			if !s.sleep(s.cfg.RetryMax) {
				return
			}
			s.sp.Rewind()
			continue
		}
		if es == nil {
			return // stopped
		}
		s.oldest.Store(es[0].AppendedAt.UnixMilli())
		msgs := make([]kafka.Message, 0, len(es))
		for i := range es {
			m, err := decode(es[i].Data)
			if err != nil {
				s.m.dropped.Inc()
				s.cfg.Logger.Error("tracker/deliver: dropping an undecodable spool entry", "seq", es[i].Seq, "err", err)
				continue
			}
			msgs = append(msgs, m)
		}
		down := false
		for len(msgs) > 0 {
			start := time.Now()
			err := s.w.WriteMessages(ctx, msgs...)
			s.m.produce.Observe(time.Since(start).Seconds())
			if err == nil {
				s.m.delivered.Add(float64(len(msgs)))
				break
			}
			if ctx.Err() != nil {
				return // stopping: the batch stays in the spool
			}
			var tooLarge kafka.MessageTooLargeError
			if errors.As(err, &tooLarge) {
				// Never deliverable; the collector's limits keep events
				// far below BatchBytes, so this is a misconfiguration.
				s.m.dropped.Inc()
				s.cfg.Logger.Error("tracker/deliver: dropping an event larger than a request may be", "bytes", len(tooLarge.Message.Value), "limit", s.cfg.BatchBytes)
				msgs = append(tooLarge.Remaining[:0:0], tooLarge.Remaining...)
				continue
			}
			var werrs kafka.WriteErrors
			if errors.As(err, &werrs) && len(werrs) == len(msgs) {
				retry := msgs[:0:0]
				for i, e := range werrs {
					if e != nil {
						retry = append(retry, msgs[i])
					}
				}
				s.m.delivered.Add(float64(len(msgs) - len(retry)))
				msgs = retry
			}
			s.m.failed.Add(float64(len(msgs)))
			if !down {
				s.cfg.Logger.Warn("tracker/deliver: broker unavailable, events stay in the spool", "err", firstError(err), "undelivered", len(msgs))
				down = true
			}
			if !s.sleep(backoff) {
				return
			}
			backoff = min(2*backoff, s.cfg.RetryMax)
		}
		if down {
			s.cfg.Logger.Info("tracker/deliver: broker back, delivering the spool")
		}
		backoff = s.cfg.RetryMin
		if err := s.sp.Commit(es[len(es)-1].Next); err != nil {
			if errors.Is(err, spool.ErrClosed) {
				return
			}
			s.cfg.Logger.Error("tracker/deliver: committing the spool position", "err", err)
		}
		s.oldest.Store(0)
	}
}

func (s *Sink) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.stop:
		return false
	case <-t.C:
		return true
	}
}

// firstError shortens kafka-go's WriteErrors (one error per record) to the
// first one, for a log line.
func firstError(err error) error {
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) {
		for _, e := range werrs {
			if e != nil {
				return fmt.Errorf("%d of %d records failed, the first with: %w", werrs.Count(), len(werrs), e)
			}
		}
	}
	return err
}

func failedCount(err error, n int) int {
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) {
		return werrs.Count()
	}
	return n
}

func message(e *tracker.Event) kafka.Message {
	return kafka.Message{Topic: e.Topic, Key: e.Key, Value: e.Value, Time: time.UnixMilli(e.Timestamp)}
}

const payloadVersion = 1

// encode writes the spool entry payload of an event (see the package doc).
func encode(e *tracker.Event) []byte {
	b := make([]byte, 0, 1+8+2+len(e.Topic)+4+len(e.Key)+2+len(e.MessageID)+len(e.Value))
	b = append(b, payloadVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Timestamp))
	b = binary.BigEndian.AppendUint16(b, uint16(min(len(e.Topic), math.MaxUint16)))
	b = append(b, e.Topic[:min(len(e.Topic), math.MaxUint16)]...)
	if e.Key == nil {
		b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // -1
	} else {
		b = binary.BigEndian.AppendUint32(b, uint32(len(e.Key)))
		b = append(b, e.Key...)
	}
	id := e.MessageID[:min(len(e.MessageID), math.MaxUint16)]
	b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
	b = append(b, id...)
	return append(b, e.Value...)
}

// decodeEvent reads a spool entry payload back into an event.
func decodeEvent(b []byte) (tracker.Event, error) {
	var e tracker.Event
	if len(b) < 11 || b[0] != payloadVersion {
		return e, errPayload
	}
	e.Timestamp = int64(binary.BigEndian.Uint64(b[1:9]))
	t := int(binary.BigEndian.Uint16(b[9:11]))
	b = b[11:]
	if len(b) < t+4 {
		return e, errPayload
	}
	e.Topic, b = string(b[:t]), b[t:]
	k := binary.BigEndian.Uint32(b[:4])
	b = b[4:]
	if k != math.MaxUint32 {
		if uint64(len(b)) < uint64(k) {
			return e, errPayload
		}
		e.Key, b = b[:k:k], b[k:]
	}
	if len(b) < 2 {
		return e, errPayload
	}
	m := int(binary.BigEndian.Uint16(b[:2]))
	b = b[2:]
	if len(b) < m {
		return e, errPayload
	}
	e.MessageID, e.Value = string(b[:m]), b[m:]
	return e, nil
}

func decode(b []byte) (kafka.Message, error) {
	e, err := decodeEvent(b)
	if err != nil {
		return kafka.Message{}, err
	}
	return message(&e), nil
}

type metrics struct {
	produce   prometheus.Histogram
	delivered prometheus.Counter
	failed    prometheus.Counter
	dropped   prometheus.Counter
	spoolFull prometheus.Counter
	truncated prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, s *Sink) (*metrics, error) {
	m := &metrics{
		produce: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tributary_tracker_produce_seconds", Help: "Time for the broker to acknowledge a produce call (acks=all).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_tracker_delivered_total", Help: "Events the broker acknowledged."}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_tracker_delivery_failures_total", Help: "Events in produce attempts that failed (retried from the spool, or refused in ack=broker mode)."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_tracker_dropped_total", Help: "Spooled events that can never be delivered (undecodable or too large)."}),
		spoolFull: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_tracker_spool_full_total", Help: "Submits refused because the spool was full."}),
		truncated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_tracker_spool_truncated_bytes_total", Help: "Bytes of corrupt or torn spool tail cut when the spool was opened."}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{
		m.produce, m.delivered, m.failed, m.dropped, m.spoolFull, m.truncated,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tributary_tracker_spool_bytes", Help: "Size of the spool's segment files."},
			func() float64 { return float64(s.sp.Stats().Bytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tributary_tracker_spool_events", Help: "Events in the spool not yet acknowledged by the broker."},
			func() float64 { st := s.sp.Stats(); return float64(st.Appended - st.Committed) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tributary_tracker_spool_oldest_age_seconds", Help: "Age of the oldest spooled event not yet delivered; 0 when none."},
			func() float64 {
				if ms := s.oldest.Load(); ms > 0 {
					return time.Since(time.UnixMilli(ms)).Seconds()
				}
				return 0
			}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("tracker/deliver: registering metrics: %w", err)
		}
	}
	return m, nil
}
