package tail

import (
	"testing"
)

const combinedLine = `127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?a=1&b=<2> HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"`

func TestParseCombined(t *testing.T) {
	for _, c := range []struct {
		name, line, want string
	}{
		{"combined", combinedLine,
			`{"remote_addr":"127.0.0.1","remote_user":"frank","time":"2000-10-10T13:55:36-07:00","method":"GET","path":"/apache_pb.gif?a=1&b=<2>","protocol":"HTTP/1.0","status":200,"bytes":2326,"referer":"http://www.example.com/start.html","user_agent":"Mozilla/4.08 [en] (Win98; I ;Nav)"}`},
		{"common log format", `10.1.2.3 - - [01/Jan/2026:00:00:00 +0000] "POST /v1/track HTTP/1.1" 204 -`,
			`{"remote_addr":"10.1.2.3","remote_user":"","time":"2026-01-01T00:00:00Z","method":"POST","path":"/v1/track","protocol":"HTTP/1.1","status":204,"bytes":0,"referer":"","user_agent":""}`},
		{"nginx, no request", `::1 - - [01/Jan/2026:00:00:00 +0100] "-" 400 0 "-" "-"`,
			`{"remote_addr":"::1","remote_user":"","time":"2026-01-01T00:00:00+01:00","method":"","path":"","protocol":"","request":"-","status":400,"bytes":0,"referer":"","user_agent":""}`},
		{"escaped quotes, extra fields", `1.1.1.1 - - [01/Jan/2026:00:00:00 +0000] "GET /a\"b HTTP/2.0" 301 5 "-" "curl \"x\"" "10.0.0.1" rt=0.001`,
			`{"remote_addr":"1.1.1.1","remote_user":"","time":"2026-01-01T00:00:00Z","method":"GET","path":"/a\"b","protocol":"HTTP/2.0","status":301,"bytes":5,"referer":"","user_agent":"curl \"x\""}`},
		{"HTTP/0.9", `1.1.1.1 - - [01/Jan/2026:00:00:00 +0000] "GET /" 200 5 "-" "-"`,
			`{"remote_addr":"1.1.1.1","remote_user":"","time":"2026-01-01T00:00:00Z","method":"GET","path":"/","protocol":"","status":200,"bytes":5,"referer":"","user_agent":""}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := parseCombined([]byte(c.line))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(a.json()); got != c.want {
				t.Errorf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestParseCombinedMalformed(t *testing.T) {
	for _, line := range []string{
		``,
		`garbage`,
		`1.1.1.1 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200`,       // no bytes
		`1.1.1.1 - - 01/Jan/2026:00:00:00 +0000 "GET / HTTP/1.1" 200 5`,       // time not bracketed
		`1.1.1.1 - - [2026-01-01T00:00:00Z] "GET / HTTP/1.1" 200 5`,           // other time layout
		`1.1.1.1 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1 200 5`,      // unterminated request
		`1.1.1.1 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" OK 5`,      // status not a number
		`1.1.1.1 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 -5`,    // negative size
		`1.1.1.1 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 5 "-`,  // unterminated referer
		`1.1.1.1 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 5 "-"`, // referer without user agent
		`1.1.1.1 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 42 5`,      // not an HTTP status
	} {
		if a, err := parseCombined([]byte(line)); err == nil {
			t.Errorf("%q parsed: %s", line, a.json())
		}
	}
}
