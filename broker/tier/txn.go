package tier

import (
	"fmt"
	"path"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// AbortedTxns are the aborted transactions a read_committed fetch of the
// remote offsets [from, to) must be told about: those of the uploaded
// .txnindex files whose records may lie in the range (their abort marker
// at or after from, their first offset before to). As Kafka's
// RemoteLogManager.collectAbortedTransactions, the search goes through
// the remote segments from the one holding from until an entry's last
// stable offset reaches to; the caller adds the local log's own (the
// marker may be in a segment that is only local).
//
// Like Read, it never waits for HDFS: when an index is not in the chunk
// cache yet it starts loading it and returns wait, closed once it is in.
func (m *Manager) AbortedTxns(tp log.TopicPartition, from, to int64) (out []remotelog.AbortedTxn, wait <-chan struct{}, err error) {
	p := m.lookup(tp)
	if p == nil {
		return nil, nil, nil
	}
	man := p.manifest.Load()
	if man == nil {
		return nil, nil, nil
	}
	fs, err := m.store()
	if err != nil {
		return nil, nil, err
	}
	seg, ok := man.Find(from)
	for ; ok; seg, ok = man.Find(seg.EndOffset + 1) {
		size, has := seg.Files[suffixTxnIndex]
		if !has {
			continue
		}
		name := path.Join(p.dir, SegmentFileName(seg.BaseOffset, suffixTxnIndex))
		data, w, err := m.cache.get(chunkKey{p.dir, seg.BaseOffset, suffixTxnIndex, 0}, func() ([]byte, error) {
			return fs.ReadFile(name)
		}, size)
		if err != nil {
			return nil, nil, err
		}
		if w != nil {
			return nil, w, nil
		}
		entries, err := remotelog.ParseTxnIndex(data)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, name, err)
		}
		complete := false
		for _, e := range entries {
			if e.LastOffset >= from && e.FirstOffset < to {
				out = append(out, e)
			}
			complete = complete || e.LastStableOffset >= to
		}
		if complete {
			break
		}
	}
	return out, nil, nil
}
