package log

// EnforceRetention deletes the oldest segments that retention.ms or
// retention.bytes leave behind, or that lie wholly below the log start
// offset, and moves the log start offset past them. It never splits a
// segment: retention works in whole files, which is what keeps it O(1) in
// the size of the log. An active segment that has itself expired is rolled
// first, as Kafka does, so that an idle topic still empties.
func (l *Log) EnforceRetention() (deleted int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	cfg := l.cfg.Load()
	now := l.now().UnixMilli()
	tier := l.tiered(cfg)
	retentionMs, retentionBytes := localRetention(cfg, tier != nil)
	expired := func(s *segment) bool {
		return cfg.Delete && retentionMs >= 0 && s.size.Load() > 0 &&
			now-s.largestTimestamp() > retentionMs.Milliseconds()
	}
	segs := l.segments()
	if act := segs[len(segs)-1]; len(segs) == 1 && expired(act) {
		if err := l.rollLocked(l.end.Load()); err != nil {
			return 0, err
		}
		segs = l.segments()
	} else if allExpired(segs, expired) {
		if err := l.rollLocked(l.end.Load()); err != nil {
			return 0, err
		}
		segs = l.segments()
	}
	total := int64(0)
	for _, s := range segs {
		total += s.size.Load()
	}
	start := l.start.Load()
	uploaded := int64(-1)
	if tier != nil {
		uploaded = tier.UploadedEnd()
	}
	n := 0
	for ; n < len(segs)-1; n++ {
		s := segs[n]
		bySize := cfg.Delete && retentionBytes >= 0 && total-s.size.Load() >= retentionBytes
		byStart := segs[n+1].base <= start
		if !expired(s) && !bySize && !byStart {
			break
		}
		if tier != nil && !byStart && segs[n+1].base > uploaded {
			// Not in remote storage yet: the disk keeps it, however
			// full it gets, until the upload is durable.
			if n == 0 && l.tierWarned.Swap(s.base+1) != s.base+1 {
				l.logger.Warn("local retention waits for the upload of the oldest segment to remote storage", "base_offset", s.base, "uploaded_end", uploaded)
			}
			break
		}
		total -= s.size.Load()
	}
	if n == 0 {
		return 0, nil
	}
	newStart := max(segs[n].base, start)
	l.logger.Info("retention deleted segments", "segments", n, "log_start_offset", newStart)
	// A tiered log's history goes on in remote storage, so its leader
	// epochs stay known below the local start, as Kafka's UnifiedLog keeps
	// them: OffsetForLeaderEpoch must still answer for the epochs of the
	// remote range, or a consumer reading there is told its position
	// diverged when the leader changes.
	return n, l.advanceStartLocked(newStart, tier == nil)
}

func allExpired(segs []*segment, expired func(*segment) bool) bool {
	for _, s := range segs {
		if !expired(s) {
			return false
		}
	}
	return len(segs) > 0
}
