package tail

import "bytes"

// line is one complete line of a file.
type line struct {
	offset int64 // of its first byte
	// next is the offset after its newline: where reading resumes once the
	// line is acknowledged, so positions are always line boundaries.
	next int64
	// data is the line without "\n" or "\r\n"; it aliases the splitter's or
	// the caller's buffer and is valid only until emit returns.
	data []byte
	// cut: the line was longer than the maximum; data holds its first max
	// bytes and the rest was skipped.
	cut bool
}

// splitter cuts the bytes of a file, fed in order, into lines. A partial
// last line is kept (at most max bytes of it) until its newline arrives, so
// a line written in two write calls is still one record.
type splitter struct {
	max   int
	start int64  // offset of the current, incomplete line
	pos   int64  // offset of the next byte to feed
	buf   []byte // the current line's bytes so far, at most max
	cut   bool   // the current line already exceeded max
}

func newSplitter(max int, off int64) *splitter {
	s := &splitter{max: max}
	s.reset(off)
	return s
}

// reset forgets any partial line and continues at off.
func (s *splitter) reset(off int64) {
	s.start, s.pos, s.buf, s.cut = off, off, s.buf[:0], false
}

// partial reports whether a line has begun but not ended.
func (s *splitter) partial() bool { return s.pos > s.start }

// feed takes chunk, the bytes of the file at s.pos, and calls emit for each
// line it completes, stopping early when emit returns false. It returns the
// bytes of chunk it consumed; the caller feeds the rest again later.
func (s *splitter) feed(chunk []byte, emit func(*line) bool) int {
	i := 0
	for i < len(chunk) {
		nl := bytes.IndexByte(chunk[i:], '\n')
		if nl < 0 {
			s.keep(chunk[i:])
			s.pos += int64(len(chunk) - i)
			return len(chunk)
		}
		seg := chunk[i : i+nl]
		data := seg
		if len(s.buf) > 0 || s.cut || len(seg) > s.max {
			s.keep(seg)
			data = s.buf
		}
		end := s.pos + int64(nl) + 1
		l := line{offset: s.start, next: end, data: data, cut: s.cut}
		if !l.cut {
			l.data = bytes.TrimSuffix(l.data, []byte("\r"))
		}
		s.buf, s.cut, s.start, s.pos = s.buf[:0], false, end, end
		i += nl + 1
		if !emit(&l) {
			break
		}
	}
	return i
}

// flush emits the partial line as if it had ended: for a file that was
// rotated away and will never get the newline.
func (s *splitter) flush(emit func(*line) bool) {
	if !s.partial() {
		return
	}
	l := line{offset: s.start, next: s.pos, data: s.buf, cut: s.cut}
	s.buf, s.cut, s.start = s.buf[:0], false, s.pos
	emit(&l)
}

func (s *splitter) keep(b []byte) {
	if room := s.max - len(s.buf); len(b) > room {
		s.cut = true
		b = b[:max(room, 0)]
	}
	s.buf = append(s.buf, b...)
}
