//go:build ignore

// benchtracker is the load generator of scripts/bench-tracker.sh: it posts
// batches of activity events to a running tracker (POST /v1/batch) from
// several connections, times every request, samples the CPU of the tracker,
// the broker, itself and the whole machine from /proc around each run, and
// at the end checks against the broker that the topic holds exactly the
// events the tracker acknowledged, so that no number it printed can come
// from events that were answered 200 and then lost.
//
//	go build -o bin/benchtracker scripts/benchtracker/main.go
//	benchtracker freeport
//	benchtracker run -url http://127.0.0.1:8080 -key K -conns 8 -batch 100 \
//	    -warmup 5s -duration 10s -runs 3 -tracker-pid 123 -broker-pid 456 \
//	    -bootstrap 127.0.0.1:9092 -topic events -label mode=spool
//
// Events are formats/decode.ActivityEvent (about 400 bytes of JSON each,
// deterministic), except that each one's messageId is rewritten before every
// send with a number no other send used: the tracker drops retried
// duplicates by messageId, and the bodies are built once, before the clock
// starts, so that the generator spends its CPU on HTTP rather than on JSON.
// Each connection sends its next request when the previous one is answered
// (a closed loop): with -conns N at most N requests are in flight.
//
// run prints one line of key=value per measured run: events (acknowledged),
// wall seconds, events/s, request latency percentiles in ms, CPU seconds of
// the tracker and the broker (utime+stime from /proc/<pid>/stat), of the
// generator itself (getrusage) and of the whole machine (busy time from
// /proc/stat, which includes whatever else runs on it), the 1-minute load
// average, and any answer that was not 200. Then a verify= line, and a
// non-zero exit when the topic holds fewer records than were acknowledged.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/formats/decode"
)

func main() {
	if len(os.Args) < 2 {
		fatal(errors.New("usage: benchtracker freeport|run [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "freeport":
		var ln net.Listener
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err == nil {
			fmt.Println(ln.Addr().(*net.TCPAddr).Port)
			ln.Close()
		}
	case "run":
		err = run(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "benchtracker:", err)
	os.Exit(1)
}

type options struct {
	url, key              string
	conns, batch, bodies  int
	warmup, duration      time.Duration
	runs                  int
	trackerPID, brokerPID int
	bootstrap, topic      string
	label                 string
	settle                time.Duration
}

func run(args []string) error {
	var o options
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "the tracker's base URL")
	fs.StringVar(&o.key, "key", "", "write key")
	fs.IntVar(&o.conns, "conns", 8, "concurrent connections, one request in flight each")
	fs.IntVar(&o.batch, "batch", 100, "events per request")
	fs.IntVar(&o.bodies, "bodies", 16, "distinct bodies per connection")
	fs.DurationVar(&o.warmup, "warmup", 5*time.Second, "unmeasured load before the runs")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "length of each measured run")
	fs.IntVar(&o.runs, "runs", 3, "measured runs")
	fs.IntVar(&o.trackerPID, "tracker-pid", 0, "the tracker's pid, for its CPU")
	fs.IntVar(&o.brokerPID, "broker-pid", 0, "the broker's pid, for its CPU")
	fs.StringVar(&o.bootstrap, "bootstrap", "127.0.0.1:9092", "the broker, for the final count")
	fs.StringVar(&o.topic, "topic", "events", "the tracker's topic, for the final count")
	fs.StringVar(&o.label, "label", "", "printed at the start of every line")
	fs.DurationVar(&o.settle, "settle", 2*time.Minute, "how long the topic may take to catch up with what was acknowledged")
	fs.Parse(args)
	if o.key == "" {
		return errors.New("-key is required")
	}
	before, err := topicRecords(o.bootstrap, o.topic)
	if err != nil {
		return fmt.Errorf("counting %s before: %w", o.topic, err)
	}
	g := newGenerator(o)
	g.phase(o.warmup)
	for r := 1; r <= o.runs; r++ {
		st := g.phase(o.duration)
		fmt.Printf("%srun=%d conns=%d batch=%d %s\n", o.label, r, o.conns, o.batch, st)
	}
	// The tracker must deliver everything it acknowledged; with ack=spool
	// the drainer may still be behind, so wait for it.
	start := time.Now()
	acked := g.acked.Load()
	var after int64
	for {
		if after, err = topicRecords(o.bootstrap, o.topic); err != nil {
			return fmt.Errorf("counting %s after: %w", o.topic, err)
		}
		if after-before >= acked || time.Since(start) > o.settle {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	drained := time.Since(start)
	time.Sleep(time.Second) // anything more is a duplicate: count it
	if after, err = topicRecords(o.bootstrap, o.topic); err != nil {
		return err
	}
	got := after - before
	fmt.Printf("%sverify topic=%s acknowledged=%d records=%d duplicates=%d drain_s=%.1f ok=%v\n",
		o.label, o.topic, acked, got, max(got-acked, 0), drained.Seconds(), got == acked)
	if got < acked {
		return fmt.Errorf("the topic holds %d records, %d fewer than the %d acknowledged", got, acked-got, acked)
	}
	return nil
}

// generator sends the load; each connection has its own bodies, whose
// messageIds it rewrites before each send.
type generator struct {
	o      options
	client *http.Client
	conns  []*conn
	nextID atomic.Uint64 // the next messageId number
	acked  atomic.Int64  // events acknowledged (200 and counted "accepted"), warm-up included
}

type conn struct {
	bodies [][]byte
	slots  [][]int // per body, the offsets of the 16 hex digits of each messageId
	next   int
	lat    []time.Duration
	resp   []byte
}

const idDigits = 16

func newGenerator(o options) *generator {
	g := &generator{o: o, client: &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: o.conns, MaxConnsPerHost: o.conns, DisableCompression: true,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}, Timeout: time.Minute}}
	// A start no earlier run used: the dedup window outlives a process.
	g.nextID.Store(uint64(time.Now().UnixNano()) &^ (1<<20 - 1))
	i := rand.IntN(1 << 20) // which ActivityEvents: the same bytes, a different slice of them
	for range o.conns {
		c := &conn{}
		for range o.bodies {
			body := []byte(`{"sentAt":"` + time.Now().UTC().Format(time.RFC3339Nano) + `","batch":[`)
			var slots []int
			for e := range o.batch {
				if e > 0 {
					body = append(body, ',')
				}
				ev := decode.ActivityEvent(nil, i)
				i++
				const key = `"messageId":"`
				p := bytes.Index(ev, []byte(key)) + len(key)
				q := p + bytes.IndexByte(ev[p:], '"')
				slots = append(slots, len(body)+p+2)
				body = append(body, ev[:p]...)
				body = append(body, "b-"+strings.Repeat("0", idDigits)...)
				body = append(body, ev[q:]...)
			}
			c.bodies = append(c.bodies, append(body, "]}"...))
			c.slots = append(c.slots, slots)
		}
		g.conns = append(g.conns, c)
	}
	return g
}

// stats of one phase.
type stats struct {
	events, requests      int64
	non200                map[int]int
	errors                int
	firstErr              string
	wall                  time.Duration
	lat                   []time.Duration
	tracker, broker, self float64 // CPU seconds
	machine               float64
	load                  string
}

func (s stats) String() string {
	q := func(p float64) float64 {
		if len(s.lat) == 0 {
			return 0
		}
		return float64(s.lat[min(int(p*float64(len(s.lat))), len(s.lat)-1)]) / 1e6
	}
	bad := "none"
	if len(s.non200) > 0 {
		var codes []string
		for code, n := range s.non200 {
			codes = append(codes, fmt.Sprintf("%d:%d", code, n))
		}
		slices.Sort(codes)
		bad = strings.Join(codes, ",")
	}
	out := fmt.Sprintf("events=%d requests=%d wall=%.3f events_s=%.0f p50_ms=%.2f p99_ms=%.2f p999_ms=%.2f max_ms=%.2f "+
		"tracker_cpu=%.3f broker_cpu=%.3f gen_cpu=%.3f machine_busy=%.3f load1=%s non200=%s errors=%d",
		s.events, s.requests, s.wall.Seconds(), float64(s.events)/s.wall.Seconds(), q(0.50), q(0.99), q(0.999), q(1),
		s.tracker, s.broker, s.self, s.machine, s.load, bad, s.errors)
	if s.firstErr != "" {
		out += " first_error=" + strconv.Quote(s.firstErr)
	}
	return out
}

// phase sends load for d and returns what it measured.
func (g *generator) phase(d time.Duration) stats {
	st := stats{non200: map[int]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	t0, m0, s0 := procCPU(g.o.trackerPID), procCPU(g.o.brokerPID), selfCPU()
	mb0 := machineBusy()
	start := time.Now()
	deadline := start.Add(d)
	for _, c := range g.conns {
		c.lat = c.lat[:0]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var events, requests int64
			for time.Now().Before(deadline) {
				n, code, err := g.send(c)
				mu.Lock()
				switch {
				case err != nil:
					st.errors++
					if st.firstErr == "" {
						st.firstErr = err.Error()
					}
				case code != http.StatusOK:
					st.non200[code]++
					if st.firstErr == "" {
						st.firstErr = fmt.Sprintf("%d %s", code, bytes.TrimSpace(c.resp))
					}
				}
				mu.Unlock()
				if err != nil || code != http.StatusOK {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				events += int64(n)
				requests++
			}
			mu.Lock()
			st.events += events
			st.requests += requests
			st.lat = append(st.lat, c.lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	st.wall = time.Since(start)
	st.tracker, st.broker, st.self = procCPU(g.o.trackerPID)-t0, procCPU(g.o.brokerPID)-m0, selfCPU()-s0
	st.machine = machineBusy() - mb0
	slices.Sort(st.lat)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		st.load = strings.Fields(string(b))[0]
	}
	return st
}

// send posts the connection's next body with fresh messageIds and returns
// how many events the tracker accepted.
func (g *generator) send(c *conn) (int, int, error) {
	k := c.next % len(c.bodies)
	c.next++
	body := c.bodies[k]
	id := g.nextID.Add(uint64(g.o.batch)) - uint64(g.o.batch)
	for j, at := range c.slots[k] {
		putHex(body[at:at+idDigits], id+uint64(j))
	}
	req, err := http.NewRequest(http.MethodPost, g.o.url+"/v1/batch", bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.SetBasicAuth(g.o.key, "")
	req.Header.Set("Content-Type", "application/json")
	t := time.Now()
	res, err := g.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	buf := bytes.NewBuffer(c.resp[:0])
	_, err = io.Copy(buf, res.Body)
	res.Body.Close()
	c.resp = buf.Bytes()
	if err != nil {
		return 0, 0, err
	}
	if res.StatusCode != http.StatusOK {
		return 0, res.StatusCode, nil
	}
	c.lat = append(c.lat, time.Since(t))
	var ans struct {
		Accepted   int `json:"accepted"`
		Duplicates int `json:"duplicates"`
	}
	if err := json.Unmarshal(c.resp, &ans); err != nil {
		return 0, 0, fmt.Errorf("answer %q: %w", c.resp, err)
	}
	g.acked.Add(int64(ans.Accepted))
	if ans.Accepted != g.o.batch {
		return ans.Accepted, 0, fmt.Errorf("accepted %d of %d (%d duplicates): %s", ans.Accepted, g.o.batch, ans.Duplicates, c.resp)
	}
	return ans.Accepted, res.StatusCode, nil
}

func putHex(dst []byte, v uint64) {
	const digits = "0123456789abcdef"
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = digits[v&0xf]
		v >>= 4
	}
}

const clkTck = 100 // USER_HZ; /proc reports ticks of 1/100 s on Linux

// procCPU is the utime+stime of pid in seconds (0 for pid 0).
func procCPU(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the ")" that ends comm: state is field 3, utime 14, stime 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clkTck
}

func selfCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// machineBusy is the CPU seconds all CPUs spent not idle (user, nice,
// system, irq, softirq; steal excluded), whoever spent them.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	busy := 0.0
	for i, v := range f[1:min(len(f), 8)] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		t, _ := strconv.ParseFloat(v, 64)
		busy += t / clkTck
	}
	return busy
}

// topicRecords is the number of records in topic: the sum over its
// partitions of the high watermark less the log start offset.
func topicRecords(bootstrap, topic string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	var n int64
	var ferr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			ferr = fmt.Errorf("partition %d: %w", o.Partition, o.Err)
			return
		}
		s, _ := starts.Lookup(o.Topic, o.Partition)
		n += o.Offset - s.Offset
	})
	return n, ferr
}
