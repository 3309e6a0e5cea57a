package cluster

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/config"
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

// TestFeaturesUpgradedCluster: a new cluster's metadata finalizes
// transaction.version at 2 in a record; a cluster whose metadata was
// written before features existed (brokers, no feature record) runs at 0
// after the upgrade, until the operator raises it, as Kafka does.
func TestFeaturesUpgradedCluster(t *testing.T) {
	c := openTest(t, t.TempDir())
	if l, ok := c.Image().Features[TransactionVersion]; !ok || l != 2 {
		t.Errorf("a new cluster's transaction.version record: %d %v, want 2 written", l, ok)
	}
	c.Close()

	dir := t.TempDir()
	ml, _, err := openMetaLog(filepath.Join(dir, MetadataLogFile), emptyImage("test-cluster"))
	if err != nil {
		t.Fatal(err)
	}
	reg := Broker{ID: 1, Listeners: []config.Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}}
	if err := ml.append([]Record{{RegisterBroker: &reg}}); err != nil {
		t.Fatal(err)
	}
	ml.close()
	c = openTest(t, dir)
	defer c.Close()
	if l := c.Image().FeatureLevel(TransactionVersion); l != 0 {
		t.Fatalf("an upgraded cluster's transaction.version %d, want 0 until raised", l)
	}
	if err := c.UpdateFeature(FeatureUpdate{Name: TransactionVersion, Level: 2, UpgradeType: 1}, false); err != nil {
		t.Fatal(err)
	}
	if l := c.Image().FeatureLevel(TransactionVersion); l != 2 {
		t.Fatalf("after the upgrade transaction.version %d, want 2", l)
	}
}
