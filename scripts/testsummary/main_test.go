package main

import (
	"bytes"
	"strings"
	"testing"
)

// A stream as `go test -json` writes it (cmd/test2json), for two packages:
// one test passes, one skips for a missing part (testbroker.Require's
// message), one subtest skips for another, one fails, and a package fails
// to build.
const stream = `{"Action":"start","Package":"example/a"}
{"Action":"run","Package":"example/a","Test":"TestOK"}
{"Action":"output","Package":"example/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"example/a","Test":"TestOK","Output":"    a_test.go:9: chatter of a passing test\n"}
{"Action":"output","Package":"example/a","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}
{"Action":"pass","Package":"example/a","Test":"TestOK","Elapsed":0}
{"Action":"run","Package":"example/a","Test":"TestJava"}
{"Action":"output","Package":"example/a","Test":"TestJava","Output":"=== RUN   TestJava\n"}
{"Action":"output","Package":"example/a","Test":"TestJava","Output":"    a_test.go:20: missing dependency \"Apache Kafka's jars\": run scripts/kafka-jars.sh\n"}
{"Action":"output","Package":"example/a","Test":"TestJava","Output":"--- SKIP: TestJava (0.00s)\n"}
{"Action":"skip","Package":"example/a","Test":"TestJava","Elapsed":0}
{"Action":"run","Package":"example/a","Test":"TestBrowsers"}
{"Action":"run","Package":"example/a","Test":"TestBrowsers/chromium"}
{"Action":"output","Package":"example/a","Test":"TestBrowsers/chromium","Output":"    a_test.go:30: missing dependency \"chromium\": apt-get install chromium\n"}
{"Action":"output","Package":"example/a","Test":"TestBrowsers/chromium","Output":"    --- SKIP: TestBrowsers/chromium (0.00s)\n"}
{"Action":"skip","Package":"example/a","Test":"TestBrowsers/chromium","Elapsed":0}
{"Action":"output","Package":"example/a","Test":"TestBrowsers","Output":"--- PASS: TestBrowsers (0.00s)\n"}
{"Action":"pass","Package":"example/a","Test":"TestBrowsers","Elapsed":0}
{"Action":"run","Package":"example/a","Test":"TestBroken"}
{"Action":"output","Package":"example/a","Test":"TestBroken","Output":"=== RUN   TestBroken\n"}
{"Action":"output","Package":"example/a","Test":"TestBroken","Output":"    a_test.go:40: broker 127.0.0.1:1234 reported 1 crash(es)\n"}
{"Action":"output","Package":"example/a","Test":"TestBroken","Output":"--- FAIL: TestBroken (1.00s)\n"}
{"Action":"fail","Package":"example/a","Test":"TestBroken","Elapsed":1}
{"Action":"output","Package":"example/a","Output":"FAIL\n"}
{"Action":"output","Package":"example/a","Output":"FAIL\texample/a\t1.5s\n"}
{"Action":"fail","Package":"example/a","Elapsed":1.5}
{"ImportPath":"example/b [example/b.test]","Action":"build-output","Output":"b/b_test.go:3:1: syntax error\n"}
{"ImportPath":"example/b [example/b.test]","Action":"build-fail"}
{"Action":"start","Package":"example/b"}
{"Action":"output","Package":"example/b","Output":"FAIL\texample/b [build failed]\n"}
{"Action":"fail","Package":"example/b","Elapsed":0}
not json: the go command said something
{"Action":"start","Package":"example/c"}
{"Action":"output","Package":"example/c","Output":"PASS\n"}
{"Action":"output","Package":"example/c","Output":"ok  \texample/c\t0.2s\n"}
{"Action":"pass","Package":"example/c","Elapsed":0.2}
`

func TestSummary(t *testing.T) {
	var out bytes.Buffer
	s := newSummary(&out)
	for _, l := range strings.Split(strings.TrimSuffix(stream, "\n"), "\n") {
		s.line(l)
	}
	got := out.String()
	want := `    a_test.go:40: broker 127.0.0.1:1234 reported 1 crash(es)
--- FAIL: TestBroken (1.00s)
FAIL
FAIL	example/a	1.5s
b/b_test.go:3:1: syntax error
FAIL	example/b [build failed]
not json: the go command said something
ok  	example/c	0.2s
`
	if got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	last := s.last()
	wantLast := `tests: 2 passed, 1 failed, 2 skipped; failed packages: example/a example/b; NOT RUN for a missing dependency: Apache Kafka's jars (TestJava); chromium (TestBrowsers/chromium)`
	if last != wantLast {
		t.Errorf("summary:\n%s\nwant:\n%s", last, wantLast)
	}

	clean := newSummary(&bytes.Buffer{})
	clean.line(`{"Action":"pass","Package":"example/c","Test":"TestOK"}`)
	if got := clean.last(); got != "tests: 1 passed, 0 failed, 0 skipped; nothing skipped for a missing dependency" {
		t.Errorf("summary of a clean run: %s", got)
	}
}
