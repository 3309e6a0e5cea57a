package replica

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/producer"
	"github.com/tributary-io/tributary/broker/record"
)

// Partition is one partition hosted by this broker.
//
// Appends are serialized by appendMu, which also guards the producer state,
// because checking a batch's sequence, appending it and recording it must be
// one step. Reads go straight to the log, which needs no lock.
type Partition struct {
	TP      log.TopicPartition
	TopicID cluster.TopicID
	Log     *log.Log
	self    int32 // this broker's node id

	leaderEpoch atomic.Int32
	hw          atomic.Int64
	// applied is the log end the producer and transaction state have
	// taken in. The high watermark never passes it: a consumer woken by
	// followers that fetched a transactional batch before the append that
	// wrote it recorded its open transaction would be served it under an
	// LSO that does not know the transaction. Kafka moves the high
	// watermark under the log lock its appends hold for the same reason.
	applied atomic.Int64

	// Whether replication of this partition is throttled here, from the
	// topic's throttled-replicas lists (throttle.go).
	leaderThrottled, followerThrottled atomic.Bool

	// Replication state, from the metadata and the followers' fetches.
	stateMu   sync.Mutex
	meta      cluster.Partition   // as last applied; stateMu
	followers map[int32]*follower // while leading; stateMu
	hwWake    chan struct{}       // closed when the high watermark moves or leadership changes; stateMu
	hwWakeOut bool                // hwWake was handed out; stateMu
	isrBusy   bool                // an ISR change is on its way to the controller; stateMu
	// joining are the followers an ISR change on its way, or accepted but
	// not in the metadata yet, adds: the high watermark waits for them as
	// for the ISR (Kafka's maximal ISR), or a joiner the controller made
	// eligible could lack records the high watermark passed. stateMu
	joining  []int32
	proposed []int32 // the joiners of the change on its way; stateMu
	minISR   int     // min.insync.replicas, at most the replication factor; stateMu

	appendMu  sync.Mutex
	producers *producer.State
	guards    map[int64]*VerificationGuard // appendMu; txn.go
	txns      txnState                     // the LSO and the aborted index (txn.go); its own lock
	now       func() time.Time

	// Producer snapshots: snapMu serializes the snapshot files and is taken
	// before appendMu, which a snapshot holds only while it encodes the
	// state, never while it writes the file.
	snapMu   sync.Mutex
	snaps    *producer.Snapshots // snapMu
	snapSegs int                 // the log's segment count at the last snapshot; snapMu
	snapSize int64               // the log's size at the last snapshot; snapMu
	closed   bool                // Close was called; snapMu
	logger   *slog.Logger
}

// Producer snapshots: when a partition takes them and how many it keeps.
const (
	// keepSnapshots is how many producer snapshots a partition keeps: the
	// newest, and older ones to fall back on if it is corrupt.
	keepSnapshots = 3
	// snapshotEveryBytes: MaintainProducers takes a snapshot when the log
	// grew by this much since the last one, so that a crash never leaves
	// more than this (plus one maintenance interval's appends) to replay.
	snapshotEveryBytes = 64 << 20
)

// newPartition opens a hosted partition; its owner applies meta to it
// (applyMeta) before anyone else sees it.
func newPartition(tp log.TopicPartition, id cluster.TopicID, l *log.Log, self int32, meta cluster.Partition, savedHW int64, logger *slog.Logger) (*Partition, error) {
	if logger == nil {
		logger = slog.Default()
	}
	p := &Partition{TP: tp, TopicID: id, Log: l, self: self, now: time.Now, logger: logger.With("partition", tp.String()),
		hwWake: make(chan struct{})}
	snaps, err := producer.OpenSnapshots(l.Dir(), p.logger)
	if err != nil {
		return nil, err
	}
	p.snaps = snaps
	if err := p.resumeRebuild(); err != nil { // tiered.go
		return nil, err
	}
	// Without a replica the log end is committed. With replicas, what the
	// others have is unknown until they fetch (as leader) or the leader
	// says (as follower): start from the last run's high watermark (savedHW,
	// -1 for none), within the log, never above the truth.
	if len(meta.Replicas) <= 1 {
		p.hw.Store(l.LogEndOffset())
	} else {
		p.hw.Store(min(max(savedHW, l.LogStartOffset()), l.LogEndOffset()))
	}
	if err := p.rebuildProducers(); err != nil {
		return nil, err
	}
	l.SetTxnView(&log.TxnView{Stable: p.LastStableOffset, Aborted: p.abortedAt, Producers: p.lastBatches,
		OpenInSnapshots: p.openInSnapshots, ForgetAborted: p.forgetAborted})
	return p, nil
}

// rebuildProducers loads the producer state from the newest usable snapshot
// at or below the log end, deleting those past it and corrupt ones, and
// replays into it the headers of the batches the log holds after the
// snapshot (from the log start without one): Kafka's truncateAndReload and
// loadProducersFromRecords. A follower must call it after truncating its
// log. snapMu and appendMu must be held, or p not yet shared.
func (p *Partition) rebuildProducers() error {
	st, from, err := p.snaps.Load(p.Log.LogStartOffset(), p.Log.LogEndOffset())
	if err != nil {
		return fmt.Errorf("broker/replica: load producer state of %s: %w", p.TP, err)
	}
	if err := p.loadTxnIndexLocked(from); err != nil {
		return fmt.Errorf("broker/replica: load transaction index of %s: %w", p.TP, err)
	}
	replayed := 0
	var done []producer.CompletedTxn
	err = p.Log.ScanHeaders(from, func(h record.Batch) error {
		b, err := p.replayBatch(h)
		if err != nil {
			return err
		}
		if c := st.Replay(b); c != nil {
			done = append(done, *c)
		}
		replayed++
		return nil
	})
	if err != nil {
		return fmt.Errorf("broker/replica: replay producer state of %s: %w", p.TP, err)
	}
	p.producers = st
	p.txnsChangedLocked(done, true)
	p.applied.Store(p.Log.LogEndOffset())
	p.snapSegs, p.snapSize = p.Log.SegmentCount(), p.Log.Size()
	if replayed > 0 {
		// The newest snapshot is behind the log: take one at the next
		// MaintainProducers so that another crash replays less.
		p.snapSegs = 0
		p.logger.Info("producer state recovered", "snapshot_offset", from, "replayed_batches", replayed,
			"log_end_offset", p.Log.LogEndOffset(), "producers", st.Len())
	}
	return nil
}

// LeaderEpoch is the partition's current leader epoch.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch.Load() }

// leading says whether this broker leads the partition, by the metadata
// last applied, and under which leader epoch.
func (p *Partition) leading() (int32, bool) {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	return p.meta.LeaderEpoch, p.meta.Leader == p.self
}

// HighWatermark is the offset below which records are committed: visible
// to consumers and never truncated.
func (p *Partition) HighWatermark() int64 { return p.hw.Load() }

// AppendResult is what a produce answers for one partition.
type AppendResult struct {
	BaseOffset     int64
	LastOffset     int64 // the acks=all produce waits until it is committed
	LogAppendTime  int64
	LogStartOffset int64
	Records        int64 // appended now; 0 for a duplicate
	Duplicate      bool
}

// AppendAsLeader appends a producer's batches. A retried batch of an
// idempotent producer is answered with the offsets it got the first time.
func (p *Partition) AppendAsLeader(batches []byte) (AppendResult, error) {
	return p.AppendAsLeaderWithin(batches, nil)
}

// AppendAsLeaderWithin is AppendAsLeader for a producer's request, whose
// batches' decompression is spent from budget (see record.Budget).
func (p *Partition) AppendAsLeaderWithin(batches []byte, budget *record.Budget) (AppendResult, error) {
	return p.appendAsLeader(batches, budget, false, nil)
}

// appendAsLeader is AppendAsLeaderWithin; a transactional produce's
// batches (txn) must belong to their producer's open transaction or
// carry the guard of their verification (see AppendTxnAsLeader).
func (p *Partition) appendAsLeader(batches []byte, budget *record.Budget, txn bool, guard *VerificationGuard) (AppendResult, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	// Leadership is checked here, under the append lock, and not only
	// where the caller looked the partition up: a transactional produce's
	// verification or Produce v12 add can take a replicated write or a
	// round trip, and a broker deposed meanwhile must not write a batch
	// the new leader lacks, stamped with the new leader's epoch, into what
	// is now a follower's log (Kafka appends under leaderIsrUpdateLock).
	// The epoch read with the check is the one the batch is stamped with.
	epoch, leads := p.leading()
	if !leads {
		return AppendResult{}, kerr.NotLeaderForPartition
	}
	first, _, ok := record.Split(batches)
	if !ok {
		return AppendResult{}, &record.Error{Kafka: kerr.CorruptMessage, Reason: "records are not a whole batch"}
	}
	if txn {
		if err := p.checkGuardLocked(first, guard); err != nil {
			return AppendResult{}, err
		}
	}
	// Idempotent producers send one batch per partition per request, so the
	// first batch decides whether the request is a retry.
	dup, err := p.producers.Check(first)
	if err != nil {
		return AppendResult{}, err
	}
	if dup != nil {
		return AppendResult{BaseOffset: dup.FirstOffset, LastOffset: dup.LastOffset, LogAppendTime: -1, LogStartOffset: p.Log.LogStartOffset(), Duplicate: true}, nil
	}
	info, err := p.Log.AppendAsLeaderWithin(batches, epoch, budget)
	if err != nil {
		return AppendResult{}, err
	}
	p.applyLocked(batches, p.now().UnixMilli())
	if txn {
		delete(p.guards, first.ProducerID()) // its transaction is open now
	}
	p.advanceHW()
	return AppendResult{BaseOffset: info.FirstOffset, LastOffset: info.LastOffset, LogAppendTime: info.LogAppendTime, LogStartOffset: p.Log.LogStartOffset(), Records: info.Records}, nil
}

// ExpireProducers drops producer state idle for longer than d
// (producer.id.expiration.ms). MaintainProducers calls it.
func (p *Partition) ExpireProducers(d time.Duration) int {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.producers.Expire(p.now().Add(-d).UnixMilli())
}

// MaintainProducers is the partition's periodic producer-state work: the
// server calls it for every hosted partition on one ticker. It expires
// producers idle for longer than expiration (producer.id.expiration.ms),
// writes a producer snapshot at the log end when one is due, and keeps at
// most keepSnapshots of them, none below the log start (except the newest).
//
// Kafka snapshots when the log rolls a segment; our log has no roll hook, so
// a snapshot is due here when, since the last one, the log rolled or deleted
// a segment (its segment count changed), grew by snapshotEveryBytes, or
// moved its start past it, or when the partition has data but no snapshot.
// Each check is a few atomic loads; when nothing was appended nothing is
// written. A snapshot is only a shortcut: recovery replays the log from it,
// so how stale it is bounds the replay, never the correctness.
func (p *Partition) MaintainProducers(expiration time.Duration) error {
	p.ExpireProducers(expiration)
	p.pruneAborted()
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	if p.closed {
		return nil
	}
	if p.snapshotDueLocked() {
		if err := p.snapshotLocked(); err != nil {
			return err
		}
	}
	return p.snaps.Retain(p.Log.LogStartOffset(), keepSnapshots)
}

// Close writes a producer snapshot at the log end, so that the next start
// loads it and replays nothing. The server calls it for every partition
// before it closes the log dirs. It does not close the log (the log dir owns
// it); appends after Close stay correct, since a later start replays them,
// but MaintainProducers does nothing any more.
func (p *Partition) Close() error {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if err := p.snapshotLocked(); err != nil {
		return err
	}
	return p.snaps.Retain(p.Log.LogStartOffset(), keepSnapshots)
}

// snapshotBaseLocked is the offset the producer state on disk reaches: that
// of the newest snapshot, or the log start without one. snapMu must be held.
func (p *Partition) snapshotBaseLocked() (int64, bool) {
	if latest, ok := p.snaps.Latest(); ok {
		return latest, true
	}
	return p.Log.LogStartOffset(), false
}

// snapshotDueLocked says whether MaintainProducers should take a snapshot.
// snapMu must be held.
func (p *Partition) snapshotDueLocked() bool {
	base, ok := p.snapshotBaseLocked()
	if p.Log.LogEndOffset() <= base {
		return false
	}
	return !ok || base < p.Log.LogStartOffset() ||
		p.Log.SegmentCount() != p.snapSegs || p.Log.Size()-p.snapSize >= snapshotEveryBytes
}

// snapshotLocked writes a snapshot of the producer state at the log end,
// unless the state on disk already reaches it. snapMu must be held.
func (p *Partition) snapshotLocked() error {
	p.appendMu.Lock()
	end := p.Log.LogEndOffset() // every append goes through appendMu
	base, _ := p.snapshotBaseLocked()
	var data []byte
	if end > base {
		data = producer.EncodeSnapshot(p.producers)
	}
	p.appendMu.Unlock()
	if data == nil {
		return nil
	}
	if err := p.snaps.Write(end, data); err != nil {
		return fmt.Errorf("broker/replica: %s: %w", p.TP, err)
	}
	p.snapSegs, p.snapSize = p.Log.SegmentCount(), p.Log.Size()
	return nil
}

// KafkaError maps an error from this package, the log or the record
// validator to the Kafka error to answer with. A failed read or write of a
// log file (a full disk, an I/O error) is KAFKA_STORAGE_ERROR, as in Kafka,
// which producers retry, rather than UNKNOWN_SERVER_ERROR, which they do
// not.
func KafkaError(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	var pe *fs.PathError
	switch {
	case errors.As(err, &ke):
		return ke
	case errors.Is(err, log.ErrClosed):
		return kerr.NotLeaderForPartition
	case errors.As(err, &pe):
		return kerr.KafkaStorageError
	}
	return kerr.UnknownServerError
}

func (p *Partition) String() string { return fmt.Sprintf("%s (epoch %d)", p.TP, p.LeaderEpoch()) }
