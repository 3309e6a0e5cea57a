package cluster

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
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
