package share

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A share partition is one group's view of one topic partition (Kafka's
// SharePartition): which records the group has finished with and which
// are out with a member. Offsets below the share-partition start offset
// (SPSO) are done; offsets from the end offset on have never been
// delivered; the window between them, at most partition.max.record.locks
// long, has one state per offset:
//
//	spso                                  end
//	 │ acked │ acquired │ available │ archived │ never delivered ...
//	 └──────────── in flight ─────────────┘
//
// A record is acquired by one member with a lock that expires; the member
// accepts it (acknowledged), releases it (available again, or archived
// once delivered delivery.count.limit times) or rejects it (archived).
// When the records at the start are acknowledged or archived the SPSO
// moves past them and the window slides. The type does no I/O and reads
// no clock: callers pass the time in nanoseconds.

// State is a record's delivery state, as Kafka's RecordState; the values
// are the ones Kafka persists in ShareSnapshot/ShareUpdate state batches.
type State int8

const (
	Available    State = 0
	Acquired     State = 1
	Acknowledged State = 2
	Archived     State = 4
)

func (s State) String() string {
	switch s {
	case Available:
		return "available"
	case Acquired:
		return "acquired"
	case Acknowledged:
		return "acknowledged"
	case Archived:
		return "archived"
	}
	return "unknown"
}

// Acknowledgement types, as in ShareFetch and ShareAcknowledge (KIP-932,
// KIP-1222's renew).
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4
)

// record is one in-flight offset.
type record struct {
	state    State
	count    int16  // deliveries so far
	owner    string // the member holding the lock, when acquired
	deadline int64  // lock expiry, unix nanoseconds, when acquired
	// tx is the acknowledgement whose state write is still under way
	// (nil: none), undo the record as it was before it: restored when
	// that write fails (Kafka's InFlightState rollback). While tx is set
	// the record is neither acquired nor slid past.
	tx   *txn
	undo *record
}

// txn is the acknowledgements applied to a partition since its state
// was last taken for a write: they stand or fall with that write.
type txn struct {
	done bool
	err  error
}

// Partition is one share partition's state. It is not safe for
// concurrent use: the Manager's lock guards it.
type Partition struct {
	spso, end int64
	recs      []record // recs[i] is offset spso+i; len == end-spso
	dirty     bool     // changed since last persisted
	// open gathers the acknowledgements applied since the state was last
	// taken for a write (Manager.flush); nil when there are none.
	open *txn
	// nextExpiry is no later than the earliest lock deadline in the
	// window (0: unknown), so that a tick skips a partition with nothing
	// to expire instead of walking its window (review M3).
	nextExpiry int64
}

// Range is a run of offsets acquired together, with their delivery count.
type Range struct {
	First, Last int64
	Count       int16
}

// Batch is one persisted run of offsets in one state (Kafka's
// PersisterStateBatch).
type Batch struct {
	First, Last int64
	State       State
	Count       int16
}

// NewPartition starts a share partition at spso with nothing in flight.
func NewPartition(spso int64) *Partition { return &Partition{spso: spso, end: spso} }

// StartOffset is the SPSO.
func (p *Partition) StartOffset() int64 { return p.spso }

// EndOffset is one past the last offset in flight (the SPEO + 1).
func (p *Partition) EndOffset() int64 { return p.end }

// InFlight is the number of offsets between SPSO and the end offset.
func (p *Partition) InFlight() int { return len(p.recs) }

// State reports an offset's state and delivery count (for tests and
// describe): below the SPSO everything is done, at or past the end
// nothing was delivered.
func (p *Partition) State(off int64) (State, int16) {
	if off < p.spso {
		return Acknowledged, 0
	}
	if off >= p.end {
		return Available, 0
	}
	r := p.recs[off-p.spso]
	return r.state, r.count
}

// Expire releases the records whose lock ran out by now. It reports
// whether any became available again.
func (p *Partition) Expire(now int64, limit int16) bool {
	if p.nextExpiry != 0 && now < p.nextExpiry {
		if p.dirty {
			p.slide()
		}
		return false
	}
	released := false
	next := int64(math.MaxInt64)
	for i := range p.recs {
		r := &p.recs[i]
		if r.state != Acquired {
			continue
		}
		if r.deadline <= now {
			released = p.release(r, limit) || released
		} else {
			next = min(next, r.deadline)
		}
	}
	p.nextExpiry = next
	if released || p.dirty {
		p.slide()
	}
	return released
}

// release returns an acquired record: available again, or archived once
// it has been delivered limit times. It reports whether it is available.
func (p *Partition) release(r *record, limit int16) bool {
	r.owner, r.deadline = "", 0
	p.dirty = true
	if r.count >= limit {
		r.state = Archived
		return false
	}
	r.state = Available
	return true
}

// ReleaseMember releases every record member holds (it left, or its
// share session closed). It reports whether any became available.
func (p *Partition) ReleaseMember(member string, limit int16) bool {
	released := false
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Acquired && r.owner == member {
			released = p.release(r, limit) || released
		}
	}
	p.slide()
	return released
}

// Acquire hands member up to max records below hw, released ones first
// (in offset order), then new ones while the window has room for them
// (maxLocks). Each acquired record's delivery count goes up by one and its
// lock runs until now+lock.
func (p *Partition) Acquire(member string, max int, hw int64, maxLocks int, now, lock int64) []Range {
	var out []Range
	take := func(off int64, r *record) {
		r.state, r.owner, r.deadline = Acquired, member, now+lock
		if p.nextExpiry != 0 {
			p.nextExpiry = min(p.nextExpiry, r.deadline)
		}
		r.count++
		if n := len(out); n > 0 && out[n-1].Last == off-1 && out[n-1].Count == r.count {
			out[n-1].Last = off
		} else {
			out = append(out, Range{First: off, Last: off, Count: r.count})
		}
		max--
	}
	for i := range p.recs {
		if max <= 0 {
			return out
		}
		if r := &p.recs[i]; r.state == Available && r.tx == nil && p.spso+int64(i) < hw {
			take(p.spso+int64(i), r)
		}
	}
	for max > 0 && p.end < hw && len(p.recs) < maxLocks {
		p.recs = append(p.recs, record{})
		p.end++
		take(p.end-1, &p.recs[len(p.recs)-1])
	}
	return out
}

// Unacquire undoes the acquisition of the ranges' offsets from off on
// (the fetch could not return their bytes): they are available again
// with the delivery count they had. It reports whether any was.
func (p *Partition) Unacquire(member string, ranges []Range, from int64) (returned bool) {
	for _, rg := range ranges {
		for off := max(rg.First, from, p.spso); off <= rg.Last && off < p.end; off++ {
			r := &p.recs[off-p.spso]
			if r.state == Acquired && r.owner == member {
				r.state, r.owner, r.deadline = Available, "", 0
				r.count--
				returned = true
			}
		}
	}
	// Trailing never-delivered records go back outside the window.
	for len(p.recs) > 0 && p.recs[len(p.recs)-1] == (record{}) {
		p.recs = p.recs[:len(p.recs)-1]
		p.end--
	}
	return returned
}

// Acknowledge applies one acknowledgement batch of member: types has one
// entry for the whole range or one per offset. Every offset must be
// acquired by member (a gap in the log, AckGap, included), or nothing
// changes and the answer is INVALID_RECORD_STATE, as Kafka's
// SharePartition.acknowledge.
func (p *Partition) Acknowledge(member string, first, last int64, types []int8, limit int16, now, lock int64) (released bool, err *kerr.Error) {
	return p.AcknowledgeBatches(member, []AckBatch{{First: first, Last: last, Types: types}}, limit, now, lock)
}

// slide moves the SPSO past finished records at the start of the window.
func (p *Partition) slide() {
	n := 0
	for n < len(p.recs) && p.recs[n].tx == nil && (p.recs[n].state == Acknowledged || p.recs[n].state == Archived) {
		n++
	}
	if n == 0 {
		return
	}
	p.spso += int64(n)
	p.dirty = true
	if n == len(p.recs) {
		p.recs = p.recs[:0]
		return
	}
	// Copy down rather than reslice, so the array does not grow forever.
	p.recs = p.recs[:copy(p.recs, p.recs[n:])]
}

// Reset moves the SPSO to off, forgetting everything in flight (an
// administrator's AlterShareGroupOffsets, or records deleted below it).
func (p *Partition) Reset(off int64) {
	p.spso, p.end, p.recs, p.dirty = off, off, p.recs[:0], true
}

// Advance moves the SPSO up to logStart when the log no longer has the
// records below it (retention, DeleteRecords).
func (p *Partition) Advance(logStart int64) {
	if logStart <= p.spso {
		return
	}
	if logStart >= p.end {
		p.Reset(logStart)
		return
	}
	n := logStart - p.spso
	p.spso = logStart
	p.recs = p.recs[:copy(p.recs, p.recs[n:])]
	p.dirty = true
}

// Batches is the state to persist: runs of offsets in the window with the
// same state and delivery count. An acquired record is persisted as
// available with its delivery count, as Kafka does: after a restart it is
// delivered again and counts as a new delivery.
func (p *Partition) Batches() []Batch {
	var out []Batch
	for i, r := range p.recs {
		st := r.state
		if st == Acquired {
			st = Available
		}
		off := p.spso + int64(i)
		if n := len(out); n > 0 && out[n-1].Last == off-1 && out[n-1].State == st && out[n-1].Count == r.count {
			out[n-1].Last = off
			continue
		}
		out = append(out, Batch{First: off, Last: off, State: st, Count: r.count})
	}
	return out
}

// Restore rebuilds a partition from its persisted SPSO and batches.
// Offsets the batches do not cover inside the window are available and
// never delivered; batches beyond maxLocks records are cut (a smaller
// partition.max.record.locks since they were written).
func Restore(spso int64, batches []Batch, maxLocks int) *Partition {
	p := NewPartition(spso)
	for _, b := range batches {
		if b.Last < b.First || b.Last < p.spso {
			continue
		}
		for off := max(b.First, p.end); off <= b.Last; off++ {
			if off-p.spso >= int64(maxLocks) {
				break
			}
			for p.end < off {
				p.recs = append(p.recs, record{})
				p.end++
			}
			p.recs = append(p.recs, record{state: b.State, count: b.Count})
			p.end++
		}
	}
	p.slide()
	// Trailing never-delivered records need no place in the window.
	for len(p.recs) > 0 && p.recs[len(p.recs)-1] == (record{}) {
		p.recs = p.recs[:len(p.recs)-1]
		p.end--
	}
	p.dirty = false
	return p
}

// settle ends the transitions of t: kept when ok, otherwise every
// record goes back to what it was before t's acknowledgements (acquired
// by its member, lock and delivery count as they were). It reports
// whether records became available for delivery.
func (p *Partition) settle(t *txn, ok bool) (released bool) {
	for i := range p.recs {
		r := &p.recs[i]
		if r.tx != t {
			continue
		}
		if ok {
			r.tx, r.undo = nil, nil
			released = released || r.state == Available
			continue
		}
		*r = *r.undo
		p.dirty = true
		p.nextExpiry = 0 // a restored lock may be the earliest
	}
	p.slide()
	return released
}

// holds says whether some record's change waits for t's write.
func (p *Partition) holds(t *txn) bool {
	if t == nil {
		return false
	}
	for i := range p.recs {
		if p.recs[i].tx == t {
			return true
		}
	}
	return false
}

// TakeDirty reports whether the partition changed since the last call.
func (p *Partition) TakeDirty() bool {
	d := p.dirty
	p.dirty = false
	return d
}
