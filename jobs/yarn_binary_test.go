package jobs

import (
	"bytes"
	"crypto/rand"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

// The yarn executor's binary on a real HDFS: uploaded once per content,
// taken by an application and given back; two applications at once get two
// copies; a copy whose bytes differ (same size) is found by its HDFS
// checksum and replaced. HDFS's checksum of a multi-block file equals the
// one computed from the local bytes.
func TestYARNBinaryReuse(t *testing.T) {
	t.Parallel()
	staging := "hdfs://" + testhdfs.Get(t).NameNode + testhdfs.Dir(t)
	// 1 MiB blocks: the checksum spans blocks, and the last one is partial.
	fs, err := fsys.Open(staging, fsys.Options{User: testhdfs.DefaultUser, BlockSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	bin := filepath.Join(t.TempDir(), "tributary")
	data := make([]byte, 2<<20+777)
	rand.Read(data)
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &yarnExecutor{cfg: YARN{Binary: bin}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	stage := func(app string, wantReused bool) func() bool {
		t.Helper()
		dst := path.Join("tributary", app, "tributary")
		reused, giveBack, err := e.stageBinary(fs, staging, dst, app)
		if err != nil {
			t.Fatal(err)
		}
		if reused != wantReused {
			t.Fatalf("%s: reused %v, want %v", app, reused, wantReused)
		}
		got, err := fs.ReadFile(dst)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: the staged binary differs from the local one (%d bytes, %v)", app, len(got), err)
		}
		return giveBack
	}

	stage("application_1_0001", false)()
	info, _ := binaryInfo(bin)
	dir := path.Join("bin", info.hash)
	sum, blockSize, err := fsys.Checksum(fs, path.Join(dir, "application_1_0001"))
	if err != nil {
		t.Fatal(err)
	}
	local, _ := fsys.LocalChecksum(bytes.NewReader(data), blockSize)
	if blockSize != 1<<20 || !bytes.Equal(sum, local) {
		t.Fatalf("HDFS checksum %x (block size %d), computed locally %x", sum, blockSize, local)
	}

	stage("application_1_0002", true)()
	// Two at once: the second uploads a copy of its own.
	give3 := stage("application_1_0003", true)
	give4 := stage("application_1_0004", false)
	give3()
	give4()
	ents, _ := fs.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("copies in %s: %d, want 2", dir, len(ents))
	}

	// Same size, other bytes: both copies fail the checksum and are
	// removed; the binary is uploaded again.
	bad := append([]byte(nil), data...)
	bad[len(bad)/2] ^= 0xff
	for _, ent := range ents {
		if err := fs.WriteFileAtomic(path.Join(dir, ent.Name()), bad); err != nil {
			t.Fatal(err)
		}
		// The cache's own mode: only the checksum can tell these apart.
		if err := fsys.Chmod(fs, path.Join(dir, ent.Name()), yarnBinaryPerm); err != nil {
			t.Fatal(err)
		}
	}
	stage("application_1_0005", false)()
	if ents, _ := fs.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("copies in %s after the bad ones: %d, want 1", dir, len(ents))
	}
	stage("application_1_0006", true)()
}
