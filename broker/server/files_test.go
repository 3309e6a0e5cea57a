package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
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

// A fetch's file ranges stay the bytes they were read as until the
// response is written, even when the topic is deleted in between and other
// files are opened meanwhile: sendfile must not send from a descriptor
// number that was closed and given to another file.
func TestFileRangesOutliveDeletedLog(t *testing.T) {
	cfg := log.DefaultConfig()
	cfg.FileDeleteDelayMs = 0
	l, err := log.Open(filepath.Join(t.TempDir(), "gone-0"), cfg, log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat([]byte("v"), 1000)
	for range 200 { // 200 KB: sent by sendfile, not copied
		recs := []kmsg.Record{{Value: value}}
		b, err := record.Build(record.DefaultBuildOptions(), recs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsLeader(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	slice, err := l.Read(0, log.ReadOptions{MaxBytes: 1 << 20, UpTo: -1})
	if err != nil || slice.Size < copyBelow {
		t.Fatalf("read: %d bytes, %v", slice.Size, err)
	}
	want, err := slice.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	f := newFileRanges(false, true)
	frame := append([]byte{0, 0, 0, 0, 0, 0, 0, 0}, f.add(slice)...)
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	// Files opened now take the lowest free descriptors: a closed segment's
	// number among them.
	other := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(other, bytes.Repeat([]byte{0xee}, len(want)), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		o, err := os.Open(other)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
	}
	got := roundTripFrame(t, func(nc net.Conn) error { return f.write(nc, frame) })
	f.release()
	if len(got) != 8+len(want) || !bytes.Equal(got[8:], want) {
		t.Fatalf("the client received other bytes than the deleted log's (%d bytes, want %d)", len(got)-8, len(want))
	}
	if _, err := slice.File.ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("segment file after the response's release: %v, want closed", err)
	}
}
