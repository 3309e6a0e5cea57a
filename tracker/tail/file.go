package tail

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"time"
)

// file is one followed file: an open descriptor, so that a file renamed
// or deleted by rotation is still read to its end.
type file struct {
	in    *input
	path  string // where it was last seen; the metrics label
	f     *os.File
	inode uint64
	fp    fingerprint
	sp    *splitter
	// acked: every line before it was acknowledged by the broker; the
	// offset written to the positions file. Lines between acked and sp.start
	// are in the batch being produced.
	acked int64
	size  int64     // at the last stat
	grown time.Time // when it was opened or last grew
	// gone is when it left the globs (renamed away, deleted); zero while
	// a glob still finds it.
	gone time.Time
}

func (f *file) key() string { return fileKey(f.inode, f.path) }

// fileKey identifies a followed file within its input: the inode, or the
// path where there are none.
func fileKey(ino uint64, path string) string {
	if ino != 0 {
		return "i" + strconv.FormatUint(ino, 10)
	}
	return "p" + path
}

func (f *file) position() position {
	return position{Input: f.in.Name, Path: f.path, Inode: f.inode, FPBytes: f.fp.n, FP: f.fp.sum, Offset: f.acked, head: f.fp.head}
}

// atEnd reports whether everything in the file was read.
func (f *file) atEnd() bool { return f.sp.pos >= f.size }

// lineStartBefore is the offset just after the last newline before off
// (0 if none), looking back at most limit bytes; further back it gives up
// and returns off, cutting that line.
func lineStartBefore(f *os.File, off int64, limit int) int64 {
	if off <= 0 {
		return 0
	}
	from := max(off-int64(limit), 0)
	buf := make([]byte, off-from)
	if _, err := f.ReadAt(buf, from); err != nil && err != io.EOF {
		return off
	}
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		return from + int64(i) + 1
	}
	if from == 0 {
		return 0
	}
	return off
}
