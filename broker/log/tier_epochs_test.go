package log

import (
	"testing"
)

// A tiered log's local retention leaves the leader epochs of the remote
// range known: a consumer that read epoch 0 from remote storage asks the
// new leader where epoch 0 ended, and "unknown" would make it reset to the
// start as if the log had diverged (franz-go did, in the 3-node tier test).
func TestTieredRetentionKeepsEpochs(t *testing.T) {
	for _, tiered := range []bool{true, false} {
		l := lifetimeLog(t, 20, func(c *Config) {
			c.RemoteStorage = tiered
			c.LocalRetentionBytes = 600
			c.RetentionBytes = 600
		})
		epoch1 := l.LogEndOffset()
		for i := range 20 {
			if _, err := l.AppendAsLeader(kvBatch(t, 0, kv{"k", string(rune('a' + i))}), 1); err != nil {
				t.Fatal(err)
			}
		}
		l.SetTierView(&TierView{UploadedEnd: l.LogEndOffset})
		if n, err := l.EnforceRetention(); err != nil || n == 0 {
			t.Fatalf("tiered %v: retention deleted %d segments, %v", tiered, n, err)
		}
		if l.LogStartOffset() <= epoch1 {
			t.Fatalf("tiered %v: local start %d, want past epoch 1's start %d", tiered, l.LogStartOffset(), epoch1)
		}
		e, ok := l.EndOffsetForEpoch(0)
		if tiered && (!ok || e.Epoch != 0 || e.StartOffset != epoch1) {
			t.Fatalf("tiered: epoch 0 ends at %+v %v, want %d", e, ok, epoch1)
		}
		if !tiered && ok {
			t.Fatalf("untiered: epoch 0 still known (%+v) after its records were deleted", e)
		}
	}
}
