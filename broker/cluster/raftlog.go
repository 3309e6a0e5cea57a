package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
)

// raftLog carries hashicorp/raft's log lines (hclog's text format,
// "2026-11-30T05:02:02.033Z [WARN]  raft: message: key=value") into the
// broker's structured log, so that one format reaches the operator.
type raftLog struct{ logger *slog.Logger }

func (w raftLog) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimSpace(p), []byte("\n")) {
		s := string(line)
		level := slog.LevelInfo
		if i := strings.Index(s, "["); i >= 0 {
			if j := strings.Index(s[i:], "]"); j > 0 {
				switch strings.TrimSpace(s[i+1 : i+j]) {
				case "ERROR":
					level = slog.LevelError
				case "WARN":
					level = slog.LevelWarn
				case "DEBUG", "TRACE":
					level = slog.LevelDebug
				}
				s = strings.TrimSpace(s[i+j+1:])
			}
		}
		w.logger.Log(context.Background(), level, s, "component", "raft")
	}
	return len(p), nil
}
