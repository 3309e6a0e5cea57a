package record

import "math/bits"

// Records frame their fields with zig-zag varints, as Kafka's ByteUtils does.
// The readers accept exactly what kmsg's generated decoder accepts (at most 5
// bytes for an int32, 10 for an int64, no bits beyond the type), so that a
// framing walk here and kmsg's decode never disagree on where a field ends.

// varint32 reads a zig-zag varint int32; n is 0 when buf ends first and
// negative when the encoding overflows.
func varint32(buf []byte) (v int32, n int) {
	var u uint32
	for i := range 5 {
		if i >= len(buf) {
			return 0, 0
		}
		c := buf[i]
		if i == 4 {
			if c > 0x0f {
				return 0, -1
			}
			u |= uint32(c) << 28
			return int32(u>>1) ^ -int32(u&1), 5
		}
		u |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(u>>1) ^ -int32(u&1), i + 1
		}
	}
	panic("unreachable")
}

// varint64 reads a zig-zag varint int64, with varint32's conventions.
func varint64(buf []byte) (v int64, n int) {
	var u uint64
	for i := range 10 {
		if i >= len(buf) {
			return 0, 0
		}
		c := buf[i]
		if i == 9 {
			if c > 0x01 {
				return 0, -1
			}
			u |= uint64(c) << 63
			return int64(u>>1) ^ -int64(u&1), 10
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
	}
	panic("unreachable")
}

// skipVarlong is the length of the zig-zag varint int64 at the start of buf,
// with varint32's conventions for a bad one.
func skipVarlong(buf []byte) int {
	for i := range 10 {
		if i >= len(buf) {
			return 0
		}
		c := buf[i]
		if i == 9 {
			if c > 0x01 {
				return -1
			}
			return 10
		}
		if c < 0x80 {
			return i + 1
		}
	}
	panic("unreachable")
}

func uvarintLen(u uint64) int { return max(1, (bits.Len64(u)+6)/7) }

func varintLen(v int32) int { return uvarintLen(uint64(uint32(v)<<1 ^ uint32(v>>31))) }

func varlongLen(v int64) int { return uvarintLen(uint64(v)<<1 ^ uint64(v>>63)) }
