package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/broker/log"
)

// A fetch response reaches the client byte for byte the same whichever way
// its file ranges travel: copied into one write (small responses), by
// sendfile, or by a user-space copy; and a range cut short by a truncation
// arrives as zeros of the promised length.
func TestFileRangesWrite(t *testing.T) {
	data := make([]byte, 256<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "segment.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()

	for _, tc := range []struct {
		name       string
		size       int64 // of each of the two ranges
		fileLength int64 // the file is cut to this before the write
	}{
		{"small, copied", 300, int64(len(data))},
		{"large", 100 << 10, int64(len(data))},
		{"small, file cut", 300, 400},
		{"large, file cut", 100 << 10, 150 << 10},
	} {
		for _, flexible := range []bool{true, false} {
			for _, sendfile := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s flexible=%v sendfile=%v", tc.name, flexible, sendfile), func(t *testing.T) {
					cut := data[:tc.fileLength]
					if err := os.WriteFile(path, data, 0o644); err != nil {
						t.Fatal(err)
					}
					ranges := []log.Slice{{File: file, Pos: 10, Size: tc.size}, {File: file, Pos: 10 + tc.size + 5, Size: tc.size}}
					f := newFileRanges(flexible, sendfile)
					frame := []byte{0, 0, 0, 0, 'h', 'e', 'a', 'd'}
					want := []byte("head")
					for i, r := range ranges {
						frame = append(frame, make([]byte, map[bool]int{true: 1, false: 4}[flexible])...)
						frame = append(frame, f.add(r)...)
						frame = append(frame, fmt.Sprintf("tail%d", i)...)
						if flexible {
							want = binary.AppendUvarint(want, uint64(r.Size)+1)
						} else {
							want = binary.BigEndian.AppendUint32(want, uint32(r.Size))
						}
						got := make([]byte, r.Size)
						if r.Pos < int64(len(cut)) {
							copy(got, cut[r.Pos:min(r.Pos+r.Size, int64(len(cut)))])
						}
						want = append(want, got...)
						want = append(want, fmt.Sprintf("tail%d", i)...)
					}
					if err := os.Truncate(path, tc.fileLength); err != nil {
						t.Fatal(err)
					}
					got := roundTripFrame(t, func(nc net.Conn) error { return f.write(nc, frame) })
					if n := binary.BigEndian.Uint32(got); int(n) != len(want) {
						t.Fatalf("frame size %d, want %d", n, len(want))
					}
					if !bytes.Equal(got[4:], want) {
						t.Fatalf("the client received other bytes than the response and its file ranges")
					}
				})
			}
		}
	}
}

// roundTripFrame runs send on one end of a loopback TCP connection and
// returns all the other end received.
func roundTripFrame(t *testing.T, send func(net.Conn) error) []byte {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	received := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			received <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		received <- b
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := send(nc); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	return <-received
}
