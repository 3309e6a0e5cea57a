package group

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share groups (KIP-932) keep their membership in __consumer_offsets
// too, under record types 10 to 15, which broker/share codes and
// replays: this coordinator only hands it the records of the partitions
// it loads, tells it when it unloads one, and appends what it writes.
//
// Each load and each unload of a partition bumps the partition's
// generation. A share write names the generation it was made in and is
// dropped (NOT_COORDINATOR) unless that is still the partition's: a
// heartbeat that raced an unload cannot write a group into a log this
// node no longer leads, nor be retried forever for it.

// ShareSink is the share-group manager as the coordinator sees it. Both
// calls run with the coordinator's lock held: they must not call back.
type ShareSink interface {
	// LoadShare hands over the share records of partition p, in log
	// order, as p opens to requests at generation gen.
	LoadShare(p int32, gen uint64, recs []Record)
	// UnloadShare says p is no longer led here; gen is its generation
	// from now on.
	UnloadShare(p int32, gen uint64)
}

// Share record key types (Kafka's ShareGroup*Key apiKeys).
const (
	shareFirstKey = 10
	shareLastKey  = 15
)

// IsShareRecord says whether key is one of a share group's records.
func IsShareRecord(key []byte) bool {
	if len(key) < 2 {
		return false
	}
	t := binary.BigEndian.Uint16(key)
	return t >= shareFirstKey && t <= shareLastKey
}

// SetShareSink sets who receives the share records; call it before Start.
func (c *Coordinator) SetShareSink(s ShareSink) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.share = s
}

// ShareStatus is Status with the group's partition and the generation
// that partition is loaded at, for a share write made from this call.
func (c *Coordinator) ShareStatus(group string) (int32, uint64, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.gs.Partition(group)
	return p, c.gens[p], c.status(group)
}

// PartitionOf is the __consumer_offsets partition of a group.
func (c *Coordinator) PartitionOf(group string) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gs.Partition(group)
}

// WriteShare appends share records to partition p if it is still loaded
// at generation gen; done runs once they are committed or failed (with
// the coordinator's lock held: it must not call back). It does not wait
// for the ISR.
func (c *Coordinator) WriteShare(p int32, gen uint64, recs []Record, done func(error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		done(kerr.CoordinatorNotAvailable)
		return
	}
	if !c.loaded[p] || c.gens[p] != gen {
		done(kerr.NotCoordinator)
		return
	}
	c.gs.writes = append(c.gs.writes, Write{Partition: p, Records: recs, Done: done})
	c.flushLocked()
}

// bumpGen starts a new generation of p. mu must be held.
func (c *Coordinator) bumpGen(p int32) uint64 {
	c.gens[p]++
	return c.gens[p]
}
