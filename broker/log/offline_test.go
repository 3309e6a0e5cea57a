package log

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of size on a new directory until the test ends:
// a file system that really fills up. Without the permission the test fails
// under CI and is skipped elsewhere.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		msg := "mounting a tmpfs needs root or CAP_SYS_ADMIN: " + err.Error() + ": " + strings.TrimSpace(string(out))
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		if exec.Command("umount", dir).Run() != nil {
			exec.Command("umount", "-l", dir).Run()
		}
	})
	return dir
}

// TestDirGoesOfflineOnENOSPC: the append that hits a full file system fails
// and is not counted, the dir goes offline and says so once, nothing is
// appended or created there afterwards, Close writes nothing (no
// clean-shutdown marker), and once there is room again the dir opens with
// every append that succeeded.
func TestDirGoesOfflineOnENOSPC(t *testing.T) {
	path := mountTmpfs(t, "256k")
	cfg := DefaultDirConfig(path)
	failures := make(chan error, 4)
	cfg.OnFailure = func(err error) { failures <- err }
	d, err := OpenDir(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{"t", 0}
	l, err := d.Create(tp, cfg.Defaults)
	if err != nil {
		t.Fatal(err)
	}
	var end int64
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("256 KiB took 10 MB of appends")
		}
		end = l.LogEndOffset()
		if _, err = l.AppendAsLeader(testBatch(t, 10, 1000, 1000, "none"), 0); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ENOSPC) || !IsIOError(err) {
		t.Fatalf("the failing append returned %v, want ENOSPC", err)
	}
	if l.LogEndOffset() != end {
		t.Fatalf("log end %d after the failed append, want %d", l.LogEndOffset(), end)
	}
	select {
	case ferr := <-failures:
		if !errors.Is(ferr, syscall.ENOSPC) {
			t.Fatalf("OnFailure told %v", ferr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnFailure not called")
	}
	if d.Offline() == nil {
		t.Fatal("the dir is not offline")
	}
	// closeForWrites runs on OnFailure's goroutine, before the callback.
	if _, err := l.AppendAsLeader(testBatch(t, 1, 10, 1000, "none"), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("append to a failed dir: %v, want ErrClosed", err)
	}
	if _, err := d.Create(TopicPartition{"t", 1}, cfg.Defaults); !errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("create in a failed dir: %v, want ErrLogDirOffline", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close of a failed dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(path, CleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed dir got a clean-shutdown marker: %v", err)
	}
	select {
	case err := <-failures:
		t.Fatalf("OnFailure told twice: %v", err)
	default:
	}

	if out, err := exec.Command("mount", "-o", "remount,size=4m", path).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v: %s", err, out)
	}
	cfg.OnFailure = nil
	d, err = OpenDir(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	l, ok := d.Log(tp)
	if !ok || l.LogEndOffset() != end {
		t.Fatalf("reopened: log end %d, want %d", l.LogEndOffset(), end)
	}
	if _, err := l.AppendAsLeader(testBatch(t, 10, 1000, 1000, "none"), 0); err != nil {
		t.Fatalf("append after the repair: %v", err)
	}
}
