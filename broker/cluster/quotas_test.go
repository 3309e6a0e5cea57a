package cluster

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/quota"
)

// Client quotas are decided entry by entry, written only when they change,
// and survive a restart (the metadata log) and a snapshot (Image.records).
func TestClientQuotaRecords(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir)
	name := func(s string) *string { return &s }
	v := func(f float64) *float64 { return &f }
	alice := []quota.Part{{Type: quota.User, Name: name("alice")}}
	aliceApp := []quota.Part{{Type: quota.User, Name: name("alice")}, {Type: quota.ClientID, Name: name("app")}}
	errs, offset, err := c.AlterClientQuotas([]QuotaAlteration{
		{Entity: alice, Ops: []QuotaOp{{Key: quota.ProducerByteRate, Value: v(1024)}, {Key: quota.RequestPercentage, Value: v(12.5)}}},
		{Entity: aliceApp, Ops: []QuotaOp{{Key: quota.ConsumerByteRate, Value: v(2048)}}},
		{Entity: []quota.Part{{Type: quota.User}}, Ops: []QuotaOp{{Key: "bogus", Value: v(1)}}},
		{Entity: alice, Ops: []QuotaOp{{Key: quota.ConsumerByteRate, Value: v(1)}}},
		{Entity: []quota.Part{{Type: quota.ClientID}}, Ops: []QuotaOp{{Key: quota.ProducerByteRate, Value: v(1)}, {Key: quota.ProducerByteRate, Value: v(2)}}},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("valid entries refused: %v %v", errs[0], errs[1])
	}
	for i := 2; i < 5; i++ {
		wantCode(t, errs[i], kerr.InvalidRequest)
	}
	if offset != c.Image().Offset {
		t.Fatalf("offset %d, image at %d", offset, c.Image().Offset)
	}
	// validate_only and setting what is already set write nothing.
	if _, off, err := c.AlterClientQuotas([]QuotaAlteration{{Entity: alice, Ops: []QuotaOp{{Key: quota.ConsumerByteRate, Value: v(5)}}}}, true); err != nil || off != -1 {
		t.Fatalf("validate_only: offset %d, %v", off, err)
	}
	if _, off, err := c.AlterClientQuotas([]QuotaAlteration{{Entity: alice, Ops: []QuotaOp{{Key: quota.ProducerByteRate, Value: v(1024)}}}}, false); err != nil || off != -1 {
		t.Fatalf("an unchanged value: offset %d, %v", off, err)
	}
	// Removing a key that is not there is no error and no record.
	if errs, off, err := c.AlterClientQuotas([]QuotaAlteration{{Entity: alice, Ops: []QuotaOp{{Key: quota.RequestPercentage}, {Key: quota.ControllerMutationRate}}}}, false); err != nil || errs[0] != nil || off != c.Image().Offset {
		t.Fatalf("removal: %v %v offset %d", errs, err, off)
	}
	want := map[string]map[string]float64{
		quota.NewEntity(alice...).Key():    {quota.ProducerByteRate: 1024},
		quota.NewEntity(aliceApp...).Key(): {quota.ConsumerByteRate: 2048},
	}
	got := func(img *Image) map[string]map[string]float64 {
		out := map[string]map[string]float64{}
		for _, e := range img.ClientQuotas.Entries() {
			out[e.Entity.Key()] = e.Values
		}
		return out
	}
	if g := got(c.Image()); !reflect.DeepEqual(g, want) {
		t.Fatalf("quotas: %v, want %v", g, want)
	}
	c.Close()
	c = openTest(t, dir)
	defer c.Close()
	if g := got(c.Image()); !reflect.DeepEqual(g, want) {
		t.Fatalf("quotas after restart: %v, want %v", g, want)
	}
	rebuilt, err := EmptyImage("test-cluster").applyAll(c.Image().records())
	if err != nil {
		t.Fatal(err)
	}
	if g := got(rebuilt); !reflect.DeepEqual(g, want) {
		t.Fatalf("quotas from a snapshot: %v, want %v", g, want)
	}
}
