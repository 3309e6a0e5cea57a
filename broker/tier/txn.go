package tier

import (
	"fmt"
	"path"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// AbortedTxns are the aborted transactions a read_committed fetch of the
// remote offsets [from, to) must be told about: those of the uploaded
// .txnindex files whose records may lie in the range (their abort marker
// at or after from, their first offset before to). The caller adds the
// local log's own (the marker may be in a segment that is only local).
//
// Every remote segment from the one holding from to the remote end is
// searched. Kafka's RemoteLogManager.collectAbortedTransactions stops at
// the first entry whose last stable offset reaches to, but that is only
// sound when the entry holds the partition's LSO when the transaction
// ended; the replica writes marker+1 whatever else is open (and the files
// already uploaded carry that), so a transaction open across another's
// abort, with its own marker in a later segment, would be missed (review
// 1). Only segments with a non-empty .txnindex are read, and their parsed
// entries are kept per partition (a few dozen bytes per aborted
// transaction), so the scan is cheap after the first fetch.
//
// Like Read, it never waits for HDFS: when indexes are not in the chunk
// cache yet it starts loading all of them and returns wait, closed once
// one is in. With no manifest loaded it returns ErrUnavailable (the fetch
// is retried) rather than an empty list, which would deliver aborted
// records as committed.
func (m *Manager) AbortedTxns(tp log.TopicPartition, from, to int64) (out []remotelog.AbortedTxn, wait <-chan struct{}, err error) {
	p := m.lookup(tp)
	if p == nil {
		return nil, nil, fmt.Errorf("%w: the remote metadata of %s is not loaded", ErrUnavailable, tp)
	}
	man := p.manifest.Load()
	if man == nil {
		return nil, nil, fmt.Errorf("%w: the remote metadata of %s is not loaded yet", ErrUnavailable, tp)
	}
	fs, err := m.store()
	if err != nil {
		return nil, nil, err
	}
	for _, seg := range man.Segments {
		if seg.EndOffset < from || seg.EndOffset < man.LogStartOffset {
			continue
		}
		size, has := seg.Files[suffixTxnIndex]
		if !has || size == 0 {
			continue
		}
		p.txnMu.Lock()
		entries, parsed := p.txns[seg.FileName("")]
		p.txnMu.Unlock()
		if !parsed {
			if entries, wait, err = m.loadTxnIndex(fs, p, man, seg, size, wait); err != nil {
				return nil, nil, err
			}
		}
		for _, e := range entries {
			if e.LastOffset >= from && e.FirstOffset < to {
				out = append(out, e)
			}
		}
	}
	if wait != nil {
		return nil, wait, nil
	}
	return out, nil, nil
}

// loadTxnIndex returns the parsed .txnindex of the remote segment and
// keeps it in p.txns; while it is being read it returns no entries,
// and wait (the first of those pending) is set.
func (m *Manager) loadTxnIndex(fs fsys.FS, p *partition, man *Manifest, seg SegmentMetadata, size int64, wait <-chan struct{}) ([]remotelog.AbortedTxn, <-chan struct{}, error) {
	name := path.Join(p.dir, seg.FileName(suffixTxnIndex))
	data, w, err := m.cache.get(chunkKey{p.dir, seg.FileName(""), suffixTxnIndex, 0}, func() ([]byte, error) {
		return fs.ReadFile(name)
	}, size)
	if err != nil {
		return nil, nil, err
	}
	if w != nil {
		// The caller goes on, so the loads of the other indexes
		// start too.
		if wait == nil {
			wait = w
		}
		return nil, wait, nil
	}
	entries, err := remotelog.ParseTxnIndex(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, name, err)
	}
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	if p.txns == nil {
		p.txns = map[string][]remotelog.AbortedTxn{}
	}
	// Segments expired or replaced in remote storage are forgotten.
	live := make(map[string]bool, len(man.Segments))
	for _, s := range man.Segments {
		live[s.FileName("")] = true
	}
	for k := range p.txns {
		if !live[k] {
			delete(p.txns, k)
		}
	}
	p.txns[seg.FileName("")] = entries
	return entries, wait, nil
}
