package server

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/replica"
	"github.com/tributary-io/tributary/broker/tier"
)

// Tiered storage (broker/tier, docs/tiered-storage.md): the server starts
// the tier manager, tells it which partitions it leads with
// remote.storage.enable, and sends it the fetches and ListOffsets that
// reach below the local log start.

// startTier starts the tier manager when remote.log.storage.system.enable
// is on (config's cross checks made sure rsm.config.storage.uri is set).
// The store is opened by the manager, and reopened while it is not
// reachable: a broker starts whether HDFS is up or not.
//
// The manager itself is made earlier (newTier), before the replica
// fetchers start and the listeners serve: both read s.tier.
func (s *Server) startTier() {
	if s.tier == nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.tier.Run(s.stopping, s.tierTargets, func(id string) bool {
			for tid := range s.ctrl.Image().ByID {
				if tid.String() == id {
					return true
				}
			}
			return false
		})
	}()
}

// newTier makes the tier manager when remote.log.storage.system.enable is
// on; startTier runs it.
func (s *Server) newTier() {
	if !s.cfg.Bool("remote.log.storage.system.enable") {
		return
	}
	ms := func(name string) time.Duration { return time.Duration(s.cfg.Int(name)) * time.Millisecond }
	s.tier = tier.New(tier.Config{
		URI:        s.cfg.String("rsm.config.storage.uri"),
		User:       s.cfg.String("rsm.config.storage.hdfs.user"),
		NodeID:     s.nodeID,
		Interval:   time.Duration(s.cfg.Int("remote.log.manager.task.interval.ms")) * time.Millisecond,
		CacheBytes: s.cfg.Int("rsm.config.fetch.chunk.cache.size"),
		Grace:      time.Duration(s.cfg.Int("rsm.config.storage.cleanup.grace.ms")) * time.Millisecond,
		Logger:     s.logger,
		// The deadlines (docs/tiered-storage.md, "Deadlines").
		PassTimeout:        ms("tributary.tier.pass.timeout.ms"),
		CallTimeout:        ms("tributary.tier.delete.records.timeout.ms"),
		ChunkTimeout:       ms("rsm.config.fetch.chunk.timeout.ms"),
		ListOffsetsTimeout: ms("remote.list.offsets.request.timeout.ms"),
		IOTimeout:          ms("rsm.config.storage.hdfs.io.timeout.ms"),
	})
}

// tierTargets are the partitions of tiered topics this broker holds: the
// ones it leads, which it uploads, and the ones it follows, whose remote
// metadata it reads for local retention.
func (s *Server) tierTargets() []tier.Target {
	img := s.ctrl.Image()
	var out []tier.Target
	for _, p := range s.parts.All() {
		t, ok := img.Topics[p.TP.Topic]
		if !ok || t.Internal() || int(p.TP.Partition) >= len(t.Partitions) {
			continue
		}
		if cfg := p.Log.Config(); !cfg.RemoteStorage || cfg.Compact {
			continue
		}
		out = append(out, tier.Target{TP: p.TP, TopicID: cluster.TopicID(t.ID).String(), Log: p.Log,
			LeaderEpoch: p.LeaderEpoch(), Bound: min(p.LastStableOffset(), p.HighWatermark()),
			Follower: t.Partitions[p.TP.Partition].Leader != s.nodeID, ProducerSnapshot: p.ProducerSnapshotAt})
	}
	return out
}

// logStartOffset is the partition's log start offset, remote storage
// included.
func (s *Server) logStartOffset(p *replica.Partition) int64 {
	local := p.Log.LogStartOffset()
	if s.tier != nil {
		if start, ok := s.tier.LogStart(p.TP); ok && start < local {
			return start
		}
	}
	return local
}

// movedToTiered is whether a replica fetch at offset asks for what only
// remote storage holds (Kafka's OffsetMovedToTieredStorageException): below
// the local log start, at or above the remote one.
func (s *Server) movedToTiered(p *replica.Partition, offset int64) bool {
	if s.tier == nil || !p.Log.Config().RemoteStorage || offset >= p.Log.LogStartOffset() {
		return false
	}
	start, ok := s.tier.LogStart(p.TP)
	return ok && offset >= start
}

// remotePending is a remote read whose bytes are on their way: the fetch
// waits on wake (with its other wake-ups) and reads again.
type remotePending struct{ wake <-chan struct{} }

func (remotePending) Error() string { return "broker/server: remote read in progress" }

// remoteWait is the channel of a pending remote read.
func remoteWait(err error) (<-chan struct{}, bool) {
	var rp remotePending
	if errors.As(err, &rp) {
		return rp.wake, true
	}
	return nil, false
}

// readRemote serves a fetch offset below the local log start from remote
// storage. handled is false when remote storage does not hold it either,
// and the local read's error stands.
//
// A read_committed fetch is told the aborted transactions of the uploaded
// .txnindex files as well as the local ones: the in-memory list of the
// partition no longer names those of segments local retention removed.
func (s *Server) readRemote(p *replica.Partition, offset, limit int64, first, readCommitted bool, sp *kmsg.FetchResponseTopicPartition) (n int64, handled bool, err error) {
	if s.tier == nil || offset >= p.Log.LogStartOffset() {
		return 0, false, nil
	}
	data, wait, err := s.tier.Read(p.TP, offset, max(limit, 0), first)
	switch {
	case errors.Is(err, tier.ErrNotRemote):
		return 0, false, nil
	case err != nil:
		return 0, true, err
	case wait != nil:
		return 0, true, remotePending{wait}
	}
	if len(data) > 0 && readCommitted {
		aborted, wait, err := s.tier.AbortedTxns(p.TP, offset, lastOffset(data)+1)
		switch {
		case err != nil:
			return 0, true, err
		case wait != nil:
			return 0, true, remotePending{wait}
		}
		seen := map[[2]int64]bool{}
		for _, a := range sp.AbortedTransactions {
			seen[[2]int64{a.ProducerID, a.FirstOffset}] = true
		}
		for _, a := range aborted {
			if !seen[[2]int64{a.ProducerID, a.FirstOffset}] {
				seen[[2]int64{a.ProducerID, a.FirstOffset}] = true
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
				sp.AbortedTransactions = append(sp.AbortedTransactions, at)
			}
		}
	}
	if len(data) > 0 {
		sp.RecordBatches = data
	}
	return int64(len(data)), true, nil
}

// lastOffset is the last offset of the last of whole batches.
func lastOffset(data []byte) int64 {
	last := int64(-1)
	for rest := data; len(rest) >= record.LogOverhead; {
		size := record.LogOverhead + int(int32(binary.BigEndian.Uint32(rest[8:12])))
		if size > len(rest) || size < record.HeaderSize {
			break
		}
		last = record.Batch(rest[:size]).LastOffset()
		rest = rest[size:]
	}
	return last
}

// listOffsetTier answers ListOffsets' EARLIEST (-2) with the log start
// counting remote storage, EARLIEST_LOCAL (-4) with the local one,
// LATEST_TIERED (-5) with the last remote offset, and a timestamp that a
// remote segment below the local log start holds from remote storage; ok
// is false for the others, which the local log answers.
func (s *Server) listOffsetTier(p *replica.Partition, ts int64, wait time.Duration, sp *kmsg.ListOffsetsResponseTopicPartition) bool {
	switch ts {
	case earliestTimestamp:
		sp.LeaderEpoch, sp.Offset = p.LeaderEpoch(), s.logStartOffset(p)
		return true
	case earliestLocalTimestamp:
		sp.LeaderEpoch, sp.Offset = p.LeaderEpoch(), p.Log.LogStartOffset()
		return true
	case latestTieredTimestamp:
		// KIP-1005: the highest offset in remote storage; -1 for none,
		// and with no leader epoch when the partition is not tiered.
		sp.Offset = -1
		if s.tier != nil {
			end, err := s.tier.UploadedEnd(p.TP)
			switch {
			case err != nil:
				sp.LeaderEpoch, sp.ErrorCode = p.LeaderEpoch(), kafkaCode(err)
			case end > 0:
				sp.LeaderEpoch, sp.Offset = p.LeaderEpoch(), end-1
			}
		}
		return true
	case earliestPendingUploadTimestamp:
		// KIP-1023 (UnifiedLog.fetchEarliestPendingUploadOffset): one
		// past the last remote offset, at least the log start; with
		// nothing uploaded, the log start if nothing was ever tiered
		// (local start = log start), else -1 (not known yet); -1 for a
		// partition that is not tiered. Before the tier manager has
		// loaded the remote metadata (a restart, a new leader) the log
		// start counting remote storage is not known either: -1, as
		// Kafka answers after a restart, never the local start, which
		// may lie far below what is still to upload.
		sp.Offset, sp.LeaderEpoch = -1, -1
		if s.tier == nil || !p.Log.Config().RemoteStorage {
			return true
		}
		end, err := s.tier.UploadedEnd(p.TP)
		switch {
		case err != nil:
			sp.LeaderEpoch, sp.ErrorCode = p.LeaderEpoch(), kafkaCode(err)
		case end > 0:
			sp.LeaderEpoch, sp.Offset = p.LeaderEpoch(), max(end, s.logStartOffset(p))
		case !s.tier.Loaded(p.TP):
		case s.logStartOffset(p) == p.Log.LogStartOffset():
			sp.LeaderEpoch, sp.Offset = p.LeaderEpoch(), p.Log.LogStartOffset()
		}
		return true
	}
	if ts < 0 || s.tier == nil {
		return false
	}
	// By timestamp: the remote segments below the local log start
	// answer first, as they hold the older records; the local log
	// answers when none of them has a record as recent as ts.
	o, t, ok, err := s.tier.OffsetForTimestampWithin(p.TP, ts, p.Log.LogStartOffset(), wait)
	switch {
	case err != nil:
		sp.LeaderEpoch, sp.ErrorCode = p.LeaderEpoch(), kafkaCode(err)
		return true
	case ok && o < p.HighWatermark():
		sp.LeaderEpoch, sp.Offset, sp.Timestamp = p.LeaderEpoch(), o, t
		return true
	case !ok && !s.tier.Seen(p.TP) && p.Log.Config().RemoteStorage && p.Log.LogStartOffset() > 0:
		// A tiered partition the tier manager has not been given yet
		// (just after a start or an election): what lies below the local
		// start is unknown, and the local log's answer could skip it.
		sp.LeaderEpoch, sp.ErrorCode = p.LeaderEpoch(), kafkaCode(tier.ErrUnavailable)
		return true
	}
	return false
}

// deleteRemoteRecords raises a tiered partition's remote log start to the
// DeleteRecords offset (the local one has moved already), and returns the
// new low watermark counting remote storage.
func (s *Server) deleteRemoteRecords(p *replica.Partition, offset int64) (int64, int16) {
	if offset == deleteToHighWatermark {
		offset = p.HighWatermark()
	}
	if err := s.tier.DeleteRecords(p.TP, offset); err != nil {
		return -1, kafkaCode(err)
	}
	return s.logStartOffset(p), 0
}
