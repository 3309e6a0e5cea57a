package cluster

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestRaftLogBecomesStructured(t *testing.T) {
	var buf bytes.Buffer
	w := raftLog{slog.New(slog.NewTextHandler(&buf, nil))}
	w.Write([]byte("[WARN]  raft: heartbeat timeout reached, starting election: last-leader-addr= last-leader-id=\n"))
	w.Write([]byte("[DEBUG] raft: not shown at info\n"))
	out := buf.String()
	if !strings.Contains(out, `level=WARN msg="raft: heartbeat timeout reached`) || !strings.Contains(out, "component=raft") {
		t.Fatalf("got %q", out)
	}
	if strings.Contains(out, "not shown") {
		t.Fatalf("a debug line passed the info level: %q", out)
	}
}
