package collect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The collector does not decode events into Go values: it checks their
// syntax, finds the members it reads or changes, and writes the enriched
// event by copying every other byte as it was sent. fastjson (which the
// schema validator uses) keeps no byte positions, and its parser accepts
// what encoding/json refuses (NaN, control characters in strings), so the
// collector has this small scanner instead. It accepts exactly what
// encoding/json accepts, so that the answer to a malformed body is what it
// always was.

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// scanner checks JSON syntax and reports where values are.
type scanner struct {
	b []byte
	// surrogate is set when a string held a \u escape of a UTF-16
	// surrogate: decoding may then turn it into U+FFFD, which the event's
	// bytes as sent would not say (see canonical).
	surrogate bool
}

// member is one member of a JSON object.
type member struct {
	kraw []byte // the key as sent, quotes included
	key  []byte // the key decoded
	val  []byte // the value as sent
	repl []byte // a replacement value, written instead of val when set
	drop bool   // not written
}

// syntaxError is malformed JSON.
type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string { return e.msg + " at offset " + strconv.Itoa(e.off) }

func (s *scanner) fail(i int, msg string) error { return &syntaxError{msg: msg, off: i} }

func (s *scanner) unexpected(i int, context string) error {
	if i >= len(s.b) {
		return s.fail(i, "unexpected end of JSON input")
	}
	return s.fail(i, fmt.Sprintf("invalid character %s %s", quoteChar(s.b[i]), context))
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	return strconv.QuoteRune(rune(c))
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// value checks the value that starts at b[i] and returns where it ends.
func (s *scanner) value(i, depth int) (int, error) {
	b := s.b
	if i >= len(b) {
		return i, s.fail(i, "unexpected end of JSON input")
	}
	switch c := b[i]; {
	case c == '{':
		return s.object(i, depth+1, nil)
	case c == '[':
		return s.array(i, depth+1, nil)
	case c == '"':
		return s.str(i)
	case c == '-' || c >= '0' && c <= '9':
		return s.number(i)
	case c == 't':
		return s.literal(i, "true")
	case c == 'f':
		return s.literal(i, "false")
	case c == 'n':
		return s.literal(i, "null")
	}
	return i, s.unexpected(i, "looking for beginning of value")
}

func (s *scanner) literal(i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(s.b) || s.b[i+k] != lit[k] {
			return i + k, s.unexpected(i+k, "in literal "+lit)
		}
	}
	return i + len(lit), nil
}

// object checks the object at b[i] ('{'); when ms is not nil, it appends
// the object's members to *ms.
func (s *scanner) object(i, depth int, ms *[]member) (int, error) {
	if depth > maxDepth {
		return i, s.fail(i, "exceeded max depth")
	}
	b := s.b
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, s.unexpected(i, "looking for beginning of object key string")
		}
		ks := i
		end, err := s.str(i)
		if err != nil {
			return end, err
		}
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return i, s.unexpected(i, "after object key")
		}
		i = skipWS(b, i+1)
		vs := i
		if i, err = s.value(i, depth); err != nil {
			return i, err
		}
		if ms != nil {
			*ms = append(*ms, member{kraw: b[ks:end], key: unquoteKey(b[ks:end]), val: b[vs:i]})
		}
		i = skipWS(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		return i, s.unexpected(i, "after object key:value pair")
	}
}

// array checks the array at b[i] ('['); when elems is not nil, it appends
// the elements, as sent, to *elems.
func (s *scanner) array(i, depth int, elems *[][]byte) (int, error) {
	if depth > maxDepth {
		return i, s.fail(i, "exceeded max depth")
	}
	b := s.b
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		vs := i
		var err error
		if i, err = s.value(i, depth); err != nil {
			return i, err
		}
		if elems != nil {
			*elems = append(*elems, b[vs:i])
		}
		i = skipWS(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		return i, s.unexpected(i, "after array element")
	}
}

// str checks the string at b[i] ('"'). Bytes that are not UTF-8 pass, as
// they do in encoding/json (which decodes them as U+FFFD).
func (s *scanner) str(i int) (int, error) {
	b := s.b
	j := i + 1
	for j < len(b) {
		c := b[j]
		if c >= 0x20 && c != '"' && c != '\\' {
			j++
			continue
		}
		switch c {
		case '"':
			return j + 1, nil
		case '\\':
			if j+1 >= len(b) {
				return j + 1, s.fail(j+1, "unexpected end of JSON input")
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				r := rune(0)
				for k := j + 2; k < j+6; k++ {
					if k >= len(b) {
						return k, s.fail(k, "unexpected end of JSON input")
					}
					h := unhex(b[k])
					if h < 0 {
						return k, s.unexpected(k, "in \\u hexadecimal character escape")
					}
					r = r<<4 | rune(h)
				}
				if r >= 0xd800 && r < 0xe000 {
					s.surrogate = true
				}
				j += 6
			default:
				return j + 1, s.unexpected(j+1, "in string escape code")
			}
		default: // a control character
			return j, s.unexpected(j, "in string literal")
		}
	}
	return j, s.fail(j, "unexpected end of JSON input")
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at b[i].
func (s *scanner) number(i int) (int, error) {
	b := s.b
	digits := func(i int) int {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i + 1)
	default:
		return i, s.unexpected(i, "in numeric literal")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, s.unexpected(i, "after decimal point in numeric literal")
		}
		i = digits(i)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, s.unexpected(i, "in exponent of numeric literal")
		}
		i = digits(i)
	}
	return i, nil
}

// kindOf names the JSON type of a checked value, for messages.
func kindOf(v []byte) string {
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

func isNull(v []byte) bool { return len(v) == 4 && string(v) == "null" }

func isString(v []byte) bool { return len(v) > 0 && v[0] == '"' }

func isNumber(v []byte) bool { return len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') }

func isObject(v []byte) bool { return len(v) > 0 && v[0] == '{' }

// unquoteKey decodes an object key; keys rarely hold escapes.
func unquoteKey(k []byte) []byte {
	in := k[1 : len(k)-1]
	if bytes.IndexByte(in, '\\') < 0 {
		return in
	}
	var s string
	json.Unmarshal(k, &s) // checked by the scanner
	return []byte(s)
}

// stringOf is the decoded value of a JSON string, ok false for any other
// value. Without escapes it is a slice of v.
func stringOf(v []byte) ([]byte, bool) {
	if !isString(v) {
		return nil, false
	}
	in := v[1 : len(v)-1]
	if bytes.IndexByte(in, '\\') < 0 {
		return in, true
	}
	var s string
	json.Unmarshal(v, &s)
	return []byte(s), true
}

// dedupe drops all but the last of the members that share a key: the value
// encoding/json (and so the collector, always) kept.
func dedupe(ms []member) {
	if len(ms) > 64 {
		last := make(map[string]int, len(ms))
		for i := range ms {
			last[string(ms[i].key)] = i
		}
		for i := range ms {
			if last[string(ms[i].key)] != i {
				ms[i].drop = true
			}
		}
		return
	}
	for i := range ms {
		for j := i + 1; j < len(ms); j++ {
			if string(ms[i].key) == string(ms[j].key) {
				ms[i].drop = true
				break
			}
		}
	}
}

// find is the index of the (kept) member named k, or -1.
func find(ms []member, k string) int {
	for i := range ms {
		if !ms[i].drop && string(ms[i].key) == k {
			return i
		}
	}
	return -1
}

func findKey(ms []member, k []byte) int {
	for i := range ms {
		if !ms[i].drop && string(ms[i].key) == string(k) {
			return i
		}
	}
	return -1
}

// field is a member to add to an object.
type field struct {
	name string // a plain key: written without escaping
	val  []byte
}

// writeObject appends the object of ms (each as sent, or replaced, or
// dropped) and then the added fields.
func writeObject(dst []byte, ms []member, add []field) []byte {
	dst = append(dst, '{')
	first := true
	for i := range ms {
		m := &ms[i]
		if m.drop {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, m.kraw...)
		dst = append(dst, ':')
		if m.repl != nil {
			dst = append(dst, m.repl...)
		} else {
			dst = append(dst, m.val...)
		}
	}
	for _, f := range add {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, f.name...)
		dst = append(dst, '"', ':')
		dst = append(dst, f.val...)
	}
	return append(dst, '}')
}

// canonical rewrites a value as encoding/json would after decoding it:
// what the collector does to an event whose bytes are not valid UTF-8 or
// that escapes a surrogate, so that its strings read the same (U+FFFD)
// whoever decodes them. Such events are rare; the cost does not matter.
func canonical(v []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return nil, err
	}
	return json.Marshal(x)
}

// needsCanonical reports whether v must go through canonical.
func needsCanonical(v []byte) bool {
	if !utf8.Valid(v) {
		return true
	}
	if bytes.Contains(v, []byte(`\u`)) {
		s := scanner{b: v}
		s.value(skipWS(v, 0), 0)
		return s.surrogate
	}
	return false
}

var errNotObject = errors.New("not a JSON object")
