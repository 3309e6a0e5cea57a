package loader

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// Loads from the remote tier (--from-tier).
//
// A broker with tiered storage uploads each closed segment of a tiered
// topic to HDFS (docs/tiered-storage.md). With Settings.FromTier, a unit
// reads the part of its range that is remote straight from those files,
// through internal/remotelog, without a fetch to any broker: a backfill of
// months of history costs the brokers nothing but the plan (offsets and a
// sample). What is not remote yet (the recent end of the range, the
// offsets after an undecided transaction at the remote end) is fetched
// from the broker as usual, so a unit always loads its whole range: the
// result is the same Parquet as a load through the broker, whoever served
// which offsets. A topic that is not tiered, or a partition with nothing
// remote, is simply read from the broker.
//
// Records are read as a read_committed consumer sees them: aborted
// transactions (by the uploaded .txnindex files) and control records are
// skipped.

// tierFS is the remote tier's file system, opened once per loader (a
// failed open is tried again by the next unit).
type tierFS struct {
	mu sync.Mutex
	fs fsys.FS
}

func (l *Loader) tier(uri string) (fsys.FS, error) {
	t := &l.tierOnce
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fs != nil {
		return t.fs, nil
	}
	open := l.OpenTier
	if open == nil {
		open = func(uri string) (fsys.FS, error) { return fsys.Open(uri, fsys.Options{}) }
	}
	fs, err := open(uri)
	if err != nil {
		return nil, fmt.Errorf("--from-tier %s: %w", uri, err)
	}
	t.fs = fs
	return fs, nil
}

// CloseTier closes the remote tier's file system, if it was opened.
func (l *Loader) CloseTier() {
	t := &l.tierOnce
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fs != nil {
		t.fs.Close()
		t.fs = nil
	}
}

// ValidTierURI checks a --from-tier value: the broker's
// rsm.config.storage.uri, hdfs:// or file://.
func ValidTierURI(uri string) error {
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "hdfs" && u.Scheme != "file") {
		return fmt.Errorf("--from-tier %q: give the brokers' rsm.config.storage.uri, hdfs://namenode:port/path or file:///path", uri)
	}
	return nil
}

// tierTopicIDs records the ids of the plan's topics: their remote
// directories are named by id, and a topic deleted and created again
// under the same name between plan and run must not be read from the old
// one's files.
func (l *Loader) tierTopicIDs(ctx context.Context, p *Plan, topics []kafkacli.TopicInfo) error {
	if p.FromTier == "" {
		return nil
	}
	if err := l.Cluster.TopicIDs(ctx, topics); err != nil {
		return err
	}
	p.TopicIDs = map[string]string{}
	for _, t := range topics {
		if t.ID != ([16]byte{}) {
			p.TopicIDs[t.Name] = kafkacli.FormatTopicID(t.ID)
		}
	}
	return nil
}

// readTier calls fn with the records of the unit's range that are remote,
// from its start on, and returns the offset the broker takes over at (the
// unit's end when the tier held it all).
func (l *Loader) readTier(ctx context.Context, p *Plan, u Unit, fn func([]decode.Record) error) (next int64, err error) {
	id := p.TopicIDs[u.Topic]
	if id == "" {
		// A plan without ids (a backfill): the topic's current one.
		ts := []kafkacli.TopicInfo{{Name: u.Topic}}
		if err := l.Cluster.TopicIDs(ctx, ts); err != nil {
			return u.From, err
		}
		if ts[0].ID == ([16]byte{}) {
			return u.From, nil
		}
		id = kafkacli.FormatTopicID(ts[0].ID)
	}
	fs, err := l.tier(p.FromTier)
	if err != nil {
		return u.From, err
	}
	part := &remotelog.Partition{FS: fs, Dir: remotelog.Dir(u.Topic, id, u.Partition)}
	man, err := part.Manifest()
	if err != nil {
		return u.From, fmt.Errorf("--from-tier: %s/%d: %w", u.Topic, u.Partition, err)
	}
	if man != nil && man.TopicID != id {
		return u.From, fmt.Errorf("--from-tier: %s/%s holds topic id %s, not %s", fs, part.Dir, man.TopicID, id)
	}
	var recs []decode.Record
	next, err = part.ReadCommitted(ctx, man, u.From, u.To, func(rs []remotelog.Record) error {
		recs = recs[:0]
		for _, r := range rs {
			d := decode.Record{Topic: u.Topic, Partition: u.Partition, Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
			for _, h := range r.Headers {
				d.Headers = append(d.Headers, decode.Header{Key: h.Key, Value: h.Value})
			}
			recs = append(recs, d)
		}
		return fn(recs)
	})
	if errors.Is(err, remotelog.ErrBelowStart) {
		// Gone from the tier too: the broker's answer decides (a gap with
		// --allow-gaps, else the usual error).
		return u.From, nil
	}
	if err != nil {
		return next, fmt.Errorf("--from-tier: %s/%d: %w", u.Topic, u.Partition, err)
	}
	l.log().Info("read from the remote tier", "topic", u.Topic, "partition", u.Partition, "from", u.From, "to", next, "unit_end", u.To)
	return next, nil
}
