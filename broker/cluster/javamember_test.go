package cluster_test

// Java KafkaConsumer members of a KIP-848 group (java/GroupMember848.java)
// as child processes, and the checks run over what they printed: who owned
// which partition when, what each read and what each commit covered.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// memberEvent is one line a member printed. ts is the wall clock in
// microseconds; all members run on this machine.
type memberEvent struct {
	member int
	kind   string // assigned, revoked, lost, read, commit, commitfail, closed
	ts     int64
	parts  []int32         // assigned, revoked, lost
	part   int32           // read
	off    int64           // read
	value  string          // read; the exception for commitfail
	offs   map[int32]int64 // commit: partition to next offset
}

// javaMembers is the group's Java members and everything they printed.
type javaMembers struct {
	t      *testing.T
	mu     sync.Mutex
	events []memberEvent   // in the order each member printed them
	seen   map[string]bool // values read
	procs  []*javaMember
}

type javaMember struct {
	id       int
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stderr   bytes.Buffer
	done     chan struct{}
	waitErr  error
	memberID string
	closed   bool
	bad      []string
}

// startJavaMembers compiles GroupMember848 (cached) and starts n members of
// group on topic with group.protocol protocol (consumer or classic). A missing JDK or jar fails the test (the point of the test
// is the Java client). The members are killed at cleanup if still running.
func startJavaMembers(t *testing.T, n int, bootstrap, group, topic, protocol string) *javaMembers {
	t.Helper()
	jdk := testbroker.FindJDK(testbroker.NoSkip(t))
	classes := jdk.Compile(t, filepath.Join(testbroker.RepoRoot(), "broker", "cluster", "java", "GroupMember848.java"))
	ms := &javaMembers{t: t, seen: map[string]bool{}}
	for i := 0; i < n; i++ {
		// A smaller heap than JVMArgs's: three JVMs beside three brokers
		// on a 2-core machine.
		args := append(append(jdk.JVMArgs(jdk.Classpath(classes)), "-Xmx256m", "GroupMember848"),
			bootstrap, group, topic, fmt.Sprintf("java848-%d", i), protocol)
		m := &javaMember{id: i, done: make(chan struct{})}
		m.cmd = exec.Command(jdk.Java, args...)
		m.cmd.Stderr = &m.stderr
		var err error
		if m.stdin, err = m.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := m.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := m.cmd.Start(); err != nil {
			t.Fatalf("java GroupMember848: %v", err)
		}
		go ms.read(m, stdout)
		ms.procs = append(ms.procs, m)
		t.Cleanup(func() {
			select {
			case <-m.done:
			default:
				m.cmd.Process.Kill()
				<-m.done
			}
		})
	}
	return ms
}

func (ms *javaMembers) read(m *javaMember, stdout io.Reader) {
	defer close(m.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		e, ok := parseMemberEvent(m.id, line)
		ms.mu.Lock()
		switch {
		case !ok:
			m.bad = append(m.bad, line)
		case e.kind == "member":
			m.memberID = e.value
		default:
			if e.kind == "closed" {
				m.closed = true
			}
			if e.kind == "read" {
				ms.seen[e.value] = true
			}
			ms.events = append(ms.events, e)
		}
		ms.mu.Unlock()
	}
	io.Copy(io.Discard, stdout)
	m.waitErr = m.cmd.Wait()
}

func parseMemberEvent(member int, line string) (memberEvent, bool) {
	f := strings.SplitN(line, " ", 3)
	e := memberEvent{member: member, kind: f[0]}
	if e.kind == "member" {
		e.value = strings.TrimSpace(strings.TrimPrefix(line, "member"))
		return e, e.value != ""
	}
	if len(f) < 2 {
		return e, false
	}
	var err error
	if e.ts, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return e, false
	}
	rest := ""
	if len(f) == 3 {
		rest = f[2]
	}
	switch e.kind {
	case "assigned", "revoked", "lost":
		if rest == "-" {
			return e, true
		}
		for _, s := range strings.Split(rest, ",") {
			p, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				return e, false
			}
			e.parts = append(e.parts, int32(p))
		}
	case "read":
		g := strings.SplitN(rest, " ", 3)
		if len(g) != 3 {
			return e, false
		}
		p, err1 := strconv.ParseInt(g[0], 10, 32)
		o, err2 := strconv.ParseInt(g[1], 10, 64)
		if err1 != nil || err2 != nil {
			return e, false
		}
		e.part, e.off, e.value = int32(p), o, g[2]
	case "commit":
		e.offs = map[int32]int64{}
		for _, s := range strings.Split(rest, ",") {
			var p int32
			var o int64
			if _, err := fmt.Sscanf(s, "%d=%d", &p, &o); err != nil {
				return e, false
			}
			e.offs[p] = o
		}
	case "commitfail":
		e.value = rest
	case "closed":
	default:
		return e, false
	}
	return e, true
}

// consumed is how many distinct values the members have read.
func (ms *javaMembers) consumed() int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return len(ms.seen)
}

// memberIDs are the members' ids as they printed them, sorted.
func (ms *javaMembers) memberIDs() string {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	var ids []string
	for _, m := range ms.procs {
		ids = append(ids, m.memberID)
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}

// stop closes the members' stdin (each closes its consumer: a last commit
// and a leave) and fails the test unless each exits 0 having said
// "closed", with nothing unparsed on stdout. The client's WARN lines on
// stderr are logged: connections to a killed broker are expected.
func (ms *javaMembers) stop() {
	t := ms.t
	t.Helper()
	for _, m := range ms.procs {
		m.stdin.Close()
	}
	for _, m := range ms.procs {
		select {
		case <-m.done:
		case <-time.After(90 * time.Second):
			m.cmd.Process.Kill()
			<-m.done
			t.Errorf("java member %d did not close within 90 s", m.id)
		}
		if s := strings.TrimSpace(m.stderr.String()); s != "" {
			t.Logf("java member %d stderr (%d lines), the last:\n%s", m.id, strings.Count(s, "\n")+1, lastLines(s, 15))
			for _, l := range unexpectedClientLog(s) {
				t.Errorf("java member %d logged: %s", m.id, l)
			}
		}
		if m.waitErr != nil || !m.closed || len(m.bad) > 0 {
			t.Errorf("java member %d: exit %v, closed %v, unparsed lines %q\nstderr:\n%s", m.id, m.waitErr, m.closed, m.bad[:min(len(m.bad), 10)], lastLines(m.stderr.String(), 40))
		}
	}
}

// unexpectedClientLog is what the client logged (WARN and above) other
// than losing its connection to a node, which a kill -9 causes. A fenced
// member, a refused commit or a coordinator error would show here: the
// client retries those quietly enough for the group to go on, but against
// Kafka they do not happen on a coordinator move.
func unexpectedClientLog(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(l, "[") { // a stack trace's line, or blank
			continue
		}
		if strings.Contains(l, "could not be established. Node may not be available") ||
			strings.Contains(l, "Disconnecting from node") && strings.Contains(l, "timed out") {
			continue
		}
		out = append(out, l)
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// ordered is every event in wall-clock order; a member's own events keep
// their order when two stamps tie.
func (ms *javaMembers) ordered() []memberEvent {
	ms.mu.Lock()
	es := append([]memberEvent(nil), ms.events...)
	ms.mu.Unlock()
	sort.SliceStable(es, func(i, j int) bool { return es[i].ts < es[j].ts })
	return es
}

// check replays the events in time and returns what broke the group's
// promises to its members:
//   - a partition assigned to a member while another owned it (a member
//     owns from the start of its assign callback to the end of its revoke
//     callback, or until it is told the partition is lost);
//   - a record read, or a commit made, by a member not owning the partition;
//   - a record read below an offset whose commit had returned before the
//     reader's ownership began: the new owner starts from the committed
//     offset, so nothing committed is read again.
//
// It also counts the records read more than once (all of them, by the
// last rule, records whose commit had not returned when their partition
// moved).
func (ms *javaMembers) check() (bad []string, dups int) {
	owner := map[int32]int{}
	committed := map[int32]int64{}     // highest commit returned so far
	floor := map[int]map[int32]int64{} // member -> partition -> committed when its ownership began
	reads := map[string]int{}
	for _, e := range ms.ordered() {
		switch e.kind {
		case "assigned":
			if floor[e.member] == nil {
				floor[e.member] = map[int32]int64{}
			}
			for _, p := range e.parts {
				if prev, ok := owner[p]; ok && prev != e.member {
					bad = append(bad, fmt.Sprintf("partition %d assigned to member %d at %d while member %d owns it", p, e.member, e.ts, prev))
				}
				owner[p] = e.member
				floor[e.member][p] = committed[p]
			}
		case "revoked", "lost":
			for _, p := range e.parts {
				if owner[p] == e.member {
					delete(owner, p)
				}
			}
		case "read":
			reads[e.value]++
			if o, ok := owner[e.part]; !ok || o != e.member {
				bad = append(bad, fmt.Sprintf("member %d read partition %d offset %d at %d without owning it", e.member, e.part, e.off, e.ts))
			} else if f := floor[e.member][e.part]; e.off < f {
				bad = append(bad, fmt.Sprintf("member %d read partition %d offset %d at %d, below offset %d committed before it took the partition", e.member, e.part, e.off, e.ts, f))
			}
		case "commit":
			for p, o := range e.offs {
				if ow, ok := owner[p]; !ok || ow != e.member {
					// The revoke callback commits before it returns, so
					// the owner's commits fall inside its ownership.
					bad = append(bad, fmt.Sprintf("member %d committed partition %d offset %d at %d without owning it", e.member, p, o, e.ts))
				}
				committed[p] = max(committed[p], o)
			}
		}
	}
	for _, n := range reads {
		dups += n - 1
	}
	return bad, dups
}

// commitsAfter is when each member's first commit after us returned, in
// microseconds after us (members that did not commit after us are left out).
func (ms *javaMembers) commitsAfter(us int64) map[int]int64 {
	out := map[int]int64{}
	for _, e := range ms.ordered() {
		if e.kind == "commit" && e.ts > us {
			if _, ok := out[e.member]; !ok {
				out[e.member] = e.ts - us
			}
		}
	}
	return out
}

// countKind is how many events of kind the members printed.
func (ms *javaMembers) countKind(kind string) int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	n := 0
	for _, e := range ms.events {
		if e.kind == kind {
			n++
		}
	}
	return n
}

// classicGroupOf waits up to wait for DescribeGroups to show group as a
// Stable classic consumer group of three members and returns their ids in
// order. Each try is a new client: one that found the coordinator before
// a kill keeps dialing the dead node.
func classicGroupOf(t *testing.T, c *testcluster.Cluster, group string, wait time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		got := func() string {
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...)}, c.ClientOpts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			gs, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
			if err != nil {
				return fmt.Sprintf("describe: %v", err)
			}
			g := gs[group]
			if g.Err != nil || g.State != "Stable" || g.ProtocolType != "consumer" || len(g.Members) != 3 {
				return fmt.Sprintf("state %s, protocol type %q, %d members (%v)", g.State, g.ProtocolType, len(g.Members), g.Err)
			}
			var ids []string
			for _, m := range g.Members {
				ids = append(ids, m.MemberID)
			}
			sort.Strings(ids)
			return "ok " + strings.Join(ids, ",")
		}()
		if strings.HasPrefix(got, "ok ") {
			return strings.TrimPrefix(got, "ok ")
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not a Stable classic group of 3 members: %s", group, got)
		}
		time.Sleep(300 * time.Millisecond)
	}
}
