package jobs

import (
	"context"
	"io"
	iofs "io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/colinmarc/hdfs/v2"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/loader"
)

// A staging root that the group or others can write is refused before
// anything is uploaded or submitted, with its path and mode in the error;
// a missing one or a 0755 one is taken.
func TestYARNStagingRootWritable(t *testing.T) {
	t.Parallel()
	c := testhdfs.Get(t)
	root := "hdfs://" + c.NameNode + testhdfs.Dir(t)
	opts := fsys.Options{User: testhdfs.DefaultUser}
	fs, err := fsys.Open(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	var submits atomic.Int32
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/new-application") {
			io.WriteString(w, `{"application-id":"application_1_0001"}`)
			return
		}
		submits.Add(1)
		http.Error(w, "unexpected", http.StatusInternalServerError)
	}))
	defer rm.Close()
	plan := &loader.Plan{Run: "r1", Job: "j", Units: make([]loader.Unit, 2)}
	for _, tc := range []struct {
		dir  string
		perm iofs.FileMode
		want string
	}{
		{"open", 0o777, "has mode drwxrwxrwx (0777): it is group- or other-writable"},
		{"group", 0o775, "has mode drwxrwxr-x (0775): it is group- or other-writable"},
		{"other", 0o703, "has mode drwx----wx (0703)"},
	} {
		if err := fsys.MkdirAll(fs, tc.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Chmod(fs, tc.dir, tc.perm); err != nil {
			t.Fatal(err)
		}
		staging := root + "/" + tc.dir
		e := &yarnExecutor{cfg: YARN{ResourceManager: rm.URL, AMJar: "/nonexistent/dshell.jar", Staging: staging, MaxContainers: 1},
			target: root, opts: opts, hdfsUser: testhdfs.DefaultUser, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			record: func(Application) {}}
		err := e.execute(context.Background(), plan, 1)
		if err == nil || !strings.Contains(err.Error(), "the staging dir "+staging+" "+tc.want) {
			t.Fatalf("%s: got %v, want the staging dir's path and %q", tc.dir, err, tc.want)
		}
		if ents, _ := fs.ReadDir(tc.dir); len(ents) != 0 {
			t.Fatalf("%s: %d entries staged into a refused dir", tc.dir, len(ents))
		}
	}
	if n := submits.Load(); n != 0 {
		t.Fatalf("%d submissions with a writable staging dir", n)
	}

	// Missing: created 0755 by fsys.Open, and taken; 0755: taken.
	for _, tc := range []struct {
		dir  string
		make bool
		want iofs.FileMode
	}{{"fresh/yarn", false, 0o755}, {"shared", true, 0o755}} {
		if tc.make {
			fsys.MkdirAll(fs, tc.dir, 0o755)
			fsys.Chmod(fs, tc.dir, 0o755)
		}
		sub, err := fsys.Open(root+"/"+tc.dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkStagingRoot(sub, root+"/"+tc.dir); err != nil {
			t.Fatalf("%s: %v", tc.dir, err)
		}
		sub.Close()
		if _, perm, err := fsys.Owner(fs, tc.dir); err != nil || perm != tc.want {
			t.Fatalf("%s: mode %v (%v), want %v", tc.dir, perm, err, tc.want)
		}
	}
}

// Review H1: who owns the staging root, the directories above it and its
// lib/ and tributary/ matters as much as the root's mode. The HDFS
// superuser (the OS user that started the test HDFS) plays mallory's part
// with chown.
func TestYARNStagingRootOwners(t *testing.T) {
	t.Parallel()
	c := testhdfs.Get(t)
	base := testhdfs.Dir(t)
	opts := fsys.Options{User: testhdfs.DefaultUser}
	fs, err := fsys.Open("hdfs://"+c.NameNode+base, opts)
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
	mkdir := func(dir, owner string, perm os.FileMode) {
		t.Helper()
		if err := su.MkdirAll(base+"/"+dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := su.Chown(base+"/"+dir, owner, ""); err != nil {
			t.Fatal(err)
		}
		// Raw bits: 01777 is the sticky bit to the NameNode.
		if err := su.Chmod(base+"/"+dir, perm); err != nil {
			t.Fatal(err)
		}
	}
	me2 := testhdfs.DefaultUser
	// 0777: fsys.Open must be able to write it; the owner is what is refused.
	mkdir("mallorys", "mallory", 0o777)
	mkdir("open", me2, 0o777)
	mkdir("open/yarn", me2, 0o755)
	mkdir("sticky", me2, 0o1777)
	mkdir("sticky/yarn", me2, 0o755)
	mkdir("malparent", "mallory", 0o755)
	mkdir("malparent/yarn", me2, 0o755)
	mkdir("planted", me2, 0o755)
	mkdir("planted/lib", "mallory", 0o755)
	mkdir("planted2", me2, 0o755)
	mkdir("planted2/tributary", me2, 0o777)
	for _, tc := range []struct{ dir, want string }{
		{"mallorys", "is owned by mallory, not by the submitting user tributary"},
		{"open/yarn", "is under " + base + "/open, mode drwxrwxrwx (0777): group- or other-writable and not sticky"},
		{"sticky/yarn", ""},
		{"malparent/yarn", "is under " + base + "/malparent, owned by mallory"},
		{"planted", "/planted/lib is owned by mallory with mode drwxr-xr-x (0755)"},
		{"planted2", "/planted2/tributary is owned by tributary with mode drwxrwxrwx (0777)"},
	} {
		staging := "hdfs://" + c.NameNode + base + "/" + tc.dir
		sub, err := fsys.Open(staging, opts)
		if err != nil {
			t.Fatal(err)
		}
		err = checkStagingRoot(sub, staging)
		sub.Close()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.dir, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "fresh staging dir")):
			t.Errorf("%s: got %v, want %q", tc.dir, err, tc.want)
		}
	}

	// Review L1: the keytab is 0400 from its creation on, before a byte is
	// written, and nobody else can read it (this HDFS enforces permissions).
	w, err := fsys.CreateMode(fs, "keytabs/k", 0o400)
	if err != nil {
		t.Fatal(err)
	}
	if owner, perm, err := fsys.Owner(fs, "keytabs/k"); err != nil || owner != me2 || perm != 0o400 {
		t.Fatalf("a keytab just created: owner %s, mode %v (%v), want %s, 0400", owner, perm, err, me2)
	}
	w.Write([]byte("keys"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := fs.ReadFile("keytabs/k"); err != nil || string(got) != "keys" {
		t.Fatalf("the keytab reads back %q (%v)", got, err)
	}
	mal, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{c.NameNode}, User: "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	defer mal.Close()
	if _, err := mal.ReadFile(base + "/keytabs/k"); err == nil || !strings.Contains(err.Error(), "AccessControlException") {
		t.Fatalf("mallory reading the keytab: %v, want permission denied", err)
	}
	e0 := &yarnExecutor{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	fsys.MkdirAll(fs, "app", 0o700)
	if err := e0.stageKeytab(fs, "app", &yarnSecurity{keytab: []byte("keys")}); err != nil {
		t.Fatal(err)
	}
	if _, perm, err := fsys.Owner(fs, "app/"+yarnKeytab); err != nil || perm != 0o400 {
		t.Fatalf("the staged keytab: mode %v (%v)", perm, err)
	}

	// The AM's jar: reused only if the user wrote it and it holds the
	// local bytes; a same-size jar of other bytes or another owner is not.
	jar := filepath.Join(t.TempDir(), "dshell.jar")
	os.WriteFile(jar, []byte("the real jar"), 0o644)
	e := &yarnExecutor{cfg: YARN{AMJar: jar}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := fs.WriteFileAtomic("lib/dshell.jar", []byte("the real jar")); err != nil {
		t.Fatal(err)
	}
	if err := e.checkAMJar(fs, "lib/dshell.jar", 12); err != nil {
		t.Fatalf("the user's own jar: %v", err)
	}
	if err := fs.WriteFileAtomic("lib/dshell.jar", []byte("a forged jar")); err != nil {
		t.Fatal(err)
	}
	if err := e.checkAMJar(fs, "lib/dshell.jar", 12); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a same-size jar of other bytes: %v", err)
	}
	if err := fs.WriteFileAtomic("lib/dshell.jar", []byte("the real jar")); err != nil {
		t.Fatal(err)
	}
	if err := su.Chown(base+"/lib/dshell.jar", "mallory", ""); err != nil {
		t.Fatal(err)
	}
	if err := e.checkAMJar(fs, "lib/dshell.jar", 12); err == nil || !strings.Contains(err.Error(), "owner mallory") {
		t.Fatalf("mallory's jar: %v", err)
	}
}
