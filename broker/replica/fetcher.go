package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/kwire"
)

// SecretTag is the tagged field of a replica's Fetch and OffsetForLeaderEpoch
// requests that carries the cluster's inter-broker secret (Image.Secret):
// a fetch that claims a replica id without it is refused, so that a client
// cannot read past the high watermark or pose as a follower and move the
// ISR (CVE-2018-1288). Kafka's own tags are small numbers; this one is far
// from them.
const SecretTag = 0x7472

// Transport is how this broker reaches the others and the controller.
type Transport struct {
	// Addr is where broker id serves other brokers.
	Addr func(id int32) (string, error)
	// Secret is the cluster's inter-broker secret, "" until it is made.
	Secret func() string
	// AlterISR asks the active controller for an ISR change.
	AlterISR func(cluster.ISRChange) error
	// MaxWait is how long a fetch waits at the leader for new records
	// (replica.fetch.wait.max.ms); MaxBytes is a partition's share of a
	// fetch (replica.fetch.max.bytes).
	MaxWait  time.Duration
	MaxBytes int32
	// Dial connects to a leader, authenticating as the inter-broker
	// listener asks (nil: kwire.Dial, PLAINTEXT).
	Dial func(ctx context.Context, addr, clientID string) (*kwire.Conn, error)
	// RemoteState reads from remote storage the state of a tiered
	// partition below the leader's local log start, localStart (tiered.go);
	// nil when this broker has no remote storage.
	RemoteState func(p *Partition, localStart int64) (RemoteState, error)
}

// fetcher copies the partitions this broker follows from one leader: one
// connection and one goroutine per leader, as Kafka's replica fetcher
// threads, so that a slow or paused leader delays only its own partitions.
type fetcher struct {
	m      *Manager
	leader int32

	mu    sync.Mutex
	parts map[*Partition]*fetchState

	changed chan struct{} // a partition was added: stop waiting
	stop    chan struct{}
	conn    *kwire.Conn

	// builds are the rebuilds from remote storage under way (tiered.go),
	// read from HDFS off this goroutine so that a slow or hung NameNode
	// never holds up the other partitions of this leader; only run's
	// goroutine uses the map.
	builds map[*Partition]*remoteBuild
}

// remoteBuild is one partition's read of its state from remote storage.
type remoteBuild struct {
	epoch int32
	done  chan struct{} // closed once st and err are set
	st    RemoteState
	err   error
}

// fetchState is a followed partition's progress under one leader epoch.
type fetchState struct {
	epoch     int32
	truncated bool // the log was truncated to where it agrees with this leader's
	// copyRemote: remote storage has no state this replica may start
	// from (ErrNoRemoteState), so it copies the remote range through a
	// fetch of v12, which the leader serves from remote storage.
	copyRemote bool
}

func newFetcher(m *Manager, leader int32) *fetcher {
	f := &fetcher{m: m, leader: leader, parts: map[*Partition]*fetchState{},
		changed: make(chan struct{}, 1), stop: make(chan struct{}), builds: map[*Partition]*remoteBuild{}}
	go f.run()
	return f
}

func (f *fetcher) add(p *Partition, epochChanged bool) {
	f.mu.Lock()
	st, ok := f.parts[p]
	if !ok || epochChanged || st.epoch != p.LeaderEpoch() {
		f.parts[p] = &fetchState{epoch: p.LeaderEpoch()}
	}
	f.mu.Unlock()
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// remove stops following p here; it reports whether none is left.
func (f *fetcher) remove(p *Partition) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.parts, p)
	return len(f.parts) == 0
}

func (f *fetcher) close() { close(f.stop) }

func (f *fetcher) snapshot() map[*Partition]fetchState {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[*Partition]fetchState, len(f.parts))
	for p, st := range f.parts {
		out[p] = *st
	}
	return out
}

// current reports whether p is still followed here under epoch.
func (f *fetcher) current(p *Partition, epoch int32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.parts[p]
	return ok && st.epoch == epoch && p.LeaderEpoch() == epoch
}

func (f *fetcher) markTruncated(p *Partition, epoch int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.parts[p]; ok && st.epoch == epoch {
		st.truncated = true
	}
}

func (f *fetcher) markCopyRemote(p *Partition, epoch int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.parts[p]; ok && st.epoch == epoch {
		st.copyRemote = true
	}
}

func (f *fetcher) redoTruncation(p *Partition, epoch int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.parts[p]; ok && st.epoch == epoch {
		st.truncated = false
	}
}

func (f *fetcher) run() {
	defer func() {
		if f.conn != nil {
			f.conn.Close()
		}
	}()
	backoff := 50 * time.Millisecond
	for {
		select {
		case <-f.stop:
			return
		default:
		}
		parts := f.snapshot()
		var err error
		progressed := false
		if len(parts) > 0 {
			progressed, err = f.round(parts)
		}
		if err != nil {
			f.m.logger.Debug("replica fetch", "leader", f.leader, "err", err)
			if f.conn != nil {
				f.conn.Close()
				f.conn = nil
			}
		}
		if err == nil && progressed {
			backoff = 50 * time.Millisecond
			continue
		}
		// Nothing to do, or the leader refused or could not be reached:
		// wait for a change rather than spin.
		wait := time.Duration(0)
		if len(parts) == 0 {
			wait = time.Hour
		} else if err != nil || !progressed {
			wait = backoff
			backoff = min(backoff*2, time.Second)
		}
		t := time.NewTimer(wait)
		select {
		case <-f.stop:
			t.Stop()
			return
		case <-f.changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// round truncates the partitions new to a leader epoch, then fetches once.
// It reports whether a partition moved on (or the fetch waited at the
// leader), so that an idle round is retried at once.
func (f *fetcher) round(parts map[*Partition]fetchState) (bool, error) {
	tr := f.m.transport
	secret := tr.Secret()
	if secret == "" {
		return false, errors.New("the cluster has no inter-broker secret yet")
	}
	if f.conn == nil {
		addr, err := tr.Addr(f.leader)
		if err != nil {
			return false, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		dial := kwire.Dial
		if tr.Dial != nil {
			dial = tr.Dial
		}
		f.conn, err = dial(ctx, addr, fmt.Sprintf("tributary-replica-%d", f.m.nodeID))
		cancel()
		if err != nil {
			return false, err
		}
	}
	var toTruncate []*Partition
	for p, st := range parts {
		if !st.truncated {
			toTruncate = append(toTruncate, p)
		}
	}
	if len(toTruncate) > 0 {
		if err := f.truncate(toTruncate, parts, secret); err != nil {
			return false, err
		}
		parts = f.snapshot()
	}
	return f.fetch(parts, secret)
}

// truncate asks the leader where each partition's last epoch ends in its log
// and truncates ours there (KIP-101, KIP-279).
func (f *fetcher) truncate(ps []*Partition, parts map[*Partition]fetchState, secret string) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(4)
	req.ReplicaID = f.m.nodeID
	req.UnknownTags.Set(SecretTag, []byte(secret))
	topics := kwire.NewTopics(&req.Topics, func(name string) kmsg.OffsetForLeaderEpochRequestTopic {
		t := kmsg.NewOffsetForLeaderEpochRequestTopic()
		t.Topic = name
		return t
	})
	asked := byTP{}
	for _, p := range ps {
		last := p.lastEpoch()
		if last < 0 {
			f.markTruncated(p, parts[p].epoch) // an empty log has nothing to diverge
			continue
		}
		rt := topics.Slot(p.TP.Topic)
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p.TP.Partition, parts[p].epoch, last
		rt.Partitions = append(rt.Partitions, rp)
		asked.add(p)
	}
	if len(req.Topics) == 0 {
		return nil
	}
	resp, err := f.conn.RoundTrip(req, 10*time.Second)
	if err != nil {
		return err
	}
	for _, rt := range resp.(*kmsg.OffsetForLeaderEpochResponse).Topics {
		for _, rp := range rt.Partitions {
			p, ok := asked.get(rt.Topic, rp.Partition)
			if !ok || rp.ErrorCode != 0 {
				continue // retried in the next round, with newer metadata
			}
			epoch := parts[p].epoch
			if !f.current(p, epoch) {
				continue
			}
			if err := p.TruncateTo(p.divergence(rp.LeaderEpoch, rp.EndOffset)); err != nil {
				// Left untruncated, so unfetched, and tried again
				// next round: the leader's other partitions go on.
				p.logger.Warn("truncating to the leader's log", "error", err)
				continue
			}
			f.markTruncated(p, epoch)
		}
	}
	return nil
}

// fetch copies new batches of the truncated partitions from the leader.
func (f *fetcher) fetch(parts map[*Partition]fetchState, secret string) (bool, error) {
	tr := f.m.transport
	req := kmsg.NewPtrFetchRequest()
	// v14 (topic ids from v13) is the version whose answer to a fetch
	// below a tiered leader's local log start is OFFSET_MOVED_TO_TIERED_
	// STORAGE: this follower then rebuilds its state from remote storage
	// rather than copy the remote range. A partition whose topic id is not
	// known here yet keeps the round at v12, by name, as does one that
	// must copy the remote range (no remote storage on this broker, or no
	// state in it to start from): the leader serves it that range.
	req.SetVersion(14)
	for p, st := range parts {
		if st.truncated && (p.TopicID == (cluster.TopicID{}) || st.copyRemote || tr.RemoteState == nil) {
			req.SetVersion(12)
		}
	}
	for p := range f.builds {
		if _, ok := parts[p]; !ok && f.buildDone(p) {
			delete(f.builds, p) // no longer followed here
		}
	}
	byID := req.Version >= 13
	req.ReplicaID = f.m.nodeID
	req.MaxWaitMillis = int32(tr.MaxWait.Milliseconds())
	req.MinBytes, req.MaxBytes = 1, 64<<20
	req.SessionEpoch = -1
	req.UnknownTags.Set(SecretTag, []byte(secret))
	topics := kwire.NewTopics(&req.Topics, func(name string) kmsg.FetchRequestTopic {
		t := kmsg.NewFetchRequestTopic()
		if !byID {
			t.Topic = name
		}
		return t
	})
	asked := byTP{}
	throttled := map[*Partition]bool{}
	var quotaWait time.Duration // until the follower quota allows the partitions left out
	for p, st := range parts {
		if !st.truncated {
			continue
		}
		if th, wait := f.m.followerThrottled(p); th {
			if wait > 0 {
				if quotaWait == 0 || wait < quotaWait {
					quotaWait = wait
				}
				continue
			}
			throttled[p] = true
		}
		rt := topics.Slot(p.TP.Topic)
		if byID {
			rt.TopicID = p.TopicID
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch = p.TP.Partition, st.epoch
		rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes = p.Log.LogEndOffset(), p.Log.LogStartOffset(), tr.MaxBytes
		rp.LastFetchedEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
		asked.add(p)
	}
	if len(req.Topics) == 0 {
		if quotaWait > 0 {
			// Every partition waits for the quota: sleep until it allows
			// one, not the idle backoff, so that the rate is the one set.
			t := time.NewTimer(min(quotaWait, tr.MaxWait))
			defer t.Stop()
			select {
			case <-f.stop:
			case <-f.changed:
			case <-t.C:
			}
			return true, nil
		}
		return false, nil
	}
	start := time.Now()
	resp, err := f.conn.RoundTripReusing(req, tr.MaxWait+15*time.Second)
	if err != nil {
		return false, err
	}
	r := resp.(*kmsg.FetchResponse)
	if r.ErrorCode != 0 {
		return false, fmt.Errorf("leader %d refused the fetch: %w", f.leader, kerr.ErrorForCode(r.ErrorCode))
	}
	progressed := time.Since(start) >= tr.MaxWait/2
	names := map[[16]byte]string{}
	if byID {
		for p := range parts {
			names[p.TopicID] = p.TP.Topic
		}
	}
	for _, rt := range r.Topics {
		name := rt.Topic
		if byID {
			name = names[rt.TopicID]
		}
		for _, rp := range rt.Partitions {
			p, ok := asked.get(name, rp.Partition)
			if !ok {
				continue
			}
			epoch := parts[p].epoch
			if !f.current(p, epoch) {
				continue
			}
			switch rp.ErrorCode {
			case 0:
			case kerr.OffsetMovedToTieredStorage.Code:
				switch done, err := f.buildFromRemote(p, epoch, secret); {
				case err != nil:
					// Retried at the next round, after the idle backoff.
					f.m.logger.Warn("replica fetch: rebuilding from remote storage failed", "partition", p.TP.String(), "leader", f.leader, "err", err)
				case done:
					progressed = true
				}
				continue
			case kerr.OffsetOutOfRange.Code:
				if p.Log.LogEndOffset() < rp.LogStartOffset {
					if err := p.ResetTo(rp.LogStartOffset); err != nil {
						return false, fmt.Errorf("restarting %s at %d: %w", p.TP, rp.LogStartOffset, err)
					}
					progressed = true
				} else {
					// Past the leader's end: a divergence the epochs
					// did not show; ask again where the logs agree.
					f.redoTruncation(p, epoch)
				}
				continue
			default:
				continue // NOT_LEADER, FENCED_LEADER_EPOCH...: wait for the metadata
			}
			batches := wholeBatches(rp.RecordBatches)
			if throttled[p] {
				f.m.recordFollowerThrottled(int64(len(batches)))
			}
			if err := p.AppendFetched(batches, rp.HighWatermark, rp.LogStartOffset); err != nil {
				return false, fmt.Errorf("appending to %s: %w", p.TP, err)
			}
			if len(batches) > 0 {
				progressed = true
			}
		}
	}
	return progressed, nil
}

// byTP are the partitions a request named, to find them in its response.
type byTP map[log.TopicPartition]*Partition

func (a byTP) add(p *Partition) { a[p.TP] = p }

func (a byTP) get(topic string, partition int32) (*Partition, bool) {
	p, ok := a[log.TopicPartition{Topic: topic, Partition: partition}]
	return p, ok
}

// wholeBatches drops a partial batch at the end of a fetched range: the
// leader cuts its reads at the byte limit, wherever that falls.
func wholeBatches(data []byte) []byte {
	n := 0
	for rest := data; ; {
		b, r, ok := record.Split(rest)
		if !ok {
			break
		}
		n += len(b)
		rest = r
	}
	return data[:n]
}

// buildFromRemote starts a tiered partition's log at its leader's local log
// start, with the state of the remote range below it read from remote
// storage (tiered.go), after the leader answered OFFSET_MOVED_TO_TIERED_STORAGE.
// The remote read runs on its own goroutine: done is false while it is
// under way, and a later round (the leader answers the same) applies it.
func (f *fetcher) buildFromRemote(p *Partition, epoch int32, secret string) (done bool, err error) {
	tr := f.m.transport
	if tr.RemoteState == nil {
		// Fetched at v12 from now on (only a v14 fetch is answered so).
		f.markCopyRemote(p, epoch)
		return false, errors.New("the leader's log starts in remote storage, and this broker has none (remote.log.storage.system.enable): copying it")
	}
	b := f.builds[p]
	if b != nil && b.epoch != epoch && !f.buildDone(p) {
		// An older epoch's read still runs (a hung NameNode): one at a
		// time per partition, rather than one more per epoch change.
		return false, nil
	}
	if b == nil || b.epoch != epoch {
		localStart, err := f.leaderLocalStart(p, epoch, secret)
		if err != nil {
			return false, err
		}
		b = &remoteBuild{epoch: epoch, done: make(chan struct{})}
		f.builds[p] = b
		go func() {
			b.st, b.err = tr.RemoteState(p, localStart)
			close(b.done)
			select {
			case f.changed <- struct{}{}:
			default:
			}
		}()
		f.m.logger.Info("replica fetch: the leader's log starts in remote storage; rebuilding from it",
			"partition", p.TP.String(), "leader", f.leader, "leader_local_log_start", localStart, "log_end_offset", p.Log.LogEndOffset())
	}
	select {
	case <-b.done:
	default:
		return false, nil
	}
	delete(f.builds, p)
	if errors.Is(b.err, ErrNoRemoteState) {
		f.markCopyRemote(p, epoch)
		f.m.logger.Warn("replica fetch: remote storage has no state to start from; copying the remote range from the leader",
			"partition", p.TP.String(), "leader", f.leader, "err", b.err)
		return true, nil
	}
	if b.err != nil {
		return false, b.err
	}
	if !f.current(p, epoch) {
		return false, nil
	}
	return true, p.RebuildFromRemote(b.st)
}

// buildDone reports whether p's read from remote storage has finished.
func (f *fetcher) buildDone(p *Partition) bool {
	select {
	case <-f.builds[p].done:
		return true
	default:
		return false
	}
}

// leaderLocalStart asks the leader its local log start (ListOffsets v8,
// EARLIEST_LOCAL), as Kafka's fetchEarliestLocalOffset.
func (f *fetcher) leaderLocalStart(p *Partition, epoch int32, secret string) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(8)
	req.ReplicaID = f.m.nodeID
	req.UnknownTags.Set(SecretTag, []byte(secret))
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = p.TP.Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = p.TP.Partition, epoch, -4
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := f.conn.RoundTrip(req, 10*time.Second)
	if err != nil {
		return 0, err
	}
	for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
		for _, lp := range t.Partitions {
			if t.Topic != p.TP.Topic || lp.Partition != p.TP.Partition {
				continue
			}
			if lp.ErrorCode != 0 {
				return 0, fmt.Errorf("the leader's local log start: %w", kerr.ErrorForCode(lp.ErrorCode))
			}
			if lp.Offset <= 0 {
				return 0, fmt.Errorf("the leader answered local log start %d", lp.Offset)
			}
			return lp.Offset, nil
		}
	}
	return 0, errors.New("the leader did not answer for its local log start")
}
