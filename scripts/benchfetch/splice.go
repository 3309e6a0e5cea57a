//go:build ignore

package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// splicer moves bytes from a socket into files through a pipe with
// splice(2), so that they are copied once, from the socket's buffers into
// the page cache, and never into this process.
type splicer struct {
	raw    syscall.RawConn
	pipe   [2]int // read end, write end
	inPipe int
}

const fSetPipeSize = 1031 // F_SETPIPE_SZ

func newSplicer(nc *net.TCPConn) (*splicer, error) {
	raw, err := nc.SyscallConn()
	if err != nil {
		return nil, err
	}
	s := &splicer{raw: raw}
	if err := syscall.Pipe2(s.pipe[:], syscall.O_CLOEXEC); err != nil {
		return nil, err
	}
	// A pipe holds 64 KiB by default; a batch must fit whole.
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(s.pipe[1]), fSetPipeSize, 1<<20); errno != 0 {
		s.close()
		return nil, fmt.Errorf("F_SETPIPE_SZ: %w", errno)
	}
	return s, nil
}

func (s *splicer) close() {
	syscall.Close(s.pipe[0])
	syscall.Close(s.pipe[1])
}

// move takes n bytes from the socket and writes them into f at off.
func (s *splicer) move(f *os.File, off int64, n int) error {
	for s.inPipe < n {
		var serr error
		err := s.raw.Read(func(fd uintptr) bool {
			m, err := syscall.Splice(int(fd), nil, s.pipe[1], nil, n-s.inPipe, spliceMove|spliceNonblock)
			if errors.Is(err, syscall.EAGAIN) {
				return false // wait until the socket is readable
			}
			if err == nil && m == 0 {
				err = errors.New("connection closed")
			}
			s.inPipe += int(m)
			serr = err
			return true
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
	}
	for s.inPipe > 0 {
		m, err := syscall.Splice(s.pipe[0], nil, int(f.Fd()), &off, s.inPipe, spliceMove)
		if err != nil {
			return err
		}
		s.inPipe -= int(m)
	}
	return nil
}

const (
	spliceMove     = 1 // SPLICE_F_MOVE
	spliceNonblock = 2 // SPLICE_F_NONBLOCK
)
