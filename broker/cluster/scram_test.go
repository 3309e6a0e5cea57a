package cluster

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/auth"
)

// SCRAM credentials are decided user by user, survive a restart (the
// metadata log) and a snapshot (Image.records), and one user holds both
// mechanisms.
func TestScramCredentials(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir)
	salt := []byte("salt-salt-salt")
	up := func(user string, m auth.ScramMechanism, iter int32) ScramChange {
		return ScramChange{User: user, Mechanism: m, Salt: salt, SaltedPassword: m.SaltPassword("pw", salt, int(iter)), Iterations: iter}
	}
	errs, offset, err := c.AlterScram([]ScramChange{
		up("alice", auth.ScramSHA256, 4096), up("alice", auth.ScramSHA512, 8192),
		up("bob", auth.ScramSHA256, 100),
		up("carol", auth.ScramSHA256, 4096), up("carol", auth.ScramSHA256, 4096),
		{User: "dave", Mechanism: auth.ScramSHA512, Delete: true},
		{User: "erin", Mechanism: auth.ScramSHA256, Salt: make([]byte, 1025), SaltedPassword: salt, Iterations: 4096},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, errs["bob"], kerr.UnacceptableCredential)
	wantCode(t, errs["carol"], kerr.DuplicateResource)
	wantCode(t, errs["dave"], kerr.ResourceNotFound)
	wantCode(t, errs["erin"], kerr.UnacceptableCredential)
	// The metadata log holds credentials: for the broker's user only.
	if fi, err := os.Stat(filepath.Join(dir, MetadataLogFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("metadata log: %v, %v", fi, err)
	}
	if errs["alice"] != nil || offset != c.Image().Offset {
		t.Fatalf("alice: %v, offset %d of %d", errs["alice"], offset, c.Image().Offset)
	}
	// Bootstrap users never reset an existing credential.
	again := up("alice", auth.ScramSHA256, 4096)
	again.IfAbsent, again.Salt = true, []byte("another salt")
	if _, off, err := c.AlterScram([]ScramChange{again}); err != nil || off != c.Image().Offset || !c.Image().ScramBootstrapped {
		t.Fatalf("IfAbsent over an existing user: offset %d, %v, bootstrapped %v", off, err, c.Image().ScramBootstrapped)
	}
	// Bootstrap users are applied once in the cluster's life: a user
	// deleted since does not come back when a controller starts again.
	if _, off, err := c.AlterScram([]ScramChange{{User: "frank", Mechanism: auth.ScramSHA256, Salt: salt,
		SaltedPassword: salt, Iterations: 4096, IfAbsent: true}}); err != nil || off != -1 {
		t.Fatalf("bootstrap users applied twice: offset %d, %v", off, err)
	}
	c.Close()

	c = openTest(t, dir)
	defer c.Close()
	img := c.Image()
	if got := img.ScramUsers(); len(got) != 1 || got[0] != "alice" {
		t.Fatalf("users after restart: %v", got)
	}
	want := auth.ScramSHA512.Credential(auth.ScramSHA512.SaltPassword("pw", salt, 8192), salt, 8192)
	if got, ok := img.ScramCredential("alice", auth.ScramSHA512); !ok || !bytes.Equal(got.StoredKey, want.StoredKey) || got.Iterations != 8192 {
		t.Fatalf("alice's SHA-512 credential after restart: %+v", got)
	}
	if got, _ := img.ScramCredential("alice", auth.ScramSHA256); !bytes.Equal(got.Salt, salt) {
		t.Fatal("IfAbsent reset alice's credential")
	}
	rebuilt, err := EmptyImage("test-cluster").applyAll(img.records())
	if err != nil {
		t.Fatal(err)
	}
	if !img.ScramBootstrapped || !rebuilt.ScramBootstrapped {
		t.Fatalf("the bootstrap marker is lost: after restart %v, in a snapshot %v", img.ScramBootstrapped, rebuilt.ScramBootstrapped)
	}
	if len(rebuilt.Scram["alice"]) != 2 {
		t.Fatalf("a snapshot loses SCRAM credentials: %v", rebuilt.Scram)
	}
	if _, _, err := c.AlterScram([]ScramChange{{User: "alice", Mechanism: auth.ScramSHA256, Delete: true}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Image().ScramCredential("alice", auth.ScramSHA256); ok {
		t.Fatal("deleted credential still there")
	}
	if _, ok := img.ScramCredential("alice", auth.ScramSHA256); !ok {
		t.Fatal("a change modified an earlier image")
	}
}
