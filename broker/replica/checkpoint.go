package replica

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/tributary-io/tributary/broker/log"
)

// ReplicationOffsetFile is, in each log dir, the high watermark of each of
// its replicated partitions, in Kafka's offset checkpoint format and under
// Kafka's name. A restarted broker starts its partitions there rather than
// at their log start, so that a consumer asking for the latest offset right
// after a restart is not sent back to the beginning.
const ReplicationOffsetFile = "replication-offset-checkpoint"

// loadHighWatermarks reads every log dir's checkpoint. An unreadable one
// costs only a high watermark that starts low.
func (m *Manager) loadHighWatermarks() map[log.TopicPartition]int64 {
	out := map[log.TopicPartition]int64{}
	for _, d := range m.dirs {
		hws, err := log.ReadOffsetCheckpoint(filepath.Join(d.Path(), ReplicationOffsetFile))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			m.logger.Warn("ignoring unreadable high watermark checkpoint", "log_dir", d.Path(), "err", err)
			continue
		}
		for tp, hw := range hws {
			out[tp] = hw
		}
	}
	return out
}

// WriteHighWatermarks saves every hosted partition's high watermark in its
// log dir's checkpoint. The manager writes it while it replicates; the
// broker writes it once more when it stops.
func (m *Manager) WriteHighWatermarks() error {
	var errs []error
	for _, d := range m.dirs {
		if d.Offline() != nil {
			continue // never written again (offline.go)
		}
		hws := map[log.TopicPartition]int64{}
		for _, l := range d.Logs() {
			if p, ok := m.Get(l.TopicPartition().Topic, l.TopicPartition().Partition); ok {
				hws[p.TP] = p.HighWatermark()
			}
		}
		errs = append(errs, log.WriteOffsetCheckpoint(filepath.Join(d.Path(), ReplicationOffsetFile), hws, true))
	}
	return errors.Join(errs...)
}
