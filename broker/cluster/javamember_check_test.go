package cluster_test

import (
	"strings"
	"testing"
)

// TestJavaMembersCheck: the replay behind the Java KIP-848 kill test finds
// each broken promise it looks for in a made-up history, and passes a
// clean handover (revoke with a commit, then assign to another member).
func TestJavaMembersCheck(t *testing.T) {
	t.Parallel()
	history := func(lines ...string) *javaMembers {
		ms := &javaMembers{t: t, seen: map[string]bool{}}
		for _, l := range lines {
			member := int(l[0] - '0')
			e, ok := parseMemberEvent(member, l[2:])
			if !ok {
				t.Fatalf("unparsed %q", l)
			}
			ms.events = append(ms.events, e)
		}
		return ms
	}
	for _, tc := range []struct {
		name  string
		lines []string
		want  string // in the one finding, or "" for none
		dups  int
	}{
		{"clean handover", []string{
			"0 assigned 10 0,1",
			"0 read 11 0 0 record-0",
			"0 commit 12 0=1",
			"0 commit 13 0=1,1=0",
			"0 revoked 14 0",
			"1 assigned 15 0",
			"1 read 16 0 1 record-1",
		}, "", 0},
		{"uncommitted read again", []string{
			"0 assigned 10 0",
			"0 read 11 0 0 record-0",
			"0 lost 12 0",
			"1 assigned 15 0",
			"1 read 16 0 0 record-0",
		}, "", 1},
		{"two owners", []string{
			"0 assigned 10 0",
			"1 assigned 11 0",
		}, "assigned to member 1 at 11 while member 0 owns it", 0},
		{"committed read again", []string{
			"0 assigned 10 0",
			"0 read 11 0 0 record-0",
			"0 commit 12 0=1",
			"0 revoked 13 0",
			"1 assigned 14 0",
			"1 read 15 0 0 record-0",
		}, "below offset 1 committed before it took the partition", 1},
		{"read without owning", []string{
			"0 assigned 10 1",
			"0 read 11 0 0 record-0",
		}, "without owning it", 0},
		{"commit after revoke", []string{
			"0 assigned 10 0",
			"0 revoked 11 0",
			"0 commit 12 0=5",
		}, "committed partition 0 offset 5 at 12 without owning it", 0},
	} {
		bad, dups := history(tc.lines...).check()
		switch {
		case tc.want == "" && len(bad) > 0:
			t.Errorf("%s: findings %q, want none", tc.name, bad)
		case tc.want != "" && (len(bad) != 1 || !strings.Contains(bad[0], tc.want)):
			t.Errorf("%s: findings %q, want one with %q", tc.name, bad, tc.want)
		}
		if dups != tc.dups {
			t.Errorf("%s: %d read twice, want %d", tc.name, dups, tc.dups)
		}
	}
}

// TestUnexpectedClientLog: a lost connection to a killed node is expected
// of a kill; a member fenced by the coordinator is a finding.
func TestUnexpectedClientLog(t *testing.T) {
	t.Parallel()
	got := unexpectedClientLog(`[2026-12-02 19:50:23,337] WARN [Consumer clientId=java848-0, groupId=g] Connection to node +3 (/127.0.0.1:31004) could not be established. Node may not be available. (org.apache.kafka.clients.NetworkClient)
[2026-12-02 19:50:24,000] ERROR [Consumer clientId=java848-0, groupId=g] Member x with epoch 4 fenced: FENCED_MEMBER_EPOCH (org.apache.kafka.clients.consumer.internals.ConsumerMembershipManager)
	at some.Frame(Frame.java:1)`)
	if len(got) != 1 || !strings.Contains(got[0], "FENCED_MEMBER_EPOCH") {
		t.Errorf("findings %q, want the fenced member only", got)
	}
}
