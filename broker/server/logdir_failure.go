package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/replica"
)

// A failed log dir (broker/log's offline.go) takes its partitions offline
// here (replica.Manager.DirFailed): their clients get KAFKA_STORAGE_ERROR
// until the controller, told by the next heartbeat, moves their leadership
// to other ISR members; then NOT_LEADER_OR_FOLLOWER sends the clients
// there. DescribeLogDirs answers KAFKA_STORAGE_ERROR for the dir and
// tributary_broker_offline_log_dirs counts it. When every log dir has
// failed there is nothing left to serve and the broker stops, as Kafka's
// does: Failed is closed, and the embedding program shuts the server down
// and exits with an error. The metadata log lives in the first log dir
// (broker/cluster's Raft store), which does not go through this path: a
// failure there stops the quorum member as before.

// offlineReplicasTag is the tagged field of BrokerHeartbeat (v1+, flexible)
// that carries the replicas of the failed dirs, JSON []cluster.ReplicaRef.
// Kafka's own tags are 0 (OfflineLogDirs) and 1 (CordonedLogDirs); a Kafka
// controller skips a tag it does not know.
const offlineReplicasTag = 0x7472 // "tr"

// failedDirs is when every log dir has failed.
type failedDirs struct {
	once sync.Once
	all  chan struct{}
	mu   sync.Mutex
	err  error
	// parts is the replica manager once Start made it: the failure
	// callbacks run on their own goroutines, and its Dirs never change
	// (Server.dirs is cleared by closeStorage).
	parts atomic.Pointer[replica.Manager]
}

func (f *failedDirs) ch() chan struct{} {
	f.once.Do(func() { f.all = make(chan struct{}) })
	return f.all
}

// Failed is closed when every log dir of the broker has failed; FailedErr
// says why. The program then shuts the server down and exits non-zero.
func (s *Server) Failed() <-chan struct{} { return s.failedDirs.ch() }

// FailedErr is why Failed closed, nil until it did.
func (s *Server) FailedErr() error {
	s.failedDirs.mu.Lock()
	defer s.failedDirs.mu.Unlock()
	return s.failedDirs.err
}

// logDirFailed is told by a log dir that it went offline after err.
func (s *Server) logDirFailed(path string, err error) {
	m := s.failedDirs.parts.Load()
	if m == nil {
		// Still starting: Start fails on the error itself.
		return
	}
	for i, d := range m.Dirs() {
		if d.Path() == path {
			m.DirFailed(i)
		}
	}
	for _, d := range m.Dirs() {
		if d.Offline() == nil {
			return
		}
	}
	s.failedDirs.mu.Lock()
	if s.failedDirs.err == nil {
		s.failedDirs.err = fmt.Errorf("broker/server: every log dir failed (the last, %s: %w): stopping the broker", path, err)
		s.logger.Error("every log dir has failed: stopping the broker", "log_dirs", s.cfg.LogDirs(), "err", err)
		close(s.failedDirs.ch())
	}
	s.failedDirs.mu.Unlock()
}

// notHostedError is the error for a partition of the metadata that is not
// hosted here: KAFKA_STORAGE_ERROR when its log dir failed, else
// NOT_LEADER_OR_FOLLOWER.
func (s *Server) notHostedError(topic string, partition int32) *kerr.Error {
	if s.parts.Offline(topic, partition) {
		return kerr.KafkaStorageError
	}
	return kerr.NotLeaderForPartition
}

// offlineReport is what the heartbeats tell the controller of the failed
// log dirs: their directory.id and the replicas that were in them.
func (s *Server) offlineReport() (dirs []string, ids [][16]byte, replicas []cluster.ReplicaRef) {
	m := s.failedDirs.parts.Load()
	if m == nil {
		return nil, nil, nil
	}
	for i, d := range m.Dirs() {
		if d.Offline() != nil && i < len(s.logDirIDs) {
			dirs = append(dirs, uuidString(s.logDirIDs[i]))
			ids = append(ids, s.logDirIDs[i])
		}
	}
	if len(dirs) > 0 {
		replicas = m.OfflineReplicas()
	}
	return dirs, ids, replicas
}

// addOfflineReport puts the report into a heartbeat to a remote controller.
func (s *Server) addOfflineReport(req *kmsg.BrokerHeartbeatRequest) {
	_, ids, replicas := s.offlineReport()
	if len(ids) == 0 {
		return
	}
	req.SetVersion(1)
	req.OfflineLogDirs = ids
	b, _ := json.Marshal(replicas)
	req.UnknownTags.Set(offlineReplicasTag, b)
}

// reportOffline passes a heartbeat's report to the controller.
func (s *Server) reportOffline(req *kmsg.BrokerHeartbeatRequest) error {
	if len(req.OfflineLogDirs) == 0 {
		return nil
	}
	var dirs []string
	for _, d := range req.OfflineLogDirs {
		dirs = append(dirs, uuidString(d))
	}
	var replicas []cluster.ReplicaRef
	var bad error
	req.UnknownTags.Each(func(tag uint32, b []byte) {
		if tag == offlineReplicasTag {
			bad = json.Unmarshal(b, &replicas)
		}
	})
	if bad != nil {
		return errors.Join(kerr.InvalidRequest, fmt.Errorf("offline replicas of broker %d: %w", req.BrokerID, bad))
	}
	return s.ctrl.ReportOfflineDirs(req.BrokerID, req.BrokerEpoch, dirs, replicas)
}
