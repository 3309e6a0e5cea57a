package log

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tributary-io/tributary/broker/record"
)

const (
	benchReadLogBytes   = 256 << 20 // sealed log the read benchmarks fetch from
	benchActiveLogBytes = 64 << 20  // active segment of segment=active
	benchFetchBatch     = 16 << 10  // batch size of the logs read: Kafka's default batch.size
)

// BenchmarkRead is the fetch path from the page cache: Read, then the slice
// copied into a buffer (ReadAt), or sent to a loopback TCP connection with
// sendfile(2) or with read+write. The reference does the same with the same
// file and positions, without Read. Every sub-benchmark reports CPU time per
// GB of the sending thread: a broker's cost of serving a consumer.
func BenchmarkRead(b *testing.B) {
	dir := benchDir(b)
	batch := benchBatch(b, benchFetchBatch, benchValueSize)
	perBatch := int64(record.Batch(batch).RecordCount())
	payload := benchRepeat(batch, 64)

	// A sealed segment: what a consumer behind the active segment reads.
	sealed := benchOpenLog(b, filepath.Join(dir, "sealed-0"), Options{CleanShutdown: true})
	b.Cleanup(func() { sealed.Close() })
	benchFillLog(b, sealed, payload, benchReadLogBytes)
	if err := sealed.Roll(); err != nil {
		b.Fatal(err)
	}
	// An active segment: what a consumer close to the log end reads.
	active := benchOpenLog(b, filepath.Join(dir, "active-0"), Options{CleanShutdown: true})
	b.Cleanup(func() { active.Close() })
	benchFillLog(b, active, payload, benchActiveLogBytes)

	conn := benchLoopbackSink(b)
	raw, err := conn.SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = 1 // touched: see benchWarmUp
	}

	// Sinks: where a fetched range goes.
	toBuffer := func(f *os.File, pos, n int64) error {
		_, err := f.ReadAt(buf[:n], pos)
		return err
	}
	viaSendfile := func(f *os.File, pos, n int64) error { return benchSendFile(raw, f, pos, n) }
	viaReadWrite := func(f *os.File, pos, n int64) error {
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return err
		}
		_, err := conn.Write(buf[:n])
		return err
	}

	for _, c := range []struct {
		name  string
		log   *Log
		fetch int64
		sink  func(*os.File, int64, int64) error
	}{
		{"to=buffer/fetch=16KiB", sealed, 16 << 10, toBuffer},
		{"to=buffer/fetch=1MiB", sealed, 1 << 20, toBuffer},
		{"to=tcp/sendfile/fetch=1MiB", sealed, 1 << 20, viaSendfile},
		{"to=tcp/readwrite/fetch=1MiB", sealed, 1 << 20, viaReadWrite},
		// Before 0aa82ea, Read walked every batch header from the read
		// position to the end of the active segment: 0.03 of the reference.
		{"to=buffer/segment=active/fetch=1MiB", active, 1 << 20, toBuffer},
	} {
		b.Run(c.name, func(b *testing.B) {
			benchRead(b, c.log, perBatch, c.fetch, c.sink)
		})
	}
}

func benchRead(b *testing.B, l *Log, perBatch, fetch int64, sink func(*os.File, int64, int64) error) {
	// The log's first segment holds every batch; the reference reads its
	// file through a handle of its own.
	seg := l.segments()[0]
	size := seg.size.Load()
	plain, err := os.Open(seg.path(logSuffix))
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close()
	// Warm every page once (pages idle for long may have gone cold).
	for pos := int64(0); pos < size; pos += 1 << 20 {
		if err := sink(plain, pos, min(1<<20, size-pos)); err != nil {
			b.Fatal(err)
		}
	}

	next := int64(0)
	trib := &benchSide{name: "tributary", op: func() error {
		s, err := l.Read(next, ReadOptions{MaxBytes: int(fetch), UpTo: -1})
		if err != nil {
			return err
		}
		defer s.Release()
		if s.Size != fetch {
			return fmt.Errorf("read at %d: %d bytes, want %d", next, s.Size, fetch)
		}
		if err := sink(s.File, s.Pos, s.Size); err != nil {
			return err
		}
		next = s.FirstOffset + s.Size/benchFetchBatch*perBatch
		if next >= seg.nextOffset {
			next = 0
		}
		return nil
	}}
	pos := int64(0)
	ref := &benchSide{name: "plain", op: func() error {
		if err := sink(plain, pos, fetch); err != nil {
			return err
		}
		if pos += fetch; pos+fetch > size {
			pos = 0
		}
		return nil
	}}
	b.SetBytes(fetch)
	benchAlternate(b, int(max(1, benchChunk/fetch)), nil, trib, ref)
	benchReport(b, fetch, true, trib, ref)
}

// benchLoopbackSink is a TCP connection to a goroutine that reads and discards
// everything, like a consumer on the same host.
func benchLoopbackSink(b *testing.B) *net.TCPConn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
		buf := make([]byte, 4<<20)
		for {
			if _, err := c.Read(buf); err != nil {
				c.Close()
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	if <-accepted == nil {
		b.Fatal("loopback accept failed")
	}
	b.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// benchSendFile sends n bytes of f from pos to the socket with sendfile(2) at an
// explicit offset. Go's own path (io.Copy to a *net.TCPConn from an
// io.LimitedReader of an *os.File) sends from the file's current position,
// which every reader of a segment shares, so a server must seek a shared
// handle or do this.
func benchSendFile(sock syscall.RawConn, f *os.File, pos, n int64) error {
	fc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	cerr := fc.Control(func(ffd uintptr) {
		for n > 0 && serr == nil {
			werr := sock.Write(func(sfd uintptr) bool {
				for n > 0 {
					w, err := syscall.Sendfile(int(sfd), int(ffd), &pos, int(min(n, 1<<30)))
					if w > 0 {
						n -= int64(w)
					}
					switch {
					case err == syscall.EAGAIN:
						return false // wait until the socket is writable
					case err == syscall.EINTR:
					case err != nil:
						serr = err
						return true
					case w == 0:
						serr = io.ErrUnexpectedEOF
						return true
					}
				}
				return true
			})
			if werr != nil && serr == nil {
				serr = werr
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	return serr
}
