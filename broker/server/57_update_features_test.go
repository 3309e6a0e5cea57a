package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFeaturesDuplicateName: an UpdateFeatures naming a feature twice is
// INVALID_REQUEST, as in Kafka, and changes nothing: checked one by one,
// an upgrade and a downgrade of the same feature would each pass and the
// level would depend on their order.
func TestFeaturesDuplicateName(t *testing.T) {
	s := startBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, v := range []int16{1, 2} {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.SetVersion(v)
		for _, u := range []struct {
			level int16
			typ   int8
		}{{1, 2}, {2, 1}} {
			fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = "transaction.version", u.level, u.typ
			req.FeatureUpdates = append(req.FeatureUpdates, fu)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		code := resp.ErrorCode
		if v < 2 && code == 0 && len(resp.Results) > 0 {
			code = resp.Results[0].ErrorCode
		}
		if code != kerr.InvalidRequest.Code {
			t.Errorf("v%d, transaction.version twice: %v, want INVALID_REQUEST", v, kerr.ErrorForCode(code))
		}
		if l := s.ctrl.Image().FeatureLevel("transaction.version"); l != 2 {
			t.Fatalf("v%d: transaction.version is %d after the refused request, want 2", v, l)
		}
	}
}
