package group

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDataDriven runs the scripts in testdata/: each drives the group state
// machine with requests and a fake clock and prints the answers, the writes
// it asks for and the groups' state. Rewrite the expectations with
// `go test ./broker/group -run DataDriven -rewrite` and review the diff.
//
// Commands (arguments are key=value):
//
//	config delay= min-session= max-session= max-size= retention=   (ms)
//	join group= member= client= instance= session= rebalance= protocols=a,b meta=x version=
//	sync group= member= gen= instance= assign=m1:x,m2:y protocol= version=
//	heartbeat group= member= gen= instance=
//	leave group= members=m1,m2 instances=i1,i2
//	commit group= member= gen= instance= offsets=topic/0=5,topic/1=7
//	delete-offsets group= partitions=topic/0,topic/1
//	delete-group group=
//	tick ms=     advances the clock, runs the timers
//	expire ms=   advances the clock, runs offset expiry
//	fail-writes / ok-writes   makes the next appends fail or succeed
//	reload       replays every record written so far into a new state machine
//	state        prints every group
//
// Answers of delayed requests print when they arrive, named by the request
// that is answered (r1, r2, ...).
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := newHarness()
		datadriven.RunTest(t, path, h.run)
	})
}

type harness struct {
	cfg        Config
	gs         *Groups
	now        time.Time
	req        int
	out        *strings.Builder
	failWrites bool
	log        []Record // every record appended, in order
	ids        int
}

func newHarness() *harness {
	h := &harness{now: time.UnixMilli(1_700_000_000_000), cfg: Config{Partitions: 50, MinSessionTimeout: 6 * time.Second,
		MaxSessionTimeout: 30 * time.Minute, InitialRebalanceDelay: 0, MaxSize: 1000, OffsetsRetention: time.Hour, MaxMetadataBytes: 16}}
	h.reset()
	return h
}

func (h *harness) reset() {
	h.gs = NewGroups(h.cfg)
	h.gs.NewMemberID = func(client string) string {
		h.ids++
		return fmt.Sprintf("%s-%d", client, h.ids)
	}
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	h.out = &strings.Builder{}
	arg := func(k, def string) string {
		for _, a := range d.CmdArgs {
			if a.Key == k {
				if len(a.Vals) == 0 {
					return ""
				}
				return strings.Join(a.Vals, ",")
			}
		}
		return def
	}
	num := func(k string, def int64) int64 {
		n, err := strconv.ParseInt(arg(k, strconv.FormatInt(def, 10)), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", d.Pos, err)
		}
		return n
	}
	opt := func(k string) *string {
		if v := arg(k, "\x00"); v != "\x00" {
			return &v
		}
		return nil
	}
	label := func() string {
		h.req++
		return fmt.Sprintf("r%d", h.req)
	}
	switch d.Cmd {
	case "config":
		ms := func(k string, cur time.Duration) time.Duration {
			return time.Duration(num(k, cur.Milliseconds())) * time.Millisecond
		}
		h.cfg.InitialRebalanceDelay = ms("delay", h.cfg.InitialRebalanceDelay)
		h.cfg.MinSessionTimeout = ms("min-session", h.cfg.MinSessionTimeout)
		h.cfg.MaxSessionTimeout = ms("max-session", h.cfg.MaxSessionTimeout)
		h.cfg.OffsetsRetention = ms("retention", h.cfg.OffsetsRetention)
		h.cfg.MaxSize = int(num("max-size", int64(h.cfg.MaxSize)))
		h.reset()
		return "ok\n"
	case "join":
		l := label()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = int16(num("version", 9))
		req.Group, req.MemberID, req.InstanceID = arg("group", "g"), arg("member", ""), opt("instance")
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = int32(num("session", 10000)), int32(num("rebalance", 30000))
		req.ProtocolType = arg("type", "consumer")
		for _, p := range strings.Split(arg("protocols", "range"), ",") {
			if p != "" {
				req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: []byte(arg("meta", "m"))})
			}
		}
		h.gs.Join(JoinRequest{JoinGroupRequest: req, ClientID: arg("client", "c"), ClientHost: "/127.0.0.1"}, h.now, func(r *kmsg.JoinGroupResponse) {
			fmt.Fprintf(h.out, "%s: join %s\n", l, showJoin(r))
		})
		h.flush()
		h.waiting(l)
	case "sync":
		l := label()
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version = int16(num("version", 5))
		req.Group, req.MemberID, req.Generation, req.InstanceID = arg("group", "g"), arg("member", ""), int32(num("gen", 1)), opt("instance")
		req.Protocol = opt("protocol")
		for _, a := range strings.Split(arg("assign", ""), ",") {
			if m, v, ok := strings.Cut(a, ":"); ok {
				req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(v)})
			}
		}
		h.gs.Sync(req, h.now, func(r *kmsg.SyncGroupResponse) {
			if r.ErrorCode != 0 {
				fmt.Fprintf(h.out, "%s: sync %s\n", l, errName(r.ErrorCode))
				return
			}
			fmt.Fprintf(h.out, "%s: sync ok protocol=%s assignment=%q\n", l, *r.Protocol, r.MemberAssignment)
		})
		h.flush()
		h.waiting(l)
	case "heartbeat":
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation, req.InstanceID = arg("group", "g"), arg("member", ""), int32(num("gen", 1)), opt("instance")
		code := h.gs.Heartbeat(req, h.now)
		fmt.Fprintf(h.out, "heartbeat %s\n", kerrName(code))
		h.flush()
	case "leave":
		var ms []kmsg.LeaveGroupRequestMember
		for _, m := range strings.Split(arg("members", ""), ",") {
			if m != "" {
				ms = append(ms, kmsg.LeaveGroupRequestMember{MemberID: m})
			}
		}
		for _, i := range strings.Split(arg("instances", ""), ",") {
			if i != "" {
				i := i
				ms = append(ms, kmsg.LeaveGroupRequestMember{InstanceID: &i})
			}
		}
		top, codes := h.gs.Leave(arg("group", "g"), ms, h.now)
		if top != nil {
			fmt.Fprintf(h.out, "leave %s\n", top.Message)
		}
		for i, c := range codes {
			who := ms[i].MemberID
			if ms[i].InstanceID != nil {
				who = "instance " + *ms[i].InstanceID
			}
			fmt.Fprintf(h.out, "leave %s: %s\n", who, kerrName(c))
		}
		h.flush()
	case "commit":
		c := Commit{Version: int16(num("version", 8)), Group: arg("group", "g"), MemberID: arg("member", ""), Generation: int32(num("gen", -1)), InstanceID: opt("instance")}
		if code := h.gs.CheckCommit(c); code != nil {
			fmt.Fprintf(h.out, "commit %s\n", code.Message)
			break
		}
		var offs []OffsetAt
		for _, o := range strings.Split(arg("offsets", ""), ",") {
			tp, v, _ := strings.Cut(o, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			offs = append(offs, OffsetAt{parseTP(tp), Offset{Offset: n, LeaderEpoch: -1, CommitTimestamp: h.now.UnixMilli(), ExpireTimestamp: -1}})
		}
		h.gs.Commit(c, offs, h.now, func(err error) { fmt.Fprintf(h.out, "commit done: %v\n", errOrOK(err)) })
		h.flush()
	case "delete-offsets":
		var tps []TopicPartition
		for _, p := range strings.Split(arg("partitions", ""), ",") {
			tps = append(tps, parseTP(p))
		}
		top, codes := h.gs.DeleteOffsets(arg("group", "g"), tps, h.now, func(err error) { fmt.Fprintf(h.out, "delete done: %v\n", errOrOK(err)) })
		if top != nil {
			fmt.Fprintf(h.out, "delete-offsets %s\n", top.Message)
		}
		for i, c := range codes {
			fmt.Fprintf(h.out, "delete %s/%d: %s\n", tps[i].Topic, tps[i].Partition, kerrName(c))
		}
		h.flush()
	case "delete-group":
		code := h.gs.DeleteGroup(arg("group", "g"), h.now, func(err error) { fmt.Fprintf(h.out, "delete done: %v\n", errOrOK(err)) })
		if code != nil {
			fmt.Fprintf(h.out, "delete-group %s\n", code.Message)
		}
		h.flush()
	case "tick":
		h.now = h.now.Add(time.Duration(num("ms", 0)) * time.Millisecond)
		h.gs.Tick(h.now)
		h.flush()
	case "expire":
		h.now = h.now.Add(time.Duration(num("ms", 0)) * time.Millisecond)
		h.gs.ExpireOffsets(h.now)
		h.flush()
	case "fail-writes":
		h.failWrites = true
		return "ok\n"
	case "ok-writes":
		h.failWrites = false
		return "ok\n"
	case "reload":
		log := h.log
		h.reset()
		for _, r := range log {
			if err := h.gs.Replay(r.Key, r.Value, h.now); err != nil {
				fmt.Fprintf(h.out, "replay: %v\n", err)
			}
		}
		fmt.Fprintf(h.out, "replayed %d records\n", len(log))
	case "state":
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	// Every command ends with the state of the groups.
	for _, g := range h.gs.All() {
		fmt.Fprintf(h.out, "> %s\n", strings.ReplaceAll(g.String(), "\n", "\n> "))
	}
	if h.out.Len() == 0 {
		return "ok\n"
	}
	return h.out.String()
}

func (h *harness) waiting(label string) {
	if !strings.Contains(h.out.String(), label+":") {
		fmt.Fprintf(h.out, "%s: waiting\n", label)
	}
}

// flush runs the queued writes as the coordinator would, printing them.
func (h *harness) flush() {
	for {
		ws := h.gs.TakeWrites()
		if len(ws) == 0 {
			return
		}
		for _, w := range ws {
			var keys []string
			for _, r := range w.Records {
				k := showKey(r.Key)
				if r.Value == nil {
					k += " (tombstone)"
				}
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var err error
			if h.failWrites {
				err = kerr.NotEnoughReplicas
				fmt.Fprintf(h.out, "write failed p%d: %s\n", w.Partition, strings.Join(keys, ", "))
			} else {
				h.log = append(h.log, w.Records...)
				fmt.Fprintf(h.out, "write p%d: %s\n", w.Partition, strings.Join(keys, ", "))
			}
			w.Done(err)
		}
	}
}

func showKey(k []byte) string {
	if k[1] == 2 {
		var gk kmsg.GroupMetadataKey
		gk.ReadFrom(k)
		return "group " + gk.Group
	}
	var ok kmsg.OffsetCommitKey
	ok.ReadFrom(k)
	return fmt.Sprintf("offset %s %s/%d", ok.Group, ok.Topic, ok.Partition)
}

func showJoin(r *kmsg.JoinGroupResponse) string {
	if r.ErrorCode != 0 {
		return fmt.Sprintf("%s member=%q", errName(r.ErrorCode), r.MemberID)
	}
	s := fmt.Sprintf("ok gen=%d member=%s leader=%s protocol=%s", r.Generation, r.MemberID, r.LeaderID, *r.Protocol)
	if len(r.Members) > 0 {
		var ms []string
		for _, m := range r.Members {
			ms = append(ms, m.MemberID+":"+string(m.ProtocolMetadata))
		}
		s += " members=" + strings.Join(ms, ",")
	}
	if r.SkipAssignment {
		s += " skip-assignment"
	}
	return s
}

func parseTP(s string) TopicPartition {
	t, p, _ := strings.Cut(s, "/")
	n, _ := strconv.Atoi(p)
	return TopicPartition{t, int32(n)}
}

func errName(code int16) string { return kerr.ErrorForCode(code).(*kerr.Error).Message }

func kerrName(e *kerr.Error) string {
	if e == nil {
		return "ok"
	}
	return e.Message
}

func errOrOK(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
