package cluster

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestFeaturesUpdateAndReplay: transaction.version starts at its default
// (2), changes only with Kafka's checks, and keeps its level across a
// restart (replayed from the metadata log) and in a snapshot.
func TestFeaturesUpdateAndReplay(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir)
	if l := c.Image().FeatureLevel(TransactionVersion); l != 2 {
		t.Fatalf("default transaction.version %d, want 2", l)
	}
	for _, bad := range []FeatureUpdate{
		{Name: "no.such.feature", Level: 1, UpgradeType: 1},
		{Name: TransactionVersion, Level: 3, UpgradeType: 1},
		{Name: TransactionVersion, Level: 1, UpgradeType: 1}, // a downgrade typed as an upgrade
		{Name: TransactionVersion, Level: 1, UpgradeType: 7},
	} {
		var ce *Error
		if err := c.UpdateFeature(bad, false); !errors.As(err, &ce) || ce.Code != kerr.InvalidUpdateVersion {
			t.Errorf("%+v: %v, want INVALID_UPDATE_VERSION", bad, err)
		}
	}
	if err := c.UpdateFeature(FeatureUpdate{Name: TransactionVersion, Level: 1, UpgradeType: 2}, true); err != nil {
		t.Fatal(err)
	}
	if l := c.Image().FeatureLevel(TransactionVersion); l != 2 {
		t.Fatalf("validate-only changed the level to %d", l)
	}
	if err := c.UpdateFeature(FeatureUpdate{Name: TransactionVersion, Level: 1, UpgradeType: 2}, false); err != nil {
		t.Fatal(err)
	}
	if f := c.Image().FinalizedFeatures(); f[TransactionVersion] != 1 {
		t.Fatalf("finalized %v, want transaction.version 1", f)
	}
	c.Close()

	c = openTest(t, dir)
	defer c.Close()
	img := c.Image()
	if l := img.FeatureLevel(TransactionVersion); l != 1 {
		t.Fatalf("after restart transaction.version %d, want 1", l)
	}
	snap, err := emptyImage(img.ClusterID).applyAll(img.records())
	if err != nil {
		t.Fatal(err)
	}
	if l := snap.FeatureLevel(TransactionVersion); l != 1 {
		t.Fatalf("from a snapshot transaction.version %d, want 1", l)
	}
}
