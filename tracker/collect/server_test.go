package collect

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// serve runs the collector's own http.Server (its timeouts) on a port.
func serve(t *testing.T, mod func(*Config)) (string, *memSink) {
	t.Helper()
	sink := &memSink{}
	cfg := Config{Sources: []Source{{Name: "s", WriteKey: key, Topic: "events"}}}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := s.HTTPServer(ln.Addr().String())
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), sink
}

// closedWithin reports whether the server closes c within d (reading
// whatever it answers first).
func closedWithin(c net.Conn, d time.Duration) (string, bool) {
	c.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(c)
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return string(b), false
		}
	}
	return string(b), true
}

func TestSlowClientTimeouts(t *testing.T) {
	addr, sink := serve(t, func(c *Config) {
		c.ReadHeaderTimeout = 200 * time.Millisecond
		c.ReadTimeout = 400 * time.Millisecond
		c.IdleTimeout = 300 * time.Millisecond
	})
	t.Run("slow headers", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/track HTTP/1.1\r\nHost: x\r\n")
		start := time.Now()
		go func() { // a slowloris: one header line at a time
			for i := 0; i < 20; i++ {
				time.Sleep(50 * time.Millisecond)
				if _, err := fmt.Fprintf(c, "X-Slow-%d: y\r\n", i); err != nil {
					return
				}
			}
		}()
		if _, ok := closedWithin(c, 2*time.Second); !ok {
			t.Fatal("the server kept a slow-header connection open")
		}
		if el := time.Since(start); el > time.Second {
			t.Errorf("closed after %v", el)
		}
	})
	t.Run("slow body", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		body := `{"userId":"u","event":"E","properties":{"p":"` + strings.Repeat("x", 200) + `"}}`
		fmt.Fprintf(c, "POST /v1/track HTTP/1.1\r\nHost: x\r\nAuthorization: Basic d2stdGVzdDo=\r\nContent-Length: %d\r\n\r\n", len(body))
		go func() {
			for i := 0; i < len(body); i += 10 {
				time.Sleep(50 * time.Millisecond)
				if _, err := c.Write([]byte(body[i:min(i+10, len(body))])); err != nil {
					return
				}
			}
		}()
		got, ok := closedWithin(c, 3*time.Second)
		if !ok {
			t.Fatal("the server kept a slow-body connection open")
		}
		if strings.Contains(got, "200 OK") {
			t.Fatalf("a body that took too long was accepted: %s", got)
		}
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		body := `{"userId":"u","event":"E"}`
		fmt.Fprintf(c, "POST /v1/track HTTP/1.1\r\nHost: x\r\nAuthorization: Basic d2stdGVzdDo=\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("%v %v", res, err)
		}
		res.Body.Close()
		if _, ok := closedWithin(c, 2*time.Second); !ok {
			t.Fatal("an idle keep-alive connection stayed open")
		}
	})
	if n := len(sink.all()); n != 1 {
		t.Errorf("%d events stored, want 1", n)
	}
}

func TestHeaderLimit(t *testing.T) {
	addr, _ := serve(t, func(c *Config) { c.MaxHeaderBytes = 4 << 10 })
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/track", strings.NewReader(`{}`))
	req.Header.Set("X-Big", strings.Repeat("h", 64<<10))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d", res.StatusCode)
	}
}

// 1,000 idle connections cost bounded memory and are all closed by the
// server's timeouts; the collector still answers meanwhile.
func TestThousandIdleConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	addr, sink := serve(t, func(c *Config) {
		c.ReadHeaderTimeout = 2 * time.Second
		c.IdleTimeout = 2 * time.Second
	})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 1000
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if i%2 == 0 { // half send a partial request line, half nothing
			c.Write([]byte("POST /v1/tr"))
		}
		conns = append(conns, c)
	}
	time.Sleep(300 * time.Millisecond)
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/track", strings.NewReader(`{"userId":"u","event":"E"}`))
	req.SetBasicAuth(key, "")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("request among idle connections: %v %v", res, err)
	}
	res.Body.Close()
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapInuse+after.StackInuse) - int64(before.HeapInuse+before.StackInuse)
	t.Logf("%d idle connections: heap+stacks grew %d KiB (%d B each)", n, grew/1024, grew/n)
	if grew > 64<<20 {
		t.Errorf("memory grew by %d MiB for %d idle connections", grew>>20, n)
	}
	// All are closed by the server within the timeouts.
	deadline := time.Now().Add(30 * time.Second)
	for i, c := range conns {
		if _, ok := closedWithin(c, time.Until(deadline)); !ok {
			t.Fatalf("connection %d still open after the timeouts", i)
		}
	}
	if len(sink.all()) != 1 {
		t.Errorf("%d events", len(sink.all()))
	}
}
