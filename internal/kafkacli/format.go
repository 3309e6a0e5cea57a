package kafkacli

import (
	"fmt"
	"strconv"

	"github.com/segmentio/kafka-go"
)

// DefaultFormat prints each record's value on its own line.
const DefaultFormat = `%s\n`

// FormatHelp lists the directives of a Format, for command help.
const FormatHelp = `  %t  topic               %p  partition          %o  offset
  %k  key                 %K  key length         %s  value
  %S  value length        %T  timestamp (ms)     %h  headers as k=v,k=v
  %%  a percent sign      \n newline  \t tab  \r carriage return  \\ backslash`

// Format is a kcat-style output template (kcat -f): directives are replaced
// by the record's fields, everything else is copied. As with kcat, nothing
// is added: end the template with \n to get one record per line.
type Format struct {
	ops []formatOp
}

type formatOp struct {
	lit []byte // copied when field is 0
	fld byte   // directive letter
}

// ParseFormat parses a template, naming the first bad directive.
func ParseFormat(s string) (*Format, error) {
	f := &Format{}
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			f.ops = append(f.ops, formatOp{lit: lit})
			lit = nil
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '%', '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("--format %q: %c at the end: want a directive after it (%%s, %%k, \\n ...)", s, c)
			}
			i++
			d := s[i]
			if c == '\\' {
				switch d {
				case 'n':
					lit = append(lit, '\n')
				case 't':
					lit = append(lit, '\t')
				case 'r':
					lit = append(lit, '\r')
				case '\\':
					lit = append(lit, '\\')
				default:
					return nil, fmt.Errorf("--format %q: unknown escape \\%c at byte %d (want \\n, \\t, \\r or \\\\)", s, d, i-1)
				}
				continue
			}
			switch d {
			case '%':
				lit = append(lit, '%')
			case 't', 'p', 'o', 'k', 'K', 's', 'S', 'T', 'h':
				flush()
				f.ops = append(f.ops, formatOp{fld: d})
			default:
				return nil, fmt.Errorf("--format %q: unknown directive %%%c at byte %d (want one of %%t %%p %%o %%k %%K %%s %%S %%T %%h %%%%)", s, d, i-1)
			}
		default:
			lit = append(lit, c)
		}
	}
	flush()
	return f, nil
}

// Append appends m, formatted, to dst.
func (f *Format) Append(dst []byte, m *kafka.Message) []byte {
	for _, op := range f.ops {
		switch op.fld {
		case 0:
			dst = append(dst, op.lit...)
		case 't':
			dst = append(dst, m.Topic...)
		case 'p':
			dst = strconv.AppendInt(dst, int64(m.Partition), 10)
		case 'o':
			dst = strconv.AppendInt(dst, m.Offset, 10)
		case 'k':
			dst = append(dst, m.Key...)
		case 'K':
			dst = strconv.AppendInt(dst, lengthOrNull(m.Key), 10)
		case 's':
			dst = append(dst, m.Value...)
		case 'S':
			dst = strconv.AppendInt(dst, lengthOrNull(m.Value), 10)
		case 'T':
			dst = strconv.AppendInt(dst, m.Time.UnixMilli(), 10)
		case 'h':
			for i, h := range m.Headers {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, h.Key...)
				dst = append(dst, '=')
				dst = append(dst, h.Value...)
			}
		}
	}
	return dst
}

// lengthOrNull is a key's or value's length, -1 for null, as kcat prints.
func lengthOrNull(b []byte) int64 {
	if b == nil {
		return -1
	}
	return int64(len(b))
}
