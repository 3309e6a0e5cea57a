package txncheck

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestOutcome: only a commit that was sent can have committed. An abort
// whose EndTransaction failed, and a commit franz-go did not send, are
// aborted, so reading them whole is an aborted read; a commit sent whose
// answer was lost stays unknown.
func TestOutcome(t *testing.T) {
	lost := fmt.Errorf("end: %w", context.DeadlineExceeded)
	for _, c := range []struct {
		commit bool
		err    error
		want   Outcome
	}{
		{true, nil, Committed},
		{false, nil, Aborted},
		{false, lost, Aborted},
		{false, kerr.CoordinatorNotAvailable, Aborted},
		{true, kerr.OperationNotAttempted, Aborted},
		{true, fmt.Errorf("wrapped: %w", kerr.OperationNotAttempted), Aborted},
		{true, lost, Unknown},
	} {
		got := outcome(c.commit, c.err)
		if got != c.want {
			t.Errorf("commit %v, EndTransaction error %v: %s, want %s", c.commit, c.err, got, c.want)
		}
		txns := []Txn{{ID: "t", Values: []string{"a", "b"}, Outcome: got}}
		r := Check(txns, []Read{{"a", 0, 1}, {"b", 1, 1}})
		if wantAborted := c.want == Aborted; (r.AbortedReads == 2) != wantAborted {
			t.Errorf("commit %v, EndTransaction error %v, read whole: %v", c.commit, c.err, r)
		}
	}
}
