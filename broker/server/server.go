package server

import (
	"github.com/tributary-io/tributary/broker/acl"

	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/replica"
	"github.com/tributary-io/tributary/broker/share"
	"github.com/tributary-io/tributary/broker/tier"
	"github.com/tributary-io/tributary/broker/txn"
)

// Server is one broker node.
type Server struct {
	cfg    *config.Broker
	logger *slog.Logger
	nodeID int32

	dirs      []*log.Dir
	ctrl      *cluster.Controller
	parts     *replica.Manager
	clusterID string
	pids      *producerIDs
	groups    *group.Coordinator
	shares    *share.Manager // KIP-932 share groups (share.go)
	// groupSettingsMu serializes setGroupSettings (group_configs.go).
	groupSettingsMu sync.Mutex
	// shareState is __share_group_state, where shares keeps its state.
	shareState *shareState
	// authorizer judges requests (acl_authz.go); nil allows everything.
	authorizer *acl.Authorizer
	txns       *txn.Coordinator
	// peerConns are the pooled connections to other brokers of the
	// transaction requests (peer_pool.go).
	peerConns *peerPool
	tier      *tier.Manager // tiered storage (tier_hooks.go); nil when off

	// roles are process.roles: a broker-only node hosts partitions and
	// follows the metadata; a controller-only node votes and decides.
	broker, controller bool
	// raftConns receives the quorum's connections from the listeners.
	raftConns *cluster.RaftConns
	// registered: the controller has had this broker's first registration
	// since the start (which told it whether the last stop was clean).
	registered atomic.Bool
	// epoch is the broker epoch of the last registration, which heartbeats
	// and AlterPartition carry (KIP-380).
	epoch atomic.Int64
	// incarnation is this process's random id and logDirIDs the
	// directory.id of its log dirs, both sent with each registration (see
	// cluster.Controller.Register).
	incarnation [16]byte
	logDirIDs   [][16]byte
	// raftListener is where a broker-only node of a quorum receives the
	// metadata log: its listener named in controller.listener.names.
	raftListener *config.Listener
	// peers are this node's logins to its peers (peers_security.go).
	peers *peerSecurity
	// controllerNames are controller.listener.names.
	controllerNames map[string]bool

	apis            map[int16]handler
	maxRequestBytes int32
	idleTimeout     time.Duration
	requestTimeout  time.Duration
	sendfile        bool
	fetchSessions   *fetchSessions
	metrics         *metrics
	// pool is queued.max.request.bytes (mempool.go); limits are
	// max.connections and max.connections.per.ip (connlimit.go).
	pool   *requestPool
	limits *connLimits
	// security is each listener's protocol, TLS and SASL settings
	// (security.go), by listener name; read-only once started.
	security       map[string]*listenerSecurity
	saslMaxReceive int32
	scramFakeKey   [32]byte
	// metadataCaughtUp is set once this node's metadata (SCRAM
	// credentials among it) has caught up with the quorum's after start.
	metadataCaughtUp atomic.Bool
	// failedAuthDelay is connection.failed.authentication.delay.ms.
	failedAuthDelay time.Duration
	authFailures    *prometheus.CounterVec
	quotas          *quotas    // client quotas (quota_enforce.go)
	connRates       *connRates // connection creation rates (quota_conn.go)
	bootstrapScram  []cluster.ScramChange
	// metaOffsets are the metadata offsets brokers reported in their last
	// heartbeats, by id, on the active controller (see awaitBrokers).
	metaOffsets sync.Map

	mu        sync.Mutex
	listeners map[string]net.Listener // by listener name
	// controllerListeners are the names of controller.listener.names,
	// which serve the controller APIs only.
	controllerListeners map[string]bool
	conns               map[*conn]struct{}
	// stopped are listeners whose accept loop ended while the broker was
	// not stopping, with why: Ready reports them.
	stopped map[string]error
	wg      sync.WaitGroup
	closing atomic.Bool
	// stopping is closed when Shutdown starts, to end long-polling fetches.
	stopping chan struct{}
	// serving is closed once every listener accepts and requests are
	// served; secured controller listeners accept before, for Raft
	// (peers_security.go).
	serving chan struct{}
	// failedDirs tells the embedding program when every log dir failed
	// (logdir_failure.go).
	failedDirs failedDirs
}

// Options are what the embedding program decides beyond the broker config.
type Options struct {
	Logger *slog.Logger
	// Registry receives the broker's metrics; nil uses a private one.
	Registry prometheus.Registerer
	// NoSendfile copies fetched records through user space instead of
	// sendfile(2), for comparison.
	NoSendfile bool
	// BootstrapScram are SCRAM users to create if the cluster does not
	// have them (tributary broker --add-scram, KIP-900).
	BootstrapScram []cluster.ScramChange
}

// New prepares a broker; Start opens its storage and listeners.
func New(cfg *config.Broker, opt Options) *Server {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Registry == nil {
		opt.Registry = prometheus.NewRegistry()
	}
	s := &Server{
		cfg: cfg, logger: opt.Logger, nodeID: int32(cfg.Int("node.id")),
		maxRequestBytes:     int32(cfg.Int("socket.request.max.bytes")),
		idleTimeout:         time.Duration(cfg.Int("connections.max.idle.ms")) * time.Millisecond,
		requestTimeout:      time.Minute,
		sendfile:            !opt.NoSendfile,
		fetchSessions:       newFetchSessions(int(cfg.Int("max.incremental.fetch.session.cache.slots"))),
		metrics:             newMetrics(opt.Registry),
		listeners:           map[string]net.Listener{},
		controllerListeners: map[string]bool{},
		conns:               map[*conn]struct{}{},
		stopped:             map[string]error{},
		stopping:            make(chan struct{}),
		serving:             make(chan struct{}),
	}
	s.controllerNames = map[string]bool{}
	for _, n := range cfg.List("controller.listener.names") {
		s.controllerNames[strings.ToUpper(n)] = true
	}
	rand.Read(s.incarnation[:])
	s.apis = s.handlers()
	s.peerConns = newPeerPool()
	maps.Copy(s.apis, s.securityHandlers())
	maps.Copy(s.apis, s.quotaHandlers())
	maps.Copy(s.apis, s.aclHandlers())
	s.metrics.serves(slices.Collect(maps.Keys(s.apis)))
	s.authFailures = newAuthMetrics(opt.Registry)
	s.quotas = newQuotas(s, cfg, opt.Registry)
	s.connRates = newConnRates(s.quotas.m.Window())
	s.bootstrapScram = opt.BootstrapScram
	s.pool = newRequestPool(cfg.QueuedMaxRequestBytes(), s.metrics)
	s.metrics.watchPool(s.pool)
	return s
}

// Start opens the log dirs (recovering them if the last stop was not
// clean), loads the metadata, brings the partitions online and starts
// accepting connections. It logs "broker ready" when clients can connect.
func (s *Server) Start() error {
	if err := s.checkRoles(); err != nil {
		return err
	}
	var err error
	if s.limits, err = newConnLimits(s.cfg); err != nil {
		return err
	}
	s.setupAuthorizer()
	if err := s.setupSecurity(); err != nil {
		return err
	}
	paths := s.cfg.LogDirs()
	configured := s.cfg.String("cluster.id")
	if configured == "" && s.cfg.IsSet("controller.quorum.voters") {
		// Every node of a quorum must agree on the cluster id without a
		// format step: derive it from the voters they all list.
		configured = quorumClusterID(s.cfg.List("controller.quorum.voters"))
	}
	clusterID, err := ensureMetaProperties(paths, s.nodeID, configured)
	if err != nil {
		return err
	}
	s.clusterID = clusterID
	if s.logDirIDs, err = directoryIDs(paths); err != nil {
		return err
	}
	for _, p := range paths {
		d, err := log.OpenDir(s.dirConfig(p))
		if err != nil {
			s.closeStorage()
			return err
		}
		s.dirs = append(s.dirs, d)
	}
	quorum := s.cfg.IsSet("controller.quorum.voters")
	if quorum {
		s.raftConns = cluster.NewRaftConns()
	}
	if err := s.setupPeers(); err != nil {
		s.closeStorage()
		return err
	}
	advertised, err := s.listen()
	if err != nil {
		s.closeStorage()
		return err
	}
	if s.raftListener != nil {
		// The controller reads the address from the registration.
		s.raftConns.Advertise = s.raftListener.Addr()
	}
	early := s.acceptRaftEarly()
	if s.ctrl, err = cluster.OpenController(paths[0], s.cfg, clusterID, advertised, s.raftConns, s.logger); err != nil {
		s.closeListeners()
		s.closeStorage()
		return err
	}
	s.ctrl.SetForwarder(func(req kmsg.Request) (kmsg.Response, error) {
		if r, ok := req.(*kmsg.AllocateProducerIDsRequest); ok {
			// The controller checks the epoch, as Kafka's does.
			r.BrokerEpoch = s.epoch.Load()
		}
		return s.toController(context.Background(), req)
	})
	if s.ctrl.Quorum() && s.controller {
		if err := s.ctrl.WaitCaughtUp(10 * time.Second); err != nil {
			s.logger.Warn("starting with metadata that may be behind the quorum's", "err", err)
		}
	}
	if s.ctrl.Quorum() && !s.controller {
		// A broker-only node serves at once, but its SCRAM users are
		// the metadata's: until it has caught up, SCRAM logins are
		// closed unanswered (clients retry) rather than refused as
		// wrong passwords during a rolling restart.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.ctrl.WaitCaughtUp(10 * time.Second); err != nil {
				s.logger.Warn("serving SCRAM logins with metadata that may be behind the quorum's", "err", err)
			}
			s.metadataCaughtUp.Store(true)
		}()
	} else {
		s.metadataCaughtUp.Store(true)
	}
	s.pids = &producerIDs{ctrl: s.ctrl}
	s.newTier()
	s.parts = replica.NewManager(s.cfg, s.dirs, s.logger)
	s.failedDirs.parts.Store(s.parts)
	if s.ctrl.Quorum() {
		s.parts.SetTransport(s.replicaTransport())
	}
	s.ctrl.Subscribe(func(prev, next *cluster.Image) {
		if err := s.parts.Apply(prev, next); err != nil {
			s.logger.Error("applying metadata", "err", err)
		}
	})
	if err := s.parts.Apply(cluster.EmptyImage(clusterID), s.ctrl.Image()); err != nil {
		s.closeListeners()
		s.closeStorage()
		return err
	}
	s.groups = group.NewCoordinator(s.cfg, s.ctrl, s.parts, s.logger)
	// The share groups first: the coordinator hands them their records
	// as it loads its partitions.
	if err := s.startShares(); err != nil {
		s.closeListeners()
		s.closeStorage()
		return err
	}
	s.groups.Start()
	s.txns = txn.NewCoordinator(s.cfg, s.ctrl, s.parts, s.logger, s.pids.allocate, s.writeMarkers)
	s.txns.Start()
	// A log whose topic is gone from the metadata is deleted, but only on
	// a single node: in a quorum the image fills in as Raft replays the
	// log, and a log missing from a partial image is not an orphan.
	if !s.ctrl.Quorum() {
		if err := s.parts.DeleteOrphans(); err != nil {
			s.logger.Warn("deleting orphaned logs", "err", err)
		}
	}
	var addrs, names []string
	s.mu.Lock()
	for name, ln := range s.listeners {
		addrs = append(addrs, name+"://"+ln.Addr().String())
		names = append(names, name)
		if early[name] {
			continue
		}
		s.wg.Add(1)
		go s.accept(name, ln)
	}
	s.mu.Unlock()
	close(s.serving)
	s.metrics.started(s, names)
	s.wg.Add(1)
	go s.maintain()
	s.startTier()
	if s.controller && len(s.bootstrapScram) > 0 {
		s.wg.Add(1)
		go s.addBootstrapScram()
	}
	if !s.broker {
		s.logger.Info("controller ready", "node_id", s.nodeID, "cluster_id", clusterID, "listeners", addrs)
		return nil
	}
	if s.ctrl.Quorum() {
		// Ready means registered and unfenced: until then, no Metadata
		// lists this node as a live broker.
		self := cluster.Broker{ID: s.nodeID, Rack: s.cfg.String("broker.rack"), Listeners: advertised,
			Incarnation: uuidString(s.incarnation)}
		for _, d := range s.logDirIDs {
			self.LogDirs = append(self.LogDirs, uuidString(d))
		}
		registered, refused, denied := false, false, false
		timeout := time.Duration(s.cfg.Int("initial.broker.registration.timeout.ms")) * time.Millisecond
		// Without a controller to answer, the broker says ready after at
		// most 30 s and goes on trying in the background; refused as a
		// duplicate, it tries until the timeout and then exits.
		start := time.Now()
		for deadline := start.Add(timeout); !registered && time.Now().Before(deadline) && (refused || denied || time.Since(start) < 30*time.Second); {
			err := s.register(self)
			registered = err == nil
			// Credentials the controllers refuse do not get better by
			// waiting either: like a duplicate id, the broker exits at
			// the timeout rather than say it is ready.
			denied = refusedCredentials(err)
			if err != nil {
				if errors.Is(err, kerr.DuplicateBrokerRegistration) && !refused {
					s.logDuplicate()
				}
				refused = errors.Is(err, kerr.DuplicateBrokerRegistration)
				s.logger.Debug("registering with the controller", "err", err)
				wait := 100 * time.Millisecond
				if refused {
					// The other node will not go away in a moment.
					wait = time.Second
				}
				time.Sleep(wait)
			}
		}
		if refused {
			// As Kafka's broker does when its first registration does not
			// succeed in time: a second node with a live node's id must not
			// take over the moment the first one pauses.
			s.Shutdown(context.Background())
			return fmt.Errorf("broker/server: node.id %d is registered by another live broker (DUPLICATE_BROKER_REGISTRATION) after initial.broker.registration.timeout.ms=%d; give this node its own node.id", s.nodeID, timeout.Milliseconds())
		}
		if denied {
			s.Shutdown(context.Background())
			return fmt.Errorf("broker/server: the controllers refused this node's credentials for initial.broker.registration.timeout.ms=%d, so it cannot join the cluster: check sasl.mechanism.controller.protocol, the username and password of the controller listener's listener.name.<l>.plain.sasl.jaas.config and its certificates (docs/security.md)", timeout.Milliseconds())
		}
		if !registered {
			s.logger.Warn("not registered with the controller yet; retrying in the background")
		}
		s.wg.Add(1)
		go s.keepMembership(self, registered)
	}
	s.logger.Info("broker ready", "node_id", s.nodeID, "cluster_id", clusterID, "listeners", addrs,
		"log_dirs", paths, "topics", len(s.ctrl.Image().Topics))
	return nil
}

// checkRoles reads process.roles: broker, controller or both, and only
// both on a single node (no controller.quorum.voters).
func (s *Server) checkRoles() error {
	roles := s.cfg.List("process.roles")
	s.broker, s.controller = slices.Contains(roles, "broker"), slices.Contains(roles, "controller")
	switch {
	case !s.broker && !s.controller:
		return fmt.Errorf("broker/server: process.roles is empty; give broker, controller or both")
	case !s.cfg.IsSet("controller.quorum.voters") && !(s.broker && s.controller):
		return fmt.Errorf("broker/server: process.roles=%s needs controller.quorum.voters: a single node is both broker and controller", strings.Join(roles, ","))
	case s.cfg.IsSet("controller.quorum.voters") && !s.controller:
		// The metadata log reaches a broker-only node over Raft, which no
		// client listener accepts (docs/cluster.md, "Peers and clients").
		ls, err := s.cfg.Listeners()
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(ls, func(l config.Listener) bool { return s.controllerNames[l.Name] }) {
			return fmt.Errorf("broker/server: process.roles=broker needs a listener named in controller.listener.names (%s) in listeners, to receive the metadata log on: the controllers send it there, and no client listener accepts it (e.g. listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093 with controller.listener.names=CONTROLLER)",
				strings.Join(s.cfg.List("controller.listener.names"), ","))
		}
	}
	return nil
}

// isControllerListener is whether a listener name is one of
// controller.listener.names.
func (s *Server) isControllerListener(name string) bool {
	return s.controllerNames[strings.ToUpper(name)]
}

func (s *Server) dirConfig(path string) log.DirConfig {
	c := log.DefaultDirConfig(path)
	c.Defaults = s.cfg.LogConfig(nil)
	c.CheckpointInterval = time.Duration(s.cfg.Int("log.flush.offset.checkpoint.interval.ms")) * time.Millisecond
	c.RetentionCheckInterval = time.Duration(s.cfg.Int("log.retention.check.interval.ms")) * time.Millisecond
	c.RecoveryThreads = int(s.cfg.Int("num.recovery.threads.per.data.dir"))
	c.CleanerBackoffNow = func() time.Duration {
		return time.Duration(s.cfg.Int("log.cleaner.backoff.ms")) * time.Millisecond
	}
	c.Logger = s.logger
	c.OnFlush = func(d time.Duration) { s.metrics.logFlush.Observe(d.Seconds()) }
	c.OnFailure = func(err error) { s.logDirFailed(path, err) }
	// Until the metadata is loaded, logs open with the broker defaults;
	// the partition manager then applies each topic's overrides.
	return c
}

// listen binds the listeners and returns the endpoints to advertise:
// advertised.listeners if set, else the bound addresses, so that a listener
// on port 0 advertises its real port. In a quorum the controller listeners
// also carry Raft (see cluster.RaftConns); client listeners never do, so
// that no client can speak to the quorum. A single node has no use for its
// controller listener and leaves it unbound.
func (s *Server) listen() ([]config.Listener, error) {
	ls, err := s.cfg.Listeners()
	if err != nil {
		return nil, err
	}
	advertised, err := s.cfg.AdvertisedListeners()
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		controller := s.controllerNames[l.Name]
		if controller && s.raftConns == nil {
			continue
		}
		ln, err := net.Listen("tcp", l.Addr())
		if err != nil {
			s.closeListeners()
			return nil, fmt.Errorf("broker/server: listen %s: %w", l, err)
		}
		acceptErrors := s.metrics.acceptErrors.WithLabelValues(l.Name)
		ln = newRetryListener(ln, l.Name, s.logger, acceptErrors.Inc)
		if controller {
			if l.Protocol == "PLAINTEXT" {
				// A secured controller listener takes Raft only after a
				// login, in the Kafka protocol (conn.raftUpgrade).
				ln = s.raftConns.Split(ln)
			}
			if !s.controller && s.raftListener == nil {
				rl := l
				rl.Port = ln.Addr().(*net.TCPAddr).Port
				if rl.Host == "" || rl.Host == "0.0.0.0" || rl.Host == "::" {
					if h, err := os.Hostname(); err == nil {
						rl.Host = h
					}
				}
				s.raftListener = &rl
			}
		}
		s.mu.Lock()
		s.listeners[l.Name] = ln
		s.controllerListeners[l.Name] = controller
		s.mu.Unlock()
		if !s.cfg.IsSet("advertised.listeners") {
			for i := range advertised {
				if advertised[i].Name == l.Name && advertised[i].Port == 0 {
					advertised[i].Port = ln.Addr().(*net.TCPAddr).Port
				}
			}
		}
	}
	return advertised, nil
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ln := range s.listeners {
		ln.Close()
	}
}

// Addr is the bound address of a listener (useful with port 0).
func (s *Server) Addr(listener string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ln, ok := s.listeners[listener]; ok {
		return ln.Addr().String()
	}
	return ""
}

// Ready is nil while every listener accepts connections, for /readyz:
// a listener that stopped for good (its accept failed with an error that
// retrying does not cure) makes the broker unready rather than silently
// deaf on that port.
func (s *Server) Ready() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, err := range s.stopped {
		return fmt.Errorf("listener %s stopped accepting: %w", name, err)
	}
	return nil
}

// ClusterID is the cluster's id from meta.properties.
func (s *Server) ClusterID() string { return s.clusterID }

func (s *Server) accept(name string, ln net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			// retryListener has retried what passes; this listener is
			// closed.
			if !s.closing.Load() {
				s.logger.Error("accept failed; the listener stops", "listener", name, "err", err)
				s.mu.Lock()
				s.stopped[name] = err
				s.mu.Unlock()
			}
			return
		}
		ip := remoteIP(nc)
		if s.connectionRate(name, ip, nc) {
			continue
		}
		uncount, refused := s.limits.admit(name, ip)
		if refused != "" {
			s.metrics.refusedConnections.WithLabelValues(name, refused).Inc()
			s.logger.Debug("connection refused", "listener", name, "remote", nc.RemoteAddr().String(), "limit", refused)
			nc.Close()
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
			// A fixed buffer, unless the setting is -1: the kernel's
			// autotuning (the receive side's default, see broker_defs.go).
			if n := s.cfg.Int("socket.send.buffer.bytes"); n > 0 {
				tc.SetWriteBuffer(int(n))
			}
			if n := s.cfg.Int("socket.receive.buffer.bytes"); n > 0 {
				tc.SetReadBuffer(int(n))
			}
		}
		nc = s.secure(name, nc)
		c := &conn{s: s, nc: nc, r: bufio.NewReaderSize(nc, 64<<10), listener: name,
			logger: s.logger.With("remote", nc.RemoteAddr().String(), "listener", name)}
		s.mu.Lock()
		if s.closing.Load() {
			s.mu.Unlock()
			uncount()
			nc.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.metrics.connectionsCreated.WithLabelValues(name).Inc()
		open := s.metrics.connections.WithLabelValues(name)
		open.Inc()
		go func() {
			defer s.wg.Done()
			defer open.Dec()
			defer uncount()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Shutdown stops accepting, lets in-flight requests finish (until ctx is
// done), then flushes every log, writes the checkpoints and the
// clean-shutdown marker, so that the next start scans nothing.
func (s *Server) Shutdown(ctx context.Context) error {
	s.controlledShutdown()
	s.mu.Lock()
	if !s.closing.Swap(true) {
		close(s.stopping)
	}
	for _, ln := range s.listeners {
		ln.Close()
	}
	// A connection waiting for its next request stops now; one in the
	// middle of a request finishes it first.
	for c := range s.conns {
		c.nc.SetReadDeadline(time.Now())
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		<-done
	}
	if s.txns != nil {
		s.txns.Stop()
	}
	s.peerConns.close()
	if s.groups != nil {
		s.groups.Stop()
	}
	if s.shares != nil {
		s.shares.Stop()
	}
	if s.shareState != nil {
		s.shareState.close()
	}
	if s.parts != nil {
		s.parts.StopReplication()
	}
	if s.tier != nil {
		s.tier.Close()
	}
	err := s.closeStorage()
	s.logger.Info("broker stopped", "clean", err == nil)
	return err
}

func (s *Server) closeStorage() error {
	var errs []error
	if s.parts != nil {
		// Producer state snapshots at the log end, so the next start
		// replays nothing.
		for _, p := range s.parts.All() {
			errs = append(errs, p.Close())
		}
		errs = append(errs, s.parts.WriteHighWatermarks())
	}
	if s.ctrl != nil {
		errs = append(errs, s.ctrl.Close())
	}
	for _, d := range s.dirs {
		errs = append(errs, d.Close())
	}
	s.dirs = nil
	return errors.Join(errs...)
}

// maintain expires idle idempotent producers (producer.id.expiration.ms)
// and snapshots producer state, until Shutdown.
func (s *Server) maintain() {
	defer s.wg.Done()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-s.stopping:
			return
		case <-tick.C:
			// Read at each tick: a dynamic broker config (KIP-226).
			expiration := time.Duration(s.cfg.Int("producer.id.expiration.ms")) * time.Millisecond
			for _, p := range s.parts.All() {
				if err := p.MaintainProducers(expiration); err != nil {
					s.logger.Warn("producer state maintenance", "partition", p.TP.String(), "err", err)
				}
			}
		}
	}
}
