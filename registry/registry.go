package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config configures a Registry.
type Config struct {
	// Brokers are the bootstrap servers of the cluster holding Topic.
	Brokers []string
	// Topic holds the state; Confluent's default name.
	Topic string
	// Listen is the HTTP address, host:port.
	Listen string
	// WriteTimeout bounds how long a write waits for its record to be
	// produced and read back.
	WriteTimeout time.Duration
	// ReadTimeout bounds how long a client may take to send a request,
	// body included.
	ReadTimeout time.Duration
	// ShutdownTimeout bounds how long Close waits for requests in flight
	// before it closes their connections.
	ShutdownTimeout time.Duration
	// ClientOpts are added to the Kafka client's options: TLS and SASL
	// for a cluster that requires them.
	ClientOpts []kgo.Opt
	Logger     *slog.Logger
	// InBroker is set when the registry runs inside broker NodeID: it is
	// the leader, taking writes, while that broker leads partition 0 of
	// Topic (forward.go). Outside a broker it forwards every write.
	InBroker bool
	NodeID   int32
	// ExpectBrokers is how many brokers the cluster is meant to have (the
	// in-broker registry counts controller.quorum.voters): the topic's
	// replication factor is min(3, this), waiting up to 15 s for them.
	ExpectBrokers int
	// Authenticate, when set, turns on HTTP basic auth: every request must
	// carry a user name and password it accepts (auth.go).
	Authenticate func(user, password string) bool
	// MayWrite, when set, is asked before every write (register, delete,
	// config, mode) whether user (empty without basic auth) at the client
	// address host may: the broker's authorizer, inside a broker that has
	// one (docs/registry.md). A refusal is Confluent's 403, 40301.
	MayWrite func(user, host string) bool
}

// DefaultTopic is kafkastore.topic's default in Confluent's registry.
const DefaultTopic = "_schemas"

func (c *Config) defaults() {
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = 30 * time.Second
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Registry serves the API from the state it reads in `_schemas`.
type Registry struct {
	cfg Config
	cl  *kgo.Client
	log *slog.Logger

	mu      sync.Mutex
	st      *state // mu must be held
	applied int64  // offset after the last record applied; mu must be held
	advance chan struct{}

	writeMu sync.Mutex // one write at a time in this process

	started     time.Time
	fwd         *http.Client // forwards writes to the leader
	leaderMu    sync.Mutex
	leaderCache leaderInfo // leaderMu must be held

	passed authCache // basic auth credentials recently accepted

	ready    chan struct{} // closed once the topic is read
	srv      *http.Server
	ln       net.Listener
	cancel   context.CancelFunc
	tailDone chan struct{}
}

// Start listens on cfg.Listen, and returns at once an error there (a port
// in use). Then, in the background, it creates the topic if needed (the
// cluster may still be forming: it retries until Close), reads it to its
// end and tails it. Until it has read the topic every request answers
// 50002; Ready is closed then.
func Start(cfg Config) (*Registry, error) {
	cfg.defaults()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, cfg.ClientOpts...)...)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("registry: schema.registry.listeners %s: %w", cfg.Listen, err)
	}
	r := &Registry{cfg: cfg, cl: cl, log: cfg.Logger, st: newState(), advance: make(chan struct{}),
		tailDone: make(chan struct{}), passed: authCache{sem: make(chan struct{}, authParallel)}, ready: make(chan struct{}), ln: ln, fwd: &http.Client{}, started: time.Now()}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.srv = &http.Server{Handler: r.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: cfg.ReadTimeout}
	go r.srv.Serve(ln)
	go func() {
		defer close(r.tailDone)
		end, err := r.ensureTopic(ctx)
		if err != nil {
			return // closed before the cluster answered
		}
		go func() {
			if r.catchUp(ctx) != nil {
				return
			}
			r.mu.Lock()
			n := len(r.st.subjects)
			r.mu.Unlock()
			close(r.ready)
			r.log.Info("schema registry ready", "listen", ln.Addr().String(), "topic", cfg.Topic, "subjects", n, "end_offset", end)
		}()
		r.tail(ctx)
	}()
	return r, nil
}

// Ready is closed once the registry has read its topic and serves.
func (r *Registry) Ready() <-chan struct{} { return r.ready }

// Addr is the address the API listens on.
func (r *Registry) Addr() string { return r.ln.Addr().String() }

// Close stops serving and tailing. It waits for requests in flight until
// ctx ends or ShutdownTimeout passes, then closes their connections: a
// stalled client must not keep the broker from stopping.
func (r *Registry) Close(ctx context.Context) error {
	if r.srv != nil {
		ctx, cancel := context.WithTimeout(ctx, r.cfg.ShutdownTimeout)
		if err := r.srv.Shutdown(ctx); err != nil {
			// Expected, not a failure of Close: a stalled client, or a
			// connection opened that has not sent its request yet.
			r.log.Info("registry: closing connections still open after the shutdown wait", "err", err)
			r.srv.Close()
		}
		cancel()
	}
	r.cancel()
	<-r.tailDone
	r.cl.Close()
	return nil
}

// catchUp returns once the tail has read the whole topic. Waiting for the
// end offset alone is not enough: only records advance what the tail has
// read, and a log that ends with something else (a transaction marker)
// would keep the registry answering 50002 forever. As Confluent's
// registry does, it writes a NOOP record (every reader ignores it) and
// waits to read it back; until the topic takes writes, it retries.
func (r *Registry) catchUp(ctx context.Context) error {
	for {
		err := r.produce(ctx, noopKey(), nil)
		if err == nil || ctx.Err() != nil {
			return err
		}
		r.log.Warn("registry: writing the NOOP record that marks the end of the topic", "topic", r.cfg.Topic, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// ensureTopic creates the compacted topic (one partition: one order of
// writes for every reader) and returns its end offset. The broker may
// still be electing leaders as the registry starts, so retriable errors
// are retried until ctx ends.
func (r *Registry) ensureTopic(ctx context.Context) (int64, error) {
	adm := kadm.NewClient(r.cl)
	for {
		end, err := r.tryEnsureTopic(ctx, adm)
		if err == nil {
			return end, nil
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("registry: topic %s: %w (last error: %v)", r.cfg.Topic, ctx.Err(), err)
		}
		r.log.Debug("registry: topic not ready", "topic", r.cfg.Topic, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (r *Registry) tryEnsureTopic(ctx context.Context, adm *kadm.Client) (int64, error) {
	if ends, err := adm.ListEndOffsets(ctx, r.cfg.Topic); err == nil {
		if o, ok := ends.Lookup(r.cfg.Topic, 0); ok && o.Err == nil {
			return o.Offset, nil
		}
	}
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return 0, err
	}
	// A cluster starting together registers its brokers one by one: the
	// first registry must not create the topic with one replica because
	// it looked before the others joined (killing that broker would then
	// stop every registry's writes). It waits, a bounded time, for as many
	// brokers as it expects.
	if want := min(3, r.cfg.ExpectBrokers); len(meta.Brokers) < want && time.Since(r.started) < 15*time.Second {
		return 0, fmt.Errorf("%d of the %d brokers expected have registered", len(meta.Brokers), want)
	}
	rf := int16(min(3, len(meta.Brokers)))
	compact := "compact"
	res, err := adm.CreateTopic(ctx, 1, rf, map[string]*string{"cleanup.policy": &compact}, r.cfg.Topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, err
	}
	if res.Err != nil && !errors.Is(res.Err, kerr.TopicAlreadyExists) {
		return 0, res.Err
	}
	ends, err := adm.ListEndOffsets(ctx, r.cfg.Topic)
	if err != nil {
		return 0, err
	}
	o, ok := ends.Lookup(r.cfg.Topic, 0)
	if !ok {
		return 0, fmt.Errorf("no partition 0")
	}
	if o.Err != nil {
		return 0, o.Err
	}
	return o.Offset, nil
}

// tail is the only goroutine that changes the state.
func (r *Registry) tail(ctx context.Context) {
	for {
		fs := r.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			r.log.Warn("registry: fetching", "topic", t, "partition", p, "err", err)
		})
		var last int64 = -1
		r.mu.Lock()
		fs.EachRecord(func(rec *kgo.Record) {
			if !r.st.apply(rec.Key, rec.Value) {
				r.log.Debug("registry: record ignored", "offset", rec.Offset, "key", string(rec.Key))
			}
			last = rec.Offset
		})
		if last >= 0 {
			r.applied = last + 1
			close(r.advance)
			r.advance = make(chan struct{})
		}
		r.mu.Unlock()
	}
}

// waitApplied waits until every record before offset has been applied.
func (r *Registry) waitApplied(ctx context.Context, offset int64) error {
	for {
		r.mu.Lock()
		done, ch := r.applied >= offset, r.advance
		r.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// produce writes one record and waits until tail has applied it.
func (r *Registry) produce(ctx context.Context, key, value []byte) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.WriteTimeout)
	defer cancel()
	rec := &kgo.Record{Key: key, Value: value, Partition: 0}
	res := r.cl.ProduceSync(ctx, rec)
	if err := res.FirstErr(); err != nil {
		return err
	}
	return r.waitApplied(ctx, rec.Offset+1)
}
