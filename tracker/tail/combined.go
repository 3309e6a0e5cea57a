package tail

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
)

// combinedFields are the fields of a parsed combined log line, in the
// order they appear in the record; any of them can key the records.
var combinedFields = []string{"remote_addr", "remote_user", "time", "method", "path", "protocol", "status", "bytes", "referer", "user_agent"}

func isCombinedField(f string) bool { return slices.Contains(combinedFields, f) }

// combinedTime is %t of Apache and $time_local of nginx.
const combinedTime = "02/Jan/2006:15:04:05 -0700"

// accessLog is one parsed line of the combined log format,
//
//	%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i"
//
// (nginx's default "combined"), or of the common log format, which stops
// after %b. "-" (nothing) becomes "" in strings and 0 in bytes.
type accessLog struct {
	RemoteAddr string `json:"remote_addr"`
	RemoteUser string `json:"remote_user"`
	Time       string `json:"time"` // RFC 3339 in the line's own zone
	Method     string `json:"method"`
	Path       string `json:"path"`
	Protocol   string `json:"protocol"`
	// Request is the request line as logged when it is not "METHOD PATH
	// PROTOCOL" (nginx logs a garbled request, or "-" for none, as is).
	Request   string `json:"request,omitempty"`
	Status    int    `json:"status"`
	Bytes     int64  `json:"bytes"`
	Referer   string `json:"referer"`
	UserAgent string `json:"user_agent"`

	time time.Time
}

var errCombined = errors.New("not a combined log line")

// parseCombined parses one line; trailing fields after the user agent
// (custom nginx formats often append some) are ignored.
func parseCombined(b []byte) (*accessLog, error) {
	p := combinedParser{b: b}
	var a accessLog
	a.RemoteAddr = p.token()
	p.token() // %l, identd: "-" in practice
	a.RemoteUser = dash(p.token())
	ts := p.bracketed()
	req := p.quoted()
	status := p.token()
	size := p.token()
	if p.err || a.RemoteAddr == "" {
		return nil, errCombined
	}
	t, err := time.Parse(combinedTime, ts)
	if err != nil {
		return nil, errCombined
	}
	a.time, a.Time = t, t.Format(time.RFC3339)
	if a.Status, err = strconv.Atoi(status); err != nil || a.Status < 100 || a.Status > 999 {
		return nil, errCombined
	}
	if size != "-" {
		if a.Bytes, err = strconv.ParseInt(size, 10, 64); err != nil || a.Bytes < 0 {
			return nil, errCombined
		}
	}
	a.splitRequest(req)
	if p.done() { // the common log format
		return &a, nil
	}
	a.Referer = dash(p.quoted())
	a.UserAgent = dash(p.quoted())
	if p.err {
		return nil, errCombined
	}
	return &a, nil
}

func (a *accessLog) splitRequest(req string) {
	method, rest, ok := strings.Cut(req, " ")
	if !ok || method == "" || strings.ContainsAny(method, "\t") {
		a.Request = req
		return
	}
	path, proto := rest, ""
	if i := strings.LastIndexByte(rest, ' '); i >= 0 && strings.HasPrefix(rest[i+1:], "HTTP/") {
		path, proto = rest[:i], rest[i+1:]
	}
	a.Method, a.Path, a.Protocol = method, path, proto
}

// field is the value of a combined field as a record key.
func (a *accessLog) field(name string) string {
	switch name {
	case "remote_addr":
		return a.RemoteAddr
	case "remote_user":
		return a.RemoteUser
	case "time":
		return a.Time
	case "method":
		return a.Method
	case "path":
		return a.Path
	case "protocol":
		return a.Protocol
	case "status":
		return strconv.Itoa(a.Status)
	case "bytes":
		return strconv.FormatInt(a.Bytes, 10)
	case "referer":
		return a.Referer
	case "user_agent":
		return a.UserAgent
	}
	return ""
}

func (a *accessLog) json() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // paths and user agents keep their & < >
	enc.Encode(a)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func dash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// combinedParser reads the space-separated fields of a line; err sticks
// once a field is missing or malformed.
type combinedParser struct {
	b   []byte
	err bool
}

func (p *combinedParser) skipSpace() {
	for len(p.b) > 0 && p.b[0] == ' ' {
		p.b = p.b[1:]
	}
}

func (p *combinedParser) done() bool {
	p.skipSpace()
	return len(p.b) == 0
}

func (p *combinedParser) token() string {
	p.skipSpace()
	i := bytes.IndexByte(p.b, ' ')
	if i < 0 {
		i = len(p.b)
	}
	if i == 0 {
		p.err = true
		return ""
	}
	t := string(p.b[:i])
	p.b = p.b[i:]
	return t
}

func (p *combinedParser) bracketed() string {
	p.skipSpace()
	if len(p.b) == 0 || p.b[0] != '[' {
		p.err = true
		return ""
	}
	i := bytes.IndexByte(p.b, ']')
	if i < 0 {
		p.err = true
		return ""
	}
	t := string(p.b[1:i])
	p.b = p.b[i+1:]
	return t
}

// quoted reads a "..." field; Apache escapes a quote inside as \" and a
// backslash as \\ (nginx writes \x22, kept as it is).
func (p *combinedParser) quoted() string {
	p.skipSpace()
	if len(p.b) == 0 || p.b[0] != '"' {
		p.err = true
		return ""
	}
	var out []byte
	for i := 1; i < len(p.b); i++ {
		switch c := p.b[i]; {
		case c == '"':
			p.b = p.b[i+1:]
			return string(out)
		case c == '\\' && i+1 < len(p.b) && (p.b[i+1] == '"' || p.b[i+1] == '\\'):
			out = append(out, p.b[i+1])
			i++
		default:
			out = append(out, c)
		}
	}
	p.err = true
	return ""
}
