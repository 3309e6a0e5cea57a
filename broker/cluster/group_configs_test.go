package cluster

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/config"
)

// TestGroupConfigsInMetadataLog: a group config set through the controller
// is in the image after a restart and in a snapshot; a refused one changes
// nothing and is INVALID_CONFIG; a delete removes it.
func TestGroupConfigsInMetadataLog(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir)
	ok := func(map[string]string) error { return nil }
	v := "earliest"
	if err := c.AlterGroupConfigs("g", []ConfigChange{{Name: "share.auto.offset.reset", Value: &v}}, ok, false); err != nil {
		t.Fatal(err)
	}
	bad := "sometimes"
	err := c.AlterGroupConfigs("g", []ConfigChange{{Name: "share.auto.offset.reset", Value: &bad}}, func(next map[string]string) error {
		return errors.New("Invalid value " + next["share.auto.offset.reset"])
	}, false)
	if e, ok := IsError(err); !ok || e.Code != kerr.InvalidConfig {
		t.Fatalf("refused change: %v, want INVALID_CONFIG", err)
	}
	if got := c.Image().GroupConfigs["g"]["share.auto.offset.reset"]; got != "earliest" {
		t.Fatalf("after a refused change %q, want earliest", got)
	}
	c.Close()

	c = openTest(t, dir)
	defer c.Close()
	img := c.Image()
	if got := img.GroupConfigs["g"]["share.auto.offset.reset"]; got != "earliest" {
		t.Fatalf("after a restart %q, want earliest", got)
	}
	snap, err := emptyImage(img.ClusterID).applyAll(img.records())
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.GroupConfigs["g"]["share.auto.offset.reset"]; got != "earliest" {
		t.Fatalf("from a snapshot %q, want earliest", got)
	}
	if err := c.AlterGroupConfigs("g", []ConfigChange{{Name: "share.auto.offset.reset"}}, ok, false); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Image().GroupConfigs["g"]; ok {
		t.Fatalf("after the delete: %v", c.Image().GroupConfigs)
	}
}

// TestGroupConfigBounds: group configs are kept for at most
// maxGroupConfigGroups groups, with ids of at most MaxGroupConfigIDLength
// bytes; past either the change is refused naming the bound, and a group
// that has configs may still change or drop them (review M5).
func TestGroupConfigBounds(t *testing.T) {
	defer func(n int) { maxGroupConfigGroups = n }(maxGroupConfigGroups)
	maxGroupConfigGroups = 2
	c := openTest(t, t.TempDir())
	defer c.Close()
	ok := func(map[string]string) error { return nil }
	v := "earliest"
	set := []ConfigChange{{Name: "share.auto.offset.reset", Value: &v}}
	err := c.AlterGroupConfigs(strings.Repeat("g", MaxGroupConfigIDLength+1), set, ok, false)
	if e, isErr := IsError(err); !isErr || e.Code != kerr.InvalidRequest || !strings.Contains(err.Error(), "at most 255 bytes") {
		t.Fatalf("a group id past the bound: %v, want INVALID_REQUEST naming 255", err)
	}
	for _, g := range []string{"a", "b"} {
		if err := c.AlterGroupConfigs(g, set, ok, false); err != nil {
			t.Fatal(err)
		}
	}
	err = c.AlterGroupConfigs("c", set, ok, false)
	if e, isErr := IsError(err); !isErr || e.Code != kerr.PolicyViolation || !strings.Contains(err.Error(), "(2)") {
		t.Fatalf("a third group: %v, want POLICY_VIOLATION naming the bound 2", err)
	}
	if err := c.AlterGroupConfigs("a", []ConfigChange{{Name: "share.auto.offset.reset"}}, ok, false); err != nil {
		t.Fatalf("dropping a group's configs at the bound: %v", err)
	}
	if err := c.AlterGroupConfigs("c", set, ok, false); err != nil {
		t.Fatalf("a group after another's configs were dropped: %v", err)
	}
}

// TestGroupConfigReplayLinear: restoring a snapshot of 100,000 groups'
// configs (as fsm.Restore applies it) takes well under a second; it was
// quadratic, 6.5 s for 20,000 (review M5).
func TestGroupConfigReplayLinear(t *testing.T) {
	const n = 100000
	rs := make([]Record, 0, n)
	v := "earliest"
	for i := range n {
		rs = append(rs, Record{GroupConfig: &GroupConfigRecord{Group: fmt.Sprintf("g-%07d", i), Name: "share.auto.offset.reset", Value: &v}})
	}
	base := emptyImage("x")
	start := time.Now()
	img, err := base.applyAll(rs)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if len(img.GroupConfigs) != n || img.Offset != base.Offset+n || len(base.GroupConfigs) != 0 {
		t.Fatalf("groups %d offset %d (base groups %d), want %d and %d", len(img.GroupConfigs), img.Offset, len(base.GroupConfigs), n, base.Offset+n)
	}
	// 0.1 s, 1.3 s under -race on a loaded 2-core machine; quadratic was
	// minutes. The bound tells the two apart with room for a slow CI run.
	t.Logf("replaying %d group configs took %v", n, took.Round(time.Millisecond))
	if took > 60*time.Second {
		t.Fatalf("replaying %d group configs took %v", n, took)
	}
}

// TestGroupConfigsNeedGroupVersion: a cluster upgraded from a version
// without group configs (metadata with brokers and no group.version) runs
// group.version 0 and refuses them, naming the feature to finalize, so
// that no older node meets a GroupConfig record it cannot read; after
// `kafka-features.sh upgrade --feature group.version=1` they are kept. A
// new cluster starts at 1 (review M6).
func TestGroupConfigsNeedGroupVersion(t *testing.T) {
	ok := func(map[string]string) error { return nil }
	v := "earliest"
	set := []ConfigChange{{Name: "share.auto.offset.reset", Value: &v}}
	c := openTest(t, t.TempDir())
	if l := c.Image().FeatureLevel(GroupVersion); l != 1 {
		t.Errorf("a new cluster's group.version %d, want 1", l)
	}
	if err := c.AlterGroupConfigs("g", set, ok, false); err != nil {
		t.Errorf("a new cluster: %v", err)
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
	err = c.AlterGroupConfigs("g", set, ok, false)
	if e, isErr := IsError(err); !isErr || e.Code != kerr.UnsupportedVersion || !strings.Contains(err.Error(), "--feature group.version=1") {
		t.Fatalf("an upgraded cluster at group.version 0: %v, want UNSUPPORTED_VERSION naming the upgrade", err)
	}
	if len(c.Image().GroupConfigs) != 0 {
		t.Fatalf("a refused change was kept: %v", c.Image().GroupConfigs)
	}
	if err := c.UpdateFeature(FeatureUpdate{Name: GroupVersion, Level: 1, UpgradeType: 1}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.AlterGroupConfigs("g", set, ok, false); err != nil {
		t.Fatalf("after the upgrade: %v", err)
	}
	if err := c.UpdateFeature(FeatureUpdate{Name: GroupVersion, Level: 0, UpgradeType: 2}, false); err == nil {
		t.Fatal("a safe downgrade of group.version was allowed: older nodes would meet the records")
	}
}
