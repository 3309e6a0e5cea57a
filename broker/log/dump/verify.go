package dump

import (
	"fmt"
	"math"

	"github.com/tributary-io/tributary/broker/record"
)

// Problem is one thing --verify found wrong in a file.
type Problem struct {
	File string `json:"file"`
	// Entry is the index or time index entry concerned, -1 when the
	// problem is not about one entry.
	Entry   int    `json:"entry"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Entry >= 0 {
		return fmt.Sprintf("%s: entry %d: %s", p.File, p.Entry, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Message)
}

// logChecker checks the batches of one .log as they are read: each batch is
// valid, offsets increase, and nothing follows the last whole batch.
type logChecker struct {
	file    string
	base    int64
	prevEnd int64 // last offset of the previous batch; base-1 at first
}

func newLogChecker(file string, base int64) *logChecker {
	return &logChecker{file: file, base: base, prevEnd: base - 1}
}

func (c *logChecker) batch(pos int64, b record.Batch, validErr error) []Problem {
	var ps []Problem
	at := func(format string, args ...any) {
		ps = append(ps, Problem{File: c.file, Entry: -1,
			Message: fmt.Sprintf("batch at position %d (offsets %d-%d): ", pos, b.BaseOffset(), b.LastOffset()) + fmt.Sprintf(format, args...)})
	}
	if validErr != nil {
		at("%v", validErr)
	}
	switch {
	case b.BaseOffset() < c.base:
		at("base offset is below the segment's base offset %d", c.base)
	case b.BaseOffset() <= c.prevEnd:
		at("base offset does not follow the previous batch's last offset %d", c.prevEnd)
	}
	if b.LastOffset() > c.prevEnd {
		c.prevEnd = b.LastOffset()
	}
	return ps
}

func (c *logChecker) end(scan *logScan) []Problem {
	if trailing := scan.size - scan.valid; trailing > 0 {
		return []Problem{{File: c.file, Entry: -1,
			Message: fmt.Sprintf("%d bytes at position %d are not a whole batch (torn or corrupt tail)", trailing, scan.valid)}}
	}
	return nil
}

// verifyIndex checks a .index against its .log: entries strictly increase,
// and each points at the start of a batch whose last offset it names.
func verifyIndex(file string, entries []IndexEntry, trailing int, log *logScan) []Problem {
	var ps []Problem
	add := func(entry int, format string, args ...any) {
		ps = append(ps, Problem{File: file, Entry: entry, Message: fmt.Sprintf(format, args...)})
	}
	if trailing != 0 {
		add(-1, "%d trailing bytes are not a whole %d-byte entry", trailing, IndexEntrySize)
	}
	byPos := make(map[int64]int, len(log.batches))
	for i, b := range log.batches {
		byPos[b.position] = i
	}
	for i, e := range entries {
		if i > 0 && e.RelativeOffset == 0 && e.Position == 0 {
			add(i, "all zeros: a preallocated or torn index tail")
			continue
		}
		if i > 0 {
			prev := entries[i-1]
			if e.RelativeOffset <= prev.RelativeOffset {
				add(i, "offset %d does not increase over entry %d's offset %d", e.Offset, i-1, prev.Offset)
			}
			if e.Position <= prev.Position {
				add(i, "position %d does not increase over entry %d's position %d", e.Position, i-1, prev.Position)
			}
		}
		if e.RelativeOffset < 0 {
			add(i, "negative relative offset %d", e.RelativeOffset)
		}
		j, ok := byPos[int64(e.Position)]
		switch {
		case ok && log.batches[j].lastOffset == e.Offset:
		case ok:
			add(i, "offset %d position %d: expected a batch with last offset %d at position %d, found last offset %d",
				e.Offset, e.Position, e.Offset, e.Position, log.batches[j].lastOffset)
		case e.Position < 0:
			add(i, "offset %d: negative position %d", e.Offset, e.Position)
		case int64(e.Position) >= log.valid:
			add(i, "offset %d position %d: expected a batch at position %d, the log's batches end at position %d",
				e.Offset, e.Position, e.Position, log.valid)
		default:
			add(i, "offset %d position %d: expected a batch boundary at position %d, found the middle of a batch",
				e.Offset, e.Position, e.Position)
		}
	}
	return ps
}

// verifyTimeIndex checks a .timeindex against its .log: timestamps strictly
// increase, and each entry names the last offset of a batch whose max
// timestamp it holds, which was the largest in the segment so far.
func verifyTimeIndex(file string, entries []TimeIndexEntry, trailing int, log *logScan) []Problem {
	var ps []Problem
	add := func(entry int, format string, args ...any) {
		ps = append(ps, Problem{File: file, Entry: entry, Message: fmt.Sprintf(format, args...)})
	}
	if trailing != 0 {
		add(-1, "%d trailing bytes are not a whole %d-byte entry", trailing, TimeIndexEntrySize)
	}
	byLast := make(map[int64]int, len(log.batches))
	for i, b := range log.batches {
		if _, dup := byLast[b.lastOffset]; !dup {
			byLast[b.lastOffset] = i
		}
	}
	// maxBefore[i] is the largest max timestamp of batches [0, i).
	maxBefore := make([]int64, len(log.batches))
	m := int64(math.MinInt64)
	for i, b := range log.batches {
		maxBefore[i] = m
		m = max(m, b.maxTimestamp)
	}
	for i, e := range entries {
		if i > 0 {
			prev := entries[i-1]
			if e.Timestamp <= prev.Timestamp {
				add(i, "timestamp %d does not increase over entry %d's timestamp %d", e.Timestamp, i-1, prev.Timestamp)
			}
			if e.RelativeOffset <= prev.RelativeOffset {
				add(i, "offset %d does not increase over entry %d's offset %d", e.Offset, i-1, prev.Offset)
			}
		}
		j, ok := byLast[e.Offset]
		if !ok {
			add(i, "timestamp %d offset %d: expected a batch with last offset %d, found none", e.Timestamp, e.Offset, e.Offset)
			continue
		}
		if got := log.batches[j].maxTimestamp; got != e.Timestamp {
			add(i, "timestamp %d offset %d: expected max timestamp %d in the batch with last offset %d, found %d",
				e.Timestamp, e.Offset, e.Timestamp, e.Offset, got)
		} else if maxBefore[j] >= e.Timestamp {
			add(i, "timestamp %d offset %d: expected the largest timestamp so far, an earlier batch has %d",
				e.Timestamp, e.Offset, maxBefore[j])
		}
	}
	return ps
}
