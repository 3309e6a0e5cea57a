package server

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/tributary-io/tributary/broker/log"
)

// fileRanges carries the record bytes of a Fetch response, which go from the
// segment files to the socket without passing through user space.
//
// A handler sets each partition's records field to a placeholder from add;
// the response is encoded as usual; write then finds each placeholder and
// sends, in its place, the real length prefix and the file range with
// sendfile(2) at an explicit offset (so concurrent readers of one file never
// share a file position). A placeholder is 16 random bytes, so the search
// cannot mistake other response bytes for one.
type fileRanges struct {
	token  [12]byte
	slices []log.Slice
	// flexible responses prefix records with a compact (uvarint) length,
	// older ones with an int32.
	flexible bool
	sendfile bool
	// inline holds the first placeholders, so that a fetch of a few
	// partitions allocates none.
	inline [8][16]byte
}

func newFileRanges(flexible, sendfile bool) *fileRanges {
	f := &fileRanges{flexible: flexible, sendfile: sendfile}
	rand.Read(f.token[:])
	return f
}

// add returns the placeholder to put where s's bytes belong.
func (f *fileRanges) add(s log.Slice) []byte {
	var p []byte
	if i := len(f.slices); i < len(f.inline) {
		p = f.inline[i][:]
	} else {
		p = make([]byte, 16)
	}
	copy(p, f.token[:])
	binary.BigEndian.PutUint32(p[12:], uint32(len(f.slices)))
	f.slices = append(f.slices, s)
	return p
}

func (f *fileRanges) empty() bool { return len(f.slices) == 0 }

// release lets the slices' segments close, once the response is written or
// dropped: until then each slice holds its segment's file open, so the
// bytes sent are the ones read, whatever retention, compaction or
// DeleteTopics did meanwhile. Safe on nil.
func (f *fileRanges) release() {
	if f == nil {
		return
	}
	for i := range f.slices {
		f.slices[i].Release()
	}
}

// A response this small is read into memory and sent with one write: a
// caught-up consumer's fetch carries a few hundred bytes, and a write and a
// sendfile per partition cost it far more system calls (and TCP segments)
// than the bytes are worth copying.
const copyBelow = 64 << 10

// piece is a stretch of the response: encoded bytes, then a file range.
type piece struct {
	head  []byte // bytes of the frame before the slice's length prefix
	slice log.Slice
}

// appendLength appends the length prefix of a records field of size bytes.
func (f *fileRanges) appendLength(dst []byte, size int64) []byte {
	if f.flexible {
		return binary.AppendUvarint(dst, uint64(size)+1)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(size))
}

// write sends frame (4 bytes reserved for the size, then the encoded
// response) with every placeholder replaced by its file range.
func (f *fileRanges) write(nc net.Conn, frame []byte) error {
	var few [8]piece
	pieces := few[:0]
	total := int64(0)
	rest := frame[4:]
	prefixLen := 4
	if f.flexible {
		prefixLen = 1 // uvarint(16+1)
	}
	var length [binary.MaxVarintLen64]byte
	for i := range f.slices {
		at := bytes.Index(rest, f.token[:])
		if at < prefixLen || int(binary.BigEndian.Uint32(rest[at+12:])) != i {
			return fmt.Errorf("broker/server: fetch placeholder %d not found", i)
		}
		s := f.slices[i]
		pieces = append(pieces, piece{rest[:at-prefixLen], s})
		total += int64(at-prefixLen+len(f.appendLength(length[:0], s.Size))) + s.Size
		rest = rest[at+16:]
	}
	total += int64(len(rest))
	binary.BigEndian.PutUint32(frame, uint32(total))
	if total <= copyBelow {
		return f.writeCopied(nc, frame[:4], pieces, rest, total)
	}
	out := append([]byte(nil), frame[:4]...)
	for _, p := range pieces {
		out = f.appendLength(append(out, p.head...), p.slice.Size)
		if err := writeAll(nc, out); err != nil {
			return err
		}
		out = out[:0]
		if err := f.sendSlice(nc, p.slice); err != nil {
			return err
		}
	}
	return writeAll(nc, append(out, rest...))
}

// writeCopied sends the response in one write, the file ranges read into
// it. A range the file no longer holds in full reads as zeros, as in
// sendSlice.
func (f *fileRanges) writeCopied(nc net.Conn, size []byte, pieces []piece, rest []byte, total int64) error {
	out := append(getBody(int(4 + total))[:0], size...)
	defer putBody(out)
	for _, p := range pieces {
		out = f.appendLength(append(out, p.head...), p.slice.Size)
		at := len(out)
		out = out[:at+int(p.slice.Size)]
		n, err := p.slice.File.ReadAt(out[at:], p.slice.Pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		clear(out[at+n:])
	}
	return writeAll(nc, append(out, rest...))
}

func writeAll(nc net.Conn, b []byte) error {
	_, err := nc.Write(b)
	return err
}

// sendSlice writes exactly s.Size bytes of s. If the file shrank under us (a
// truncation raced with the fetch), the missing tail is zeros: the frame
// length is already promised, and clients drop a batch that does not parse
// at the end of a partition's records.
func (f *fileRanges) sendSlice(nc net.Conn, s log.Slice) error {
	sent := int64(0)
	if tc, ok := nc.(*net.TCPConn); ok && f.sendfile {
		n, err := sendfile(tc, s)
		sent = n
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
	} else {
		n, err := io.Copy(nc, io.NewSectionReader(s.File, s.Pos, s.Size))
		sent = n
		if err != nil {
			return err
		}
	}
	if sent < s.Size {
		_, err := nc.Write(make([]byte, s.Size-sent))
		return err
	}
	return nil
}

// sendfile copies s to the socket in the kernel.
//
// The source descriptor is used only inside the file's own Control call,
// which holds it open for the call's duration, never as a bare number
// kept across calls: a descriptor closed and reused meanwhile would send
// another file's bytes. (The caller's Slice holds the segment open too;
// this keeps even a misuse from reading a reused descriptor.)
func sendfile(tc *net.TCPConn, s log.Slice) (int64, error) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0, err
	}
	src, err := s.File.SyscallConn()
	if err != nil {
		return 0, err
	}
	off, remain := s.Pos, s.Size
	var serr, werr error
	cerr := src.Control(func(srcFd uintptr) {
		werr = rc.Write(func(fd uintptr) bool {
			for remain > 0 {
				n, err := syscall.Sendfile(int(fd), int(srcFd), &off, int(min(remain, 1<<30)))
				if n > 0 {
					remain -= int64(n)
				}
				switch {
				case err == syscall.EAGAIN:
					return false // wait until the socket is writable
				case err == syscall.EINTR:
					continue
				case err != nil:
					serr = err
					return true
				case n == 0:
					serr = io.EOF // the file is shorter than promised
					return true
				}
			}
			return true
		})
	})
	if cerr != nil {
		return 0, cerr
	}
	if werr != nil {
		return s.Size - remain, werr
	}
	return s.Size - remain, serr
}
