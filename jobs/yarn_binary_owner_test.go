package jobs

import (
	"bytes"
	"crypto/rand"
	"io"
	iofs "io/fs"
	"log/slog"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"testing"

	"github.com/colinmarc/hdfs/v2"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

// Review 5: a copy in the binary cache that someone else could have put
// there is not run. The HDFS superuser (the OS user that started the test
// HDFS) plants copies with the binary's size and a wrong owner, mode or
// content, or loosens the cache dir; each time the application gets a
// fresh upload, owned by the user and 0500, and the cache dirs are 0700.
func TestYARNBinaryReusePlanted(t *testing.T) {
	t.Parallel()
	c := testhdfs.Get(t)
	root := testhdfs.Dir(t)
	fs, err := fsys.Open("hdfs://"+c.NameNode+root, fsys.Options{User: testhdfs.DefaultUser, BlockSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	su, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{c.NameNode}, User: me.Username})
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close()
	// fsys's writer waits out "replication in progress" on Close.
	suFS, err := fsys.Open("hdfs://"+c.NameNode+root, fsys.Options{User: me.Username, BlockSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer suFS.Close()

	bin := filepath.Join(t.TempDir(), "tributary")
	data := make([]byte, 1<<20+333)
	rand.Read(data)
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &yarnExecutor{cfg: YARN{Binary: bin}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	info, err := binaryInfo(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := path.Join("bin", info.hash)
	mode := func(name string, owner string, perm iofs.FileMode) {
		t.Helper()
		o, p, err := fsys.Owner(fs, name)
		if err != nil || o != owner || p != perm {
			t.Fatalf("%s: owner %s, mode %v (%v): want %s, %v", name, o, p, err, owner, perm)
		}
	}
	n := 0
	stage := func(wantReused bool) func() bool {
		t.Helper()
		n++
		app := "application_5_" + string(rune('a'+n))
		dst := path.Join("tributary", app, "tributary")
		reused, giveBack, err := e.stageBinary(fs, "hdfs://"+c.NameNode+root, dst, app)
		if err != nil {
			t.Fatal(err)
		}
		if reused != wantReused {
			t.Fatalf("%s: reused %v, want %v", app, reused, wantReused)
		}
		if got, err := fs.ReadFile(dst); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: the staged binary differs from the local one (%d bytes, %v)", app, len(got), err)
		}
		mode(dst, testhdfs.DefaultUser, 0o500)
		mode(path.Dir(dst), testhdfs.DefaultUser, 0o700)
		return giveBack
	}
	// plant empties the cache dir and puts one copy there as the superuser.
	plant := func(owner string, perm iofs.FileMode, content []byte) {
		t.Helper()
		d := path.Join(root, dir)
		if err := su.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
		if err := su.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := su.Chown(d, testhdfs.DefaultUser, ""); err != nil {
			t.Fatal(err)
		}
		f := path.Join(d, "a-planted")
		if err := suFS.WriteFileAtomic(path.Join(dir, "a-planted"), content); err != nil {
			t.Fatal(err)
		}
		if err := su.Chown(f, owner, ""); err != nil {
			t.Fatal(err)
		}
		if err := su.Chmod(f, perm); err != nil {
			t.Fatal(err)
		}
	}
	gone := func() {
		t.Helper()
		if _, err := fs.Stat(path.Join(dir, "a-planted")); !fsys.IsNotExist(err) {
			t.Fatalf("the planted copy is still in the cache (%v)", err)
		}
	}

	stage(false)()
	mode("bin", testhdfs.DefaultUser, 0o700)
	mode(dir, testhdfs.DefaultUser, 0o700)
	stage(true)()

	// The right bytes, someone else's file.
	plant("mallory", 0o500, data)
	stage(false)()
	gone()
	// The right bytes, the user's file, but others could have written it.
	plant(testhdfs.DefaultUser, 0o666, data)
	stage(false)()
	gone()
	// The right owner and mode, other bytes of the same size.
	other := append([]byte(nil), data...)
	other[len(other)/3] ^= 0x5a
	plant(testhdfs.DefaultUser, 0o500, other)
	stage(false)()
	gone()
	// A good-looking copy in a cache dir others could write.
	plant(testhdfs.DefaultUser, 0o500, data)
	if err := su.Chmod(path.Join(root, dir), 0o777); err != nil {
		t.Fatal(err)
	}
	stage(false)()
	gone()
	mode(dir, testhdfs.DefaultUser, 0o700)
	stage(true)()

	// A cache dir owned by someone else, which the user cannot remove: the
	// cache is not used, and the binary is not given back into it.
	plant("mallory", 0o500, data)
	if err := su.Chown(path.Join(root, dir), "mallory", ""); err != nil {
		t.Fatal(err)
	}
	if err := su.Chmod(path.Join(root, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	stage(false)()
	if ents, _ := fs.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "a-planted" {
		t.Fatalf("the binary was given back into someone else's cache dir: %d entries", len(ents))
	}
}
