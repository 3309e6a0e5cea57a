package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
)

// Snappy comes in two shapes on the wire. The Java client writes the framing
// of xerial's snappy-java SnappyOutputStream:
//
//	offset  size  field
//	     0     8  magic "\x82SNAPPY\x00"
//	     8     4  version                 1
//	    12     4  minimum compatible      1 (snappy-java refuses a stream
//	                                       whose version is below its own)
//	    16     -  chunks, each:
//	                 4  length of the block, big endian
//	                 -  a raw snappy block of at most 32 KiB uncompressed
//
// librdkafka and older franz-go write one raw snappy block instead. No raw
// block can start with the magic (its third byte would be a copy with nothing
// to copy from), so the prefix tells them apart.
var xerialMagic = []byte("\x82SNAPPY\x00")

const (
	xerialHeaderSize = 16
	xerialVersion    = 1
	// xerialBlockSize is snappy-java's default: every Java consumer reads
	// blocks of this size, whatever it reads from us.
	xerialBlockSize = 32 << 10
)

var errXerialFraming = errors.New("bad xerial chunk framing")

func appendXerial(dst, src []byte) []byte {
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, xerialVersion)
	dst = binary.BigEndian.AppendUint32(dst, xerialVersion)
	for len(src) > 0 {
		n := min(len(src), xerialBlockSize)
		dst = slices.Grow(dst, 4+s2.MaxEncodedLen(n))
		at := len(dst)
		// Encode into the spare capacity after the length prefix, then
		// write the prefix once the block's size is known.
		block := s2.EncodeSnappy(dst[at+4:cap(dst)], src[:n])
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(block)))
		dst = dst[:at+4+len(block)]
		src = src[n:]
	}
	return dst
}

func decodeSnappy(src []byte, limit int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		n, err := snappyLen(src)
		if err != nil {
			return nil, err
		}
		if n > limit {
			return nil, tooLarge(CodecSnappy, limit)
		}
		return decodeSnappyBlock(make([]byte, 0, n), src)
	}
	if len(src) < xerialHeaderSize {
		return nil, corrupt(CodecSnappy, errXerialFraming)
	}
	// A first pass over the chunk headers sizes the output once, and
	// refuses a bomb before anything is decoded.
	total := 0
	for rest := src[xerialHeaderSize:]; len(rest) > 0; {
		block, next, err := xerialChunk(rest)
		if err != nil {
			return nil, err
		}
		n, err := snappyLen(block)
		if err != nil {
			return nil, err
		}
		if total += n; total > limit {
			return nil, tooLarge(CodecSnappy, limit)
		}
		rest = next
	}
	out := make([]byte, 0, total)
	for rest := src[xerialHeaderSize:]; len(rest) > 0; {
		block, next, _ := xerialChunk(rest)
		var err error
		if out, err = decodeSnappyBlock(out, block); err != nil {
			return nil, err
		}
		rest = next
	}
	return out, nil
}

func xerialChunk(buf []byte) (block, rest []byte, err error) {
	if len(buf) < 4 {
		return nil, nil, corrupt(CodecSnappy, errXerialFraming)
	}
	n := binary.BigEndian.Uint32(buf)
	if uint64(n) > uint64(len(buf)-4) {
		return nil, nil, corrupt(CodecSnappy, errXerialFraming)
	}
	return buf[4 : 4+n], buf[4+n:], nil
}

// snappyLen is the decoded length a block declares, checked before
// anything is allocated for it: no standard snappy block expands more than
// 64/3 times, its densest element being a 3-byte copy of 64 bytes.
func snappyLen(block []byte) (int, error) {
	n, err := snappy.DecodedLen(block)
	switch {
	case err != nil:
		return 0, corrupt(CodecSnappy, err)
	case int64(n)*3 > int64(len(block))*64:
		return 0, corrupt(CodecSnappy, fmt.Errorf("block of %d bytes claims to decode to %d", len(block), n))
	}
	return n, nil
}

// decodeSnappyBlock appends the decoded block to dst, which has room for it.
// It is strict about the format: s2's extensions to snappy are refused, as
// every Kafka client's snappy decoder would refuse them.
func decodeSnappyBlock(dst, block []byte) ([]byte, error) {
	n, _ := snappy.DecodedLen(block)
	out, err := snappy.DecodeStrict(dst[len(dst):len(dst)+n], block)
	if err != nil {
		return nil, corrupt(CodecSnappy, err)
	}
	return dst[:len(dst)+len(out)], nil
}
