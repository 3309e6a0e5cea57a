package cluster

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
)

// ACLs are validated one by one, created once however often asked,
// survive a restart (the metadata log) and a snapshot (Image.records), and
// a deletion leaves earlier images alone.
func TestAcls(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir)
	b := func(name string, pat acl.PatternType) acl.Binding {
		return acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: name, PatternType: pat,
			Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
	}
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	errs, offset, err := c.CreateAcls([]acl.Binding{b("a", lit), b("a", lit), b("p-", pre), b("", lit), b("m", kmsg.ACLResourcePatternTypeMatch)})
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatalf("valid bindings refused: %v", errs)
	}
	wantCode(t, errs[3], kerr.InvalidRequest)
	wantCode(t, errs[4], kerr.InvalidRequest)
	if c.Image().Acls.Len() != 2 || offset != c.Image().Offset {
		t.Fatalf("%d ACLs at offset %d of %d", c.Image().Acls.Len(), offset, c.Image().Offset)
	}
	if _, off, err := c.CreateAcls([]acl.Binding{b("a", lit)}); err != nil || off != -1 {
		t.Fatalf("creating an existing ACL again: offset %d, %v", off, err)
	}
	c.Close()

	c = openTest(t, dir)
	defer c.Close()
	img := c.Image()
	if !img.Acls.Has(b("a", lit)) || !img.Acls.Has(b("p-", pre)) || img.Acls.Len() != 2 {
		t.Fatalf("after restart: %v", img.Acls.All())
	}
	rebuilt, err := EmptyImage("test-cluster").applyAll(img.records())
	if err != nil {
		t.Fatal(err)
	}
	if rebuilt.Acls.Len() != 2 {
		t.Fatalf("a snapshot loses ACLs: %v", rebuilt.Acls.All())
	}
	name := "pay"
	matched, errs, _, err := c.DeleteAcls([]acl.Filter{
		{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny, ResourceName: &name},
		{ResourceType: kmsg.ACLResourceTypeTopic, PatternType: pre, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny},
		{ResourceType: kmsg.ACLResourceTypeUnknown},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(matched[0]) != 0 || len(matched[1]) != 1 || matched[1][0] != b("p-", pre) || errs[0] != nil || errs[1] != nil {
		t.Fatalf("DeleteAcls: matched %v, errs %v", matched, errs)
	}
	wantCode(t, errs[2], kerr.InvalidRequest)
	if c.Image().Acls.Has(b("p-", pre)) || !img.Acls.Has(b("p-", pre)) {
		t.Fatal("the deletion is not in the new image, or changed the old one")
	}
}
