package log

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// FuzzCheckpoint feeds arbitrary files to the checkpoint parser: it must
// return entries or ErrCorruptCheckpoint, never panic, and never allocate
// for a declared count that the file does not hold.
func FuzzCheckpoint(f *testing.F) {
	f.Add([]byte("0\n2\nevents 0 12\nevents 1 7\n"))
	f.Add([]byte("0\n1\n3 100\n"))
	f.Add([]byte("0\n999999999999\n"))
	f.Add([]byte("0\n-1\n"))
	f.Add([]byte("1\n0\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fields := range []int{2, 3} {
			entries, err := parseCheckpoint("fuzz", data, fields)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if len(e) != fields {
					t.Fatalf("entry %q has %d fields, want %d", e, len(e), fields)
				}
			}
		}
	})
}

// FuzzIndexFiles opens a segment whose .index and .timeindex hold arbitrary
// bytes beside a valid log. Opening must succeed (rebuilding what is
// corrupt), and every offset must stay readable.
func FuzzIndexFiles(f *testing.F) {
	entry := func(rel, pos uint32) []byte {
		b := make([]byte, 8)
		binary.BigEndian.PutUint32(b, rel)
		binary.BigEndian.PutUint32(b[4:], pos)
		return b
	}
	f.Add(entry(9, 0), []byte{})
	f.Add(append(entry(9, 0), entry(3, 100)...), make([]byte, 12))
	f.Add([]byte{1, 2, 3}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1})
	f.Add(entry(0xffffffff, 0xffffffff), []byte{})
	f.Fuzz(func(t *testing.T, idx, tidx []byte) {
		dir := filepath.Join(t.TempDir(), "fuzz-0")
		cfg := DefaultConfig()
		cfg.IndexIntervalBytes = 100
		l, err := Open(dir, cfg, Options{CleanShutdown: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			if _, err := l.AppendAsLeader(testBatch(t, 5, 30, 1000+int64(i*5), "none"), 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, segmentName(0))
		os.WriteFile(name+indexSuffix, idx, 0o644)
		os.WriteFile(name+timeIndexSuffix, tidx, 0o644)
		for _, clean := range []bool{true, false} {
			l, err := Open(dir, cfg, Options{CleanShutdown: clean})
			if err != nil {
				t.Fatalf("open (clean=%v): %v", clean, err)
			}
			if l.LogEndOffset() != 20 {
				t.Fatalf("log end %d after reopening with a fuzzed index, want 20", l.LogEndOffset())
			}
			for o := int64(0); o < 20; o++ {
				s, err := l.Read(o, ReadOptions{MaxBytes: 1 << 20, UpTo: -1})
				if err != nil || s.FirstOffset < 0 || s.FirstOffset > o || s.FirstOffset+5 <= o {
					t.Fatalf("read %d: first offset %d, err %v", o, s.FirstOffset, err)
				}
			}
			l.Close()
		}
	})
}
