package testhdfs_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"

	"github.com/tributary-io/tributary/internal/testhdfs"
)

func TestMain(m *testing.M) { testhdfs.Main(m) }

func client(t *testing.T, c *testhdfs.Cluster, user string) *hdfs.Client {
	t.Helper()
	cl, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{c.NameNode}, User: user})
	if err != nil {
		t.Fatalf("connect to %s as %s: %v", c.NameNode, user, err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// TestSmoke writes, renames, reads back, lists and deletes a 10 MB file on the
// real HDFS, as the unprivileged test user, with colinmarc/hdfs (the client the
// loader uses).
func TestSmoke(t *testing.T) {
	c := testhdfs.Get(t)
	cl := client(t, c, c.User)

	dir := path.Join("/user", c.User, "smoke")
	if err := cl.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	data := make([]byte, 10<<20)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rnd.Uint32())
	}

	// A 4 MiB block size (the NameNode's minimum is 1 MiB), so the file spans
	// three blocks and the writer opens three DataNode pipelines.
	tmp := path.Join(dir, "data.bin.tmp")
	start := time.Now()
	w, err := cl.CreateFile(tmp, 1, 4<<20, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); off += 1 << 20 { // 1 MiB writes, as a Parquet writer flushes
		if _, err := w.Write(data[off : off+1<<20]); err != nil {
			t.Fatalf("write at %d: %v", off, err)
		}
	}
	// The NameNode may not have confirmed the last block's replicas yet;
	// the client says so with ErrReplicating and the close is retried, as
	// the loader's writer will have to.
	for deadline := time.Now().Add(30 * time.Second); ; {
		err := w.Close()
		if err == nil {
			break
		}
		if !hdfs.IsErrReplicating(err) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	wrote := time.Since(start)

	final := path.Join(dir, "data.bin")
	if err := cl.Rename(tmp, final); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Stat(%s) after the rename: %v, want not exist", tmp, err)
	}

	start = time.Now()
	r, err := cl.Open(final)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	read := time.Since(start)
	if !bytes.Equal(got, data) {
		n := 0
		for n < len(got) && n < len(data) && got[n] == data[n] {
			n++
		}
		t.Fatalf("read back %d bytes, first difference at %d; wrote %d", len(got), n, len(data))
	}

	infos, err := cl.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Name() != "data.bin" || infos[0].Size() != int64(len(data)) {
		var names []string
		for _, fi := range infos {
			names = append(names, fi.Name())
		}
		t.Fatalf("ReadDir(%s) = %v, want [data.bin] of %d bytes", dir, names, len(data))
	}
	if fi := infos[0].(*hdfs.FileInfo); fi.Owner() != c.User {
		t.Errorf("owner of %s is %q, want %q", final, fi.Owner(), c.User)
	}

	if err := cl.Remove(final); err != nil {
		t.Fatal(err)
	}
	if err := cl.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Stat(%s) after Remove: %v, want not exist", dir, err)
	}
	mb := float64(len(data)) / (1 << 20)
	t.Logf("10 MiB: write %v (%.0f MiB/s), read %v (%.0f MiB/s)", wrote.Round(time.Millisecond), mb/wrote.Seconds(), read.Round(time.Millisecond), mb/read.Seconds())
}

// TestPermissions: permissions are on, so the test user cannot write outside
// its home and /tmp (the loader's "target not writable" case relies on it).
func TestPermissions(t *testing.T) {
	c := testhdfs.Get(t)
	if c.State == "" {
		t.Skip("an outside cluster (TRIBUTARY_HDFS_NAMENODE): its permissions are its own")
	}
	cl := client(t, c, c.User)
	err := cl.Mkdir("/not-yours", 0o755)
	if !errors.Is(err, os.ErrPermission) {
		t.Fatalf("Mkdir(/not-yours) as %s: %v, want a permission error", c.User, err)
	}
	d := testhdfs.Dir(t)
	if err := cl.Mkdir(d, 0o755); err != nil {
		t.Fatalf("Mkdir(%s) in the world-writable /tmp: %v", d, err)
	}
	if err := cl.CreateEmptyFile(path.Join(d, "x")); err != nil {
		t.Fatal(err)
	}
}
