//go:build ignore

package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

// The ceilings are the most a broker can expect on this machine: the same
// bytes moved over loopback the way the raw clients move them, with no
// protocol, no index, no checksum and no bookkeeping. They move from run to
// run with the machine's memory as much as the brokers do (a broker's raw
// consume has run at 134 % of the read ceiling of the round before it), so
// they are read as a scale next to the brokers' figures, not a bound.
//
//	benchfetch ceiling write -dir D -bytes 4GiB -conns 2 -partitions 6
//	benchfetch ceiling read -files 'D/topic-*/*.log'
func ceiling(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: benchfetch ceiling write|read [flags]")
	}
	fs := flag.NewFlagSet("ceiling "+args[0], flag.ExitOnError)
	label := fs.String("label", "", "printed first")
	// The faster of the two on loopback for each direction (see
	// serverSockBuf): a ceiling no broker setting can beat.
	sockBuf := map[string]int{"write": -1, "read": 102400}[args[0]]
	fs.IntVar(&serverSockBuf, "sockbuf", sockBuf, "SO_SNDBUF and SO_RCVBUF of the end that plays the broker (a broker's socket.send.buffer.bytes and socket.receive.buffer.bytes); -1 for the kernel's autotuning")
	switch args[0] {
	case "write-client": // the child of ceiling write
		addr := fs.String("addr", "", "")
		conns := fs.Int("conns", 2, "")
		frameBytes := fs.Int("frame-bytes", 0, "")
		frames := fs.Int64("frames", 0, "")
		fs.Parse(args[1:])
		return writeClient(*addr, *conns, *frameBytes, *frames)
	case "read-client": // the child of ceiling read
		addr := fs.String("addr", "", "")
		total := fs.Int64("bytes", 0, "")
		fs.Parse(args[1:])
		return readClient(*addr, *total)
	case "write":
		dir := fs.String("dir", "", "directory for the files written (removed after)")
		total := fs.String("bytes", "1GiB", "bytes to write")
		conns := fs.Int("conns", 2, "connections")
		partitions := fs.Int("partitions", 6, "files, split over the connections")
		splice := fs.Bool("splice", false, "move the bytes with splice(2) through a pipe, never into this process")
		fs.Parse(args[1:])
		want, err := parseSize(*total)
		if err != nil || *dir == "" {
			return fmt.Errorf("ceiling write: -dir and -bytes needed (-bytes %q)", *total)
		}
		return ceilingWrite(*dir, want, *conns, *partitions, *splice, *label)
	case "read":
		pattern := fs.String("files", "", "glob of the files to send, e.g. a topic's segment files")
		fs.Parse(args[1:])
		files, err := filepath.Glob(*pattern)
		if err != nil || len(files) == 0 {
			return fmt.Errorf("ceiling read: -files %q matches no file", *pattern)
		}
		return ceilingRead(files, *label)
	}
	return fmt.Errorf("ceiling %q: want write or read", args[0])
}

// serverSockBuf is the socket buffer size of the end that plays the
// broker. It matters on loopback. Sending files, 100 KiB is faster: the
// receiver copies the bytes out while they are still in the CPU's cache,
// and with the kernel's autotuned megabytes sendfile ran at half the
// speed. Receiving, autotuning is faster: a fixed 100 KiB caps the window,
// and the ceiling wrote 1.6-1.8 times slower with it.
var serverSockBuf int

// asBroker gives nc the socket buffers a broker's connection has.
func asBroker(nc *net.TCPConn) error {
	if serverSockBuf <= 0 {
		return nil
	}
	if err := nc.SetReadBuffer(serverSockBuf); err != nil {
		return err
	}
	return nc.SetWriteBuffer(serverSockBuf)
}

// batchBytes is the raw producer's batch: one pwrite per partition per
// request, as a broker appending a produce request does.
const batchBytes = 64 << 10

// ceilingWrite has a client process (writeClient) send want bytes over
// conns loopback connections in frames of one 64 KiB batch per partition
// of the connection, up to 5 frames in flight (produce -client raw's
// requests, without their headers). The receiver reads each frame into
// one buffer, pwrites each batch at the end of its partition's file and
// answers with 4 bytes. With splice the receiver moves each batch from the
// socket into a pipe and from the pipe into the file: one copy fewer, the
// bytes never in user space.
func ceilingWrite(dir string, want int64, conns, partitions int, splice bool, label string) error {
	if conns < 1 || conns > partitions {
		return fmt.Errorf("ceiling write: -conns %d must be from 1 to -partitions %d", conns, partitions)
	}
	dir, err := os.MkdirTemp(dir, "ceiling-write-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	perConn := partitions / conns
	frameBytes := perConn * batchBytes
	frames := max(1, want/int64(conns*frameBytes))

	errs := make(chan error, conns+1)
	go func() {
		for c := range conns {
			nc, err := ln.Accept()
			if err != nil {
				errs <- err
				return
			}
			go func() { errs <- receive(nc.(*net.TCPConn), dir, c, perConn, frames, splice) }()
		}
	}()
	out, err := client("write-client", "-addr", ln.Addr().String(), "-conns", fmt.Sprint(conns),
		"-frame-bytes", fmt.Sprint(frameBytes), "-frames", fmt.Sprint(frames))
	if err != nil {
		return err
	}
	for range conns {
		if err := <-errs; err != nil {
			return err
		}
	}
	fmt.Print(label, out)
	return nil
}

// client runs this program again as the client end of a ceiling, in a
// process of its own as a broker's clients are: within one process, with
// no switch between address spaces at each wakeup, sending about 4 GB of
// files cost 0.9 machine CPU seconds against 1.1-1.3 across two, a
// saving no broker could have. It returns what the client printed: its
// measured run.
func client(args ...string) (string, error) {
	cmd := exec.Command(os.Args[0], append([]string{"ceiling"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("ceiling %s: %w", args[0], err)
	}
	return string(out), nil
}

// writeClient sends frames frames of frameBytes on each of conns
// connections to addr, up to 5 in flight on each, and prints the rate.
func writeClient(addr string, conns, frameBytes int, frames int64) error {
	frame := make([]byte, frameBytes)
	for i := range frame {
		frame[i] = byte(i*7 + i>>9) // not all zeros; the kernel copies it either way
	}
	errs := make(chan error, 2*conns)
	before, err := takeSample(0)
	if err != nil {
		return err
	}
	for range conns {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer nc.Close()
		var ack [4]byte
		go pipeline(nc, frame, frames, func() error { _, err := io.ReadFull(nc, ack[:]); return err }, errs)
	}
	for range conns {
		if err := <-errs; err != nil {
			return err
		}
	}
	after, err := takeSample(0)
	if err != nil {
		return err
	}
	printRate(frames*int64(conns*frameBytes), before, after)
	return nil
}

// printRate prints the line every ceiling ends with: the machine's busy CPU
// seconds cover both ends, the client's and the server's.
func printRate(bytes int64, before, after sample) {
	wall := after.wall.Sub(before.wall).Seconds()
	fmt.Printf("MBs=%.1f bytes=%d wall=%.4f machine=%.2f\n", float64(bytes)/wall/1e6, bytes, wall, after.machineBusy-before.machineBusy)
}

// receive is one connection's receiving end in ceilingWrite.
func receive(nc *net.TCPConn, dir string, conn, perConn int, frames int64, splice bool) error {
	defer nc.Close()
	if err := asBroker(nc); err != nil {
		return err
	}
	var sp *splicer
	if splice {
		var err error
		if sp, err = newSplicer(nc); err != nil {
			return err
		}
		defer sp.close()
	}
	files := make([]*os.File, perConn)
	ends := make([]int64, perConn)
	for i := range files {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%d-%d.log", conn, i)))
		if err != nil {
			return err
		}
		defer f.Close()
		files[i] = f
	}
	buf := make([]byte, perConn*batchBytes)
	var ack [4]byte
	for range frames {
		if sp != nil {
			for i, f := range files {
				if err := sp.move(f, ends[i], batchBytes); err != nil {
					return err
				}
				ends[i] += batchBytes
			}
		} else {
			if _, err := io.ReadFull(nc, buf); err != nil {
				return err
			}
			for i, f := range files {
				n, err := f.WriteAt(buf[i*batchBytes:(i+1)*batchBytes], ends[i])
				if err != nil {
					return err
				}
				ends[i] += int64(n)
			}
		}
		if _, err := nc.Write(ack[:]); err != nil {
			return err
		}
	}
	return nil
}

// fetchBytes and partBytes are consume's default Fetch limits.
const (
	fetchBytes = 64 << 20
	partBytes  = 16 << 20
)

// ceilingRead sends files whole over one loopback connection to a client
// process (readClient) twice, the second time measured, as answers of up
// to 64 MiB made of ranges of up to 16 MiB taken from the files in turn,
// each answer a 4-byte length then sendfile(2) per range (a broker's Fetch
// answer). The reader asks for each answer with 4 bytes and reads it into
// one reused buffer.
func ceilingRead(files []string, label string) error {
	slices.Sort(files)
	var total int64
	opened := make([]*os.File, len(files))
	sizes := make([]int64, len(files))
	for i, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		opened[i], sizes[i], total = f, st.Size(), total+st.Size()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() { served <- serveFiles(ln, opened, sizes) }()
	out, err := client("read-client", "-addr", ln.Addr().String(), "-bytes", fmt.Sprint(total))
	if err != nil {
		return err
	}
	if err := <-served; err != nil {
		return err
	}
	fmt.Print(label, out)
	return nil
}

// readClient reads total bytes of answers from addr twice and prints the
// rate of the second pass.
func readClient(addr string, total int64) error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	buf := make([]byte, fetchBytes)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1 // memory that sat idle is slow on its first touch
	}
	var before, after sample
	for pass := range 2 {
		if before, err = takeSample(0); err != nil {
			return err
		}
		for read := int64(0); read < total; {
			var hdr [4]byte
			if _, err := nc.Write(hdr[:]); err != nil {
				return err
			}
			if _, err := io.ReadFull(nc, hdr[:]); err != nil {
				return fmt.Errorf("pass %d: %w", pass+1, err)
			}
			n := int64(binary.BigEndian.Uint32(hdr[:]))
			if _, err := io.ReadFull(nc, buf[:n]); err != nil {
				return err
			}
			read += n
		}
		if after, err = takeSample(0); err != nil {
			return err
		}
	}
	printRate(total, before, after)
	return nil
}

// serveFiles answers every 4-byte request on the one connection it
// accepts with the next ranges of files, starting over after the last,
// until the reader hangs up.
func serveFiles(ln net.Listener, files []*os.File, sizes []int64) error {
	nc, err := ln.Accept()
	if err != nil {
		return err
	}
	defer nc.Close()
	tcp := nc.(*net.TCPConn)
	if err := asBroker(tcp); err != nil {
		return err
	}
	pos := make([]int64, len(files))
	next := 0
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(nc, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if slices.Equal(pos, sizes) {
			clear(pos) // the next pass
		}
		type span struct {
			f        *os.File
			off, len int64
		}
		var spans []span
		var n int64
		for range files {
			i := next
			next = (next + 1) % len(files)
			take := min(partBytes, sizes[i]-pos[i], fetchBytes-n)
			if take <= 0 {
				continue
			}
			spans = append(spans, span{files[i], pos[i], take})
			pos[i] += take
			n += take
		}
		binary.BigEndian.PutUint32(hdr[:], uint32(n))
		if _, err := nc.Write(hdr[:]); err != nil {
			return err
		}
		for _, s := range spans {
			// net's ReadFrom turns an *os.File, limited, into
			// sendfile(2) from the file's offset.
			if _, err := s.f.Seek(s.off, io.SeekStart); err != nil {
				return err
			}
			if _, err := tcp.ReadFrom(io.LimitReader(s.f, s.len)); err != nil {
				return err
			}
		}
	}
}
