package testbroker

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// Test ports come from 20000–31999, below the kernel's ephemeral range
// (32768 and up on Linux) where every test's outgoing connections take
// their local ports: a port from that range, free when checked, was now and
// then taken by an outgoing connection before the broker bound it.
//
// The range is cut into blocks, and each test process claims one with
// flock(2) on a file per block, which the kernel releases when the process
// ends, however it ends. Ports picked at random across the whole range
// collided between packages tested in parallel: a test that kills a broker
// to restart it on the same port leaves that port free for a moment, and
// another package's test took it.
const (
	portsFrom  = 20000
	portBlocks = 12
	blockSize  = 1000
)

var ports struct {
	sync.Mutex
	claimed    bool
	lock       *os.File // held open for the life of the process
	base, next int
}

func freePort(t testing.TB) int {
	ports.Lock()
	defer ports.Unlock()
	if !ports.claimed {
		ports.claimed = true
		// Processes starting together start at different blocks.
		ports.base, ports.lock = claimPortBlock(os.Getpid())
	}
	if ports.lock != nil {
		for range blockSize {
			port := ports.base + ports.next%blockSize
			ports.next++
			if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				ln.Close()
				return port
			}
		}
	}
	// Every block held by other processes, or every port of ours busy:
	// the kernel's pick, from the ephemeral range.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// claimPortBlock returns the first port of a block no other process holds,
// trying blocks from start on, and the locked file that holds it; nil if
// none could be claimed.
func claimPortBlock(start int) (int, *os.File) {
	dir := filepath.Join(os.TempDir(), "tributary-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, nil
	}
	for i := range portBlocks {
		b := (start + i) % portBlocks
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("block-%d.lock", b)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			return portsFrom + b*blockSize, f
		}
		f.Close()
	}
	return 0, nil
}
