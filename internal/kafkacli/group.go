package kafkacli

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/describegroups"
)

// Consumer groups, through kafka-go's Client: ListGroups, DescribeGroups,
// OffsetFetch, OffsetCommit, DeleteGroups and ListOffsets. The numbers are
// those Apache Kafka's kafka-consumer-groups.sh shows.

// ErrUnknownGroup is wrapped by every "group does not exist" error.
var ErrUnknownGroup = errors.New("does not exist")

// Group states as the coordinator names them (DescribeGroups).
const (
	StateEmpty  = "Empty"
	StateStable = "Stable"
	StateDead   = "Dead"
)

// GroupListing is one group as ListGroups and DescribeGroups see it.
type GroupListing struct {
	ID           string
	State        string // "" when DescribeGroups did not answer for it
	ProtocolType string // "consumer" for consumer groups, "" for offset-only groups
	Coordinator  int    // broker id
	Err          error  // DescribeGroups' error for the group, if any
}

// ListGroups lists the groups of every broker (ListGroups), with each
// group's state from DescribeGroups, sorted by id.
func (c *Cluster) ListGroups(ctx context.Context) ([]GroupListing, error) {
	resp, err := c.Client.ListGroups(ctx, &kafka.ListGroupsRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing groups: %w", unwrapClient(err))
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("listing groups: %w", resp.Error)
	}
	out := make([]GroupListing, 0, len(resp.Groups))
	ids := make([]string, 0, len(resp.Groups))
	for _, g := range resp.Groups {
		out = append(out, GroupListing{ID: g.GroupID, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator})
		ids = append(ids, g.GroupID)
	}
	if len(ids) > 0 {
		descs, err := c.DescribeGroups(ctx, ids)
		if err != nil {
			return nil, err
		}
		for i := range out {
			if d, ok := descs[out[i].ID]; ok {
				out[i].State, out[i].Err = d.State, d.Err
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// GroupMember is one member of a group.
type GroupMember struct {
	ID, InstanceID, ClientID, Host string
	// Assignment is the member's partitions by topic, sorted; nil unless the
	// group uses the consumer protocol and is stable.
	Assignment map[string][]int
	// Epoch and Target are a KIP-848 member's epoch and target assignment
	// (group_consumer.go); 0 and nil for a classic member.
	Epoch  int32
	Target map[string][]int
	// Classic is a member of a KIP-848 group that speaks the classic
	// protocol (a group migrating between the two).
	Classic bool
}

// AssignedPartitions prints the assignment as topic(0,1,2) topic2(0).
func (m *GroupMember) AssignedPartitions() string {
	if len(m.Assignment) == 0 {
		return "-"
	}
	var parts []string
	for _, t := range sortedKeys(m.Assignment) {
		ps := make([]string, len(m.Assignment[t]))
		for i, p := range m.Assignment[t] {
			ps[i] = fmt.Sprint(p)
		}
		parts = append(parts, t+"("+strings.Join(ps, ",")+")")
	}
	return strings.Join(parts, " ")
}

// GroupDescription is what DescribeGroups says about a group.
type GroupDescription struct {
	ID           string
	State        string
	ProtocolType string
	Protocol     string // the assignor: range, roundrobin, ...
	Members      []GroupMember
	Err          error // the group's error code, or ErrUnknownGroup
	Epoch        int32 // the group epoch of a KIP-848 group
}

// Active says whether the group has members, which own its offsets: Kafka
// resets offsets only of groups that are Empty (or Dead: unknown).
func (d *GroupDescription) Active() bool {
	return d.State != StateEmpty && d.State != StateDead
}

// DescribeGroups describes groups (DescribeGroups to each coordinator). A
// group the coordinator does not know is in the map with State Dead and Err
// wrapping ErrUnknownGroup.
func (c *Cluster) DescribeGroups(ctx context.Context, ids []string) (map[string]*GroupDescription, error) {
	m, err := c.Transport.RoundTrip(ctx, c.Client.Addr, &describegroups.Request{Groups: ids})
	if err != nil {
		return nil, fmt.Errorf("describing groups: %w", unwrapClient(err))
	}
	out := map[string]*GroupDescription{}
	for _, g := range m.(*describegroups.Response).Groups {
		d := &GroupDescription{ID: g.GroupID, State: g.GroupState, ProtocolType: g.ProtocolType, Protocol: g.ProtocolData}
		switch {
		case g.ErrorCode == int16(kafka.GroupIdNotFound) || (g.ErrorCode == 0 && g.GroupState == StateDead):
			d.State = StateDead
			d.Err = fmt.Errorf("group %q %w (tributary group list shows the groups)", g.GroupID, ErrUnknownGroup)
		case g.ErrorCode != 0:
			d.Err = fmt.Errorf("group %q: %w", g.GroupID, kafka.Error(g.ErrorCode))
		}
		for _, mem := range g.Members {
			gm := GroupMember{ID: mem.MemberID, InstanceID: mem.GroupInstanceID, ClientID: mem.ClientID, Host: strings.TrimPrefix(mem.ClientHost, "/")}
			if g.ProtocolType == "consumer" {
				gm.Assignment = decodeAssignment(mem.MemberAssignment)
			}
			d.Members = append(d.Members, gm)
		}
		sort.Slice(d.Members, func(i, j int) bool { return d.Members[i].ID < d.Members[j].ID })
		out[g.GroupID] = d
	}
	var unknown []string
	for _, id := range ids {
		if d, ok := out[id]; !ok || d.State == StateDead {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		c.describeConsumerGroups(ctx, unknown, out)
	}
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			out[id] = &GroupDescription{ID: id, Err: fmt.Errorf("group %q: the coordinator did not answer", id)}
		}
	}
	return out, nil
}

// decodeAssignment reads a consumer protocol assignment (ConsumerProtocol
// Assignment, any version): version int16, [topic string, [partition
// int32]], user data. Later versions only add fields after these, so they
// are ignored; anything unreadable is no assignment.
func decodeAssignment(b []byte) map[string][]int {
	r := bytes.NewReader(b)
	var version int16
	var n int32
	if binary.Read(r, binary.BigEndian, &version) != nil || binary.Read(r, binary.BigEndian, &n) != nil || n < 0 || int(n) > r.Len() {
		return nil
	}
	out := map[string][]int{}
	for range n {
		var l int16
		if binary.Read(r, binary.BigEndian, &l) != nil || l < 0 || int(l) > r.Len() {
			return nil
		}
		name := make([]byte, l)
		r.Read(name)
		var np int32
		if binary.Read(r, binary.BigEndian, &np) != nil || np < 0 || int(np)*4 > r.Len() {
			return nil
		}
		ps := make([]int32, np)
		if binary.Read(r, binary.BigEndian, ps) != nil {
			return nil
		}
		for _, p := range ps {
			out[string(name)] = append(out[string(name)], int(p))
		}
		sort.Ints(out[string(name)])
	}
	return out
}

// DescribeGroup describes one group; an unknown group is an error wrapping
// ErrUnknownGroup.
func (c *Cluster) DescribeGroup(ctx context.Context, id string) (*GroupDescription, error) {
	descs, err := c.DescribeGroups(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	d := descs[id]
	if d.Err != nil {
		return nil, d.Err
	}
	return d, nil
}

// CommittedOffsets is the group's committed offset of every partition it
// has one for (OffsetFetch of all topics): topic, then partition.
func (c *Cluster) CommittedOffsets(ctx context.Context, group string) (map[string]map[int]int64, error) {
	resp, err := c.Client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group})
	if err != nil {
		return nil, fmt.Errorf("fetching the offsets of group %q: %w", group, unwrapClient(err))
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("fetching the offsets of group %q: %w", group, resp.Error)
	}
	out := map[string]map[int]int64{}
	for t, ps := range resp.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return nil, fmt.Errorf("offset of group %q in %q partition %d: %w", group, t, p.Partition, p.Error)
			}
			if p.CommittedOffset < 0 {
				continue
			}
			if out[t] == nil {
				out[t] = map[int]int64{}
			}
			out[t][p.Partition] = p.CommittedOffset
		}
	}
	return out, nil
}

// PartitionLag is one row of kafka-consumer-groups.sh --describe.
type PartitionLag struct {
	Topic     string
	Partition int
	Committed int64 // -1: nothing committed
	LogEnd    int64 // the high watermark; -1: unknown
	Stable    int64 // the last stable offset (read_committed end); -1: unknown
	Lag       int64 // LogEnd - Committed; -1: unknown
	Member    *GroupMember
	Err       error // why LogEnd is unknown
}

// GroupLag is the description of a group and, for every partition that a
// member is assigned or that has a committed offset, the committed offset,
// log end offset and lag, sorted by topic and partition: the rows of
// kafka-consumer-groups.sh --describe --group.
func (c *Cluster) GroupLag(ctx context.Context, group string) (*GroupDescription, []PartitionLag, error) {
	d, err := c.DescribeGroup(ctx, group)
	if errors.Is(err, ErrUnknownGroup) {
		// A group with committed offsets and no members ever (a
		// simple consumer, or offsets reset with no consumer) may be
		// unknown to DescribeGroups on some brokers; its offsets still
		// tell.
		d = &GroupDescription{ID: group, State: StateDead}
	} else if err != nil {
		return nil, nil, err
	}
	committed, err := c.CommittedOffsets(ctx, group)
	if err != nil {
		return nil, nil, err
	}
	if d.State == StateDead && len(committed) == 0 {
		return nil, nil, fmt.Errorf("group %q %w (tributary group list shows the groups)", group, ErrUnknownGroup)
	}
	rows := map[string]map[int]*PartitionLag{}
	row := func(t string, p int) *PartitionLag {
		if rows[t] == nil {
			rows[t] = map[int]*PartitionLag{}
		}
		if rows[t][p] == nil {
			rows[t][p] = &PartitionLag{Topic: t, Partition: p, Committed: -1, LogEnd: -1, Stable: -1, Lag: -1}
		}
		return rows[t][p]
	}
	for i := range d.Members {
		for t, ps := range d.Members[i].Assignment {
			for _, p := range ps {
				row(t, p).Member = &d.Members[i]
			}
		}
	}
	for t, ps := range committed {
		for p, off := range ps {
			row(t, p).Committed = off
		}
	}
	var out []PartitionLag
	for _, t := range sortedKeys(rows) {
		var ps []int
		for p := range rows[t] {
			ps = append(ps, p)
		}
		sort.Ints(ps)
		offs, err := c.Offsets(ctx, t, ps)
		// Where an open transaction holds it below the log end, a
		// read_committed consumer (the loader) can get no further.
		stable, serr := c.StableOffsets(ctx, t, ps)
		for _, p := range ps {
			if serr == nil && stable[p].Err == nil {
				rows[t][p].Stable = stable[p].End
			}
			r := rows[t][p]
			switch {
			case err != nil:
				r.Err = err
			case offs[p].Err != nil:
				r.Err = offs[p].Err
			default:
				r.LogEnd = offs[p].End
				if r.Committed >= 0 {
					r.Lag = r.LogEnd - r.Committed // as Kafka: negative if committed past the end
				}
			}
			out = append(out, *r)
		}
	}
	return d, out, nil
}

// ResetTarget is where reset-offsets moves a group's offsets.
type ResetTarget struct {
	Kind   ResetKind
	Offset int64     // ResetOffset: the offset; ResetShift: the shift
	Time   time.Time // ResetTime
}

// ResetKind is one of kafka-consumer-groups.sh's --to-* / --shift-by.
type ResetKind int

// The reset targets.
const (
	ResetEarliest ResetKind = iota
	ResetLatest
	ResetTime
	ResetOffset
	ResetShift
)

// OffsetReset is one row of a reset plan.
type OffsetReset struct {
	Topic     string
	Partition int
	Current   int64 // -1: nothing committed
	New       int64
}

// PlanReset computes, as kafka-consumer-groups.sh --reset-offsets does, the
// new offset of each partition of each topic (partitions[topic], all of the
// topic's partitions if empty): earliest and latest are the log start and
// end offsets, a time the first offset at or after it (the log end if
// none is), and --to-offset and --shift-by results are clamped into the
// range the log holds. Shifting a partition with nothing committed is an
// error.
func (c *Cluster) PlanReset(ctx context.Context, group string, partitions map[string][]int, to ResetTarget) ([]OffsetReset, error) {
	committed, err := c.CommittedOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	var plan []OffsetReset
	for _, name := range sortedKeys(partitions) {
		t, err := c.Topic(ctx, name)
		if err != nil {
			return nil, err
		}
		ps := partitions[name]
		if len(ps) == 0 {
			ps = t.PartitionIndexes()
		}
		for _, p := range ps {
			if err := t.CheckPartition(p); err != nil {
				return nil, fmt.Errorf("--topic %s:%d: %s", name, p, strings.TrimPrefix(err.Error(), fmt.Sprintf("--partition %d: ", p)))
			}
		}
		offs, err := c.Offsets(ctx, name, ps)
		if err != nil {
			return nil, err
		}
		var atTime map[int]int64
		if to.Kind == ResetTime {
			if atTime, err = c.OffsetsForTime(ctx, name, ps, to.Time); err != nil {
				return nil, err
			}
		}
		for _, p := range ps {
			r := offs[p]
			if r.Err != nil {
				return nil, fmt.Errorf("offsets of %q partition %d: %w", name, p, r.Err)
			}
			cur, ok := committed[name][p]
			if !ok {
				cur = -1
			}
			var n int64
			switch to.Kind {
			case ResetEarliest:
				n = r.Start
			case ResetLatest:
				n = r.End
			case ResetTime:
				n = atTime[p]
				if n < 0 {
					n = r.End
				}
			case ResetOffset:
				n = to.Offset
			case ResetShift:
				if cur < 0 {
					return nil, fmt.Errorf("cannot shift the offset of %q partition %d: group %q has no committed offset there", name, p, group)
				}
				n = cur + to.Offset
			}
			n = min(max(n, r.Start), r.End)
			plan = append(plan, OffsetReset{Topic: name, Partition: p, Current: cur, New: n})
		}
	}
	return plan, nil
}

// CommitOffsets commits offsets for a group that has no members
// (OffsetCommit with generation -1, as Kafka's AdminClient
// alterConsumerGroupOffsets). It returns the failed partitions' errors.
func (c *Cluster) CommitOffsets(ctx context.Context, group string, plan []OffsetReset) error {
	req := &kafka.OffsetCommitRequest{GroupID: group, GenerationID: -1, Topics: map[string][]kafka.OffsetCommit{}}
	for _, r := range plan {
		req.Topics[r.Topic] = append(req.Topics[r.Topic], kafka.OffsetCommit{Partition: r.Partition, Offset: r.New})
	}
	resp, err := c.Client.OffsetCommit(ctx, req)
	if err != nil {
		return fmt.Errorf("committing the offsets of group %q: %w", group, unwrapClient(err))
	}
	var errs []error
	for t, ps := range resp.Topics {
		for _, p := range ps {
			if p.Error != nil {
				errs = append(errs, fmt.Errorf("committing %q partition %d for group %q: %w", t, p.Partition, group, p.Error))
			}
		}
	}
	return errors.Join(errs...)
}

// DeleteGroups deletes groups (DeleteGroups, one request per group, since
// each goes to its own coordinator). It returns each group's outcome.
func (c *Cluster) DeleteGroups(ctx context.Context, ids []string) (map[string]error, error) {
	out := map[string]error{}
	for _, id := range ids {
		resp, err := c.Client.DeleteGroups(ctx, &kafka.DeleteGroupsRequest{GroupIDs: []string{id}})
		if err != nil {
			return nil, fmt.Errorf("deleting group %q: %w", id, unwrapClient(err))
		}
		err, ok := resp.Errors[id]
		switch {
		case !ok:
			err = errors.New("the coordinator did not answer for this group")
		case errors.Is(err, kafka.GroupIdNotFound):
			err = fmt.Errorf("%w: %w", ErrUnknownGroup, err)
		case errors.Is(err, kafka.NonEmptyGroup):
			err = fmt.Errorf("the group has active members; stop its consumers first: %w", err)
		}
		out[id] = err
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
