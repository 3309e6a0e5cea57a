package decode

import (
	"encoding/base64"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Conversions shared by the JSON and Avro decoders, so that a value means
// the same thing whatever format it arrived in.

func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// validUTF8Bytes returns b, or a copy with invalid sequences replaced.
func validUTF8Bytes(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	return []byte(strings.ToValidUTF8(string(b), "\uFFFD"))
}

// parseTimestamp reads an RFC 3339 timestamp ("2024-05-01T12:00:00.123Z",
// any offset, fraction optional) into Unix time in the given unit.
func parseTimestamp(s string, micros bool) (int64, bool) {
	if us, ok := fastRFC3339(s); ok {
		if micros {
			return us, true
		}
		return floorDiv(us, 1000), true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, false
	}
	if micros {
		return t.UnixMicro(), true
	}
	return t.UnixMilli(), true
}

// parseDate reads "2006-01-02" into days since the epoch.
func parseDate(s string) (int32, bool) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return 0, false
	}
	return int32(t.Unix() / 86400), true
}

// floatToInt accepts a float only when it is an integer within int64.
func floatToInt(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < -9.223372036854775808e18 || f >= 9.223372036854775808e18 {
		return 0, false
	}
	return int64(f), true
}

// decodeBase64 accepts standard base64 with or without padding.
func decodeBase64(dst []byte, s []byte) ([]byte, bool) {
	// Room for the unpadded decoding, the larger of the two: padded
	// DecodedLen of a 2-byte input is 0, unpadded 1.
	n := base64.RawStdEncoding.DecodedLen(len(s))
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	m, err := base64.StdEncoding.Decode(dst, s)
	if err == nil {
		return dst[:m], true
	}
	m, err = base64.RawStdEncoding.Decode(dst, s)
	if err == nil {
		return dst[:m], true
	}
	return nil, false
}

// fastRFC3339 parses the common shape "2006-01-02T15:04:05[.fraction](Z|±07:00)"
// into Unix microseconds (fraction digits past the sixth are dropped, as
// UnixMicro truncates them), about ten times faster than time.Parse. It
// accepts only what time.Parse(time.RFC3339Nano) accepts with the same
// result (FuzzRFC3339 checks this); anything else falls back to time.Parse.
func fastRFC3339(s string) (int64, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return 0, false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 ||
		day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	rest := s[19:]
	var frac int64
	if rest[0] == '.' {
		i := 1
		scale := int64(100000)
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			frac += int64(rest[i]-'0') * scale
			scale /= 10
			i++
		}
		if i == 1 || i > 10 {
			return 0, false
		}
		rest = rest[i:]
	}
	var off int64
	switch {
	case rest == "Z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits(rest[1:3])
		om, ok2 := digits(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, false
		}
		off = int64(oh*3600 + om*60)
		if rest[0] == '-' {
			off = -off
		}
	default:
		return 0, false
	}
	secs := daysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+sec) - off
	return secs*1e6 + frac, true
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is days since 1970-01-01 of a proleptic Gregorian date
// (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// maxReason bounds an error's reason: a parser may quote the rest of a
// megabyte record in its message.
const maxReason = 256

func shorten(s string) string {
	if len(s) <= maxReason {
		return s
	}
	cut := maxReason
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
