package cluster_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// SIGTERM of a leader moves its leadership before it stops (controlled
// shutdown): producers go on without waiting out its session, and lose
// nothing. When it is back, `tributary cluster elect-leaders` gives it its
// preferred leadership again.
func TestControlledShutdownAndPreferredElection(t *testing.T) {
	c, _ := startQueue(t, 1)
	w := testcluster.StartWorkload(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: "q", Rate: 1000, Key: "hot"})
	time.Sleep(2 * time.Second)
	preferred := leaderOf(t, c, 0)
	stopped := time.Now()
	c.Node(preferred).Stop()
	took := time.Since(stopped)
	l, d := newLeader(t, c, preferred, stopped)
	t.Logf("broker %d stopped in %v; broker %d led %v after SIGTERM", preferred, took.Round(time.Millisecond), l, d.Round(time.Millisecond))
	// Fencing would move it only a session after the broker stopped.
	if d >= sessionTimeout {
		t.Errorf("leadership moved %v after SIGTERM (the broker took %v to stop), want within the %v session", d, took, sessionTimeout)
	}
	if _, ok := w.AwaitAck(time.Now(), 10*time.Second); !ok {
		t.Fatal("nothing acknowledged after the controlled shutdown")
	}

	c.Node(preferred).Restart()
	waitISR(t, c, "q", 3)
	out, err := exec.Command(testbroker.Binary(t), "cluster", "elect-leaders", "-b", c.Bootstrap(), "--topic", "q").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "elected") {
		t.Fatalf("tributary cluster elect-leaders: %v\n%s", err, out)
	}
	t.Logf("tributary cluster elect-leaders:\n%s", out)
	// Every broker's metadata shows it within a Raft heartbeat or two on
	// an idle machine; the bound only detects a hang.
	elected := time.Now()
	for deadline := elected.Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		now := leaderOf(t, c, 0)
		if now == preferred {
			t.Logf("the preferred leader in the metadata %v after elect-leaders returned", time.Since(elected).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader %d 30 s after the preferred election, want %d", now, preferred)
		}
	}
	if _, ok := w.AwaitAck(time.Now(), 15*time.Second); !ok {
		t.Fatal("nothing acknowledged after the preferred election")
	}
	score(t, c, minAcked, w.Stop())
}
