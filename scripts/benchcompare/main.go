//go:build ignore

// benchcompare holds the franz-go helpers of scripts/bench-vs-kafka.sh, the
// side-by-side benchmark of Tributary and Apache Kafka. The same binary is
// the client for both brokers.
//
//	go build -o bin/benchcompare scripts/benchcompare/main.go
//	benchcompare freeport
//	benchcompare latency -b 127.0.0.1:9092 -topics t -rate 50000 -warmup 3s -duration 10s
//
//	benchcompare txn -b 127.0.0.1:9092 -topic t -interval 10ms -warmup 2s -duration 10s
//
// txn is a transactional producer (franz-go, acks=all, linger 5 ms) that
// produces records of -size bytes as fast as it can, round-robin over the
// topic's partitions, and commits every -interval: a transaction is its
// records of one interval, then Flush, then EndTransaction(commit), which
// is what is timed (the EndTxn round trip, the coordinator's markers
// included: Tributary answers EndTxn once the markers are written, Kafka
// after its PrepareCommit). It prints the committed records per second,
// MB/s, the transactions run, and EndTxn p50, p99 and max in milliseconds,
// over -duration after -warmup.
//
// latency produces records of -size bytes at a fixed -rate (records/s,
// paced against the wall clock, round-robin over the partitions of all
// -topics) with franz-go (acks=all, idempotent, linger 0), each value
// starting with the wall-clock time of its Produce call in nanoseconds, and
// consumes the same topics from their end offsets in the same process
// (no group). Each record's latency is the time from Produce to the
// consumer's poll returning it. Records produced during -warmup are consumed
// but not counted. It prints one line of key=value: sent and received
// counts, the achieved rate, and p50, p99, p99.9 and max in milliseconds.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if len(os.Args) < 2 {
		fatal(errors.New("usage: benchcompare freeport|latency|txn [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "freeport":
		var ln net.Listener
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err == nil {
			fmt.Println(ln.Addr().(*net.TCPAddr).Port)
			ln.Close()
		}
	case "latency":
		err = latency(os.Args[2:])
	case "txn":
		err = txn(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "benchcompare:", err)
	os.Exit(1)
}

func latency(args []string) error {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	bootstrap := fs.String("b", "127.0.0.1:9092", "bootstrap addresses, comma-separated")
	topicList := fs.String("topics", "", "comma-separated topics")
	rate := fs.Int("rate", 50000, "records per second")
	size := fs.Int("size", 100, "bytes per record value (at least 8)")
	warmup := fs.Duration("warmup", 3*time.Second, "records produced in this first period are not counted")
	duration := fs.Duration("duration", 10*time.Second, "measured period after the warm-up")
	fs.Parse(args)
	topics := strings.Split(*topicList, ",")
	if *topicList == "" || *size < 8 {
		return errors.New("latency: -topics and -size >= 8 needed")
	}
	if os.Getenv("GOGC") == "" {
		// The tool's own collector must not be what it measures. At 1M
		// records/s it allocates about 1 GB/s, and with GOGC=100 it
		// collected 86 times a second, with mark phases of up to 240 ms
		// that held up producer and consumer alike (end-to-end p99 86 ms
		// against 35–38 ms with 400, on the same broker).
		debug.SetGCPercent(400)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	fetchRTT := &fetchTimes{}
	cons, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*bootstrap, ",")...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(500*time.Millisecond), kgo.WithHooks(fetchRTT))
	if err != nil {
		return err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*bootstrap, ",")...), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.MaxBufferedRecords(1<<20))
	if err != nil {
		return err
	}
	defer prod.Close()

	// Wait until the consumer has its partitions and end offsets, so that
	// nothing produced is missed: produce markers until one comes back.
	ready := make(chan struct{})
	measureFrom := atomic.Int64{}
	measureFrom.Store(1<<63 - 1)
	var lats []int64 // ns, of records produced at or after measureFrom
	var received, counted atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		first := true
		for {
			fetches := cons.PollFetches(ctx)
			now := time.Now().UnixNano()
			if ctx.Err() != nil {
				return
			}
			fetches.EachError(func(t string, p int32, err error) {
				fmt.Fprintf(os.Stderr, "benchcompare: fetch %s[%d]: %v\n", t, p, err)
			})
			fetches.EachRecord(func(r *kgo.Record) {
				if len(r.Value) < 8 {
					return
				}
				ts := int64(binary.BigEndian.Uint64(r.Value))
				if ts == 0 { // a marker
					if first {
						first = false
						close(ready)
					}
					return
				}
				received.Add(1)
				if ts >= measureFrom.Load() {
					lats = append(lats, now-ts)
					counted.Add(1)
				}
			})
		}
	}()
	marker := make([]byte, *size)
	deadline := time.Now().Add(30 * time.Second)
waitReady:
	for {
		for _, t := range topics {
			prod.Produce(ctx, &kgo.Record{Topic: t, Value: marker}, nil)
		}
		select {
		case <-ready:
			break waitReady
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("latency: the consumer saw no marker within 30 s")
		}
	}

	var failed atomic.Pointer[error]
	// acks are the produce-to-acknowledgement times of measured records,
	// to tell the producer's part of the latency from the consumer's.
	var acksMu sync.Mutex
	var acks []int64
	cb := func(r *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
			return
		}
		now := time.Now().UnixNano()
		if ts := int64(binary.BigEndian.Uint64(r.Value)); ts >= measureFrom.Load() {
			acksMu.Lock()
			acks = append(acks, now-ts)
			acksMu.Unlock()
		}
	}
	slab := recordSlab{size: *size}
	start := time.Now()
	end := start.Add(*warmup + *duration)
	measureFrom.Store(start.Add(*warmup).UnixNano())
	time.AfterFunc(*warmup, func() { fetchRTT.record(true) })
	time.AfterFunc(*warmup+*duration, func() { fetchRTT.record(false) }) // not the drain's last long polls
	var sent, measured int64
	for failed.Load() == nil {
		now := time.Now()
		if !now.Before(end) {
			break
		}
		due := int64(now.Sub(start).Seconds() * float64(*rate))
		for ; sent < due; sent++ {
			r := slab.next()
			t := time.Now().UnixNano()
			binary.BigEndian.PutUint64(r.Value, uint64(t))
			if t >= measureFrom.Load() {
				measured++
			}
			r.Topic = topics[sent%int64(len(topics))]
			prod.Produce(ctx, r, cb)
		}
		time.Sleep(100 * time.Microsecond)
	}
	elapsed := time.Since(start)
	if err := prod.Flush(ctx); err != nil {
		return err
	}
	if p := failed.Load(); p != nil {
		return *p
	}
	wait := time.Now().Add(20 * time.Second)
	for counted.Load() < measured && time.Now().Before(wait) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if c := counted.Load(); c < measured {
		return fmt.Errorf("latency: received %d of %d measured records", c, measured)
	}
	slices.Sort(lats)
	acksMu.Lock()
	slices.Sort(acks)
	acksMu.Unlock()
	rtts, fetchBytes := fetchRTT.sorted()
	fmt.Printf("sent=%d measured=%d received=%d rate=%.0f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f ack_p50_ms=%.3f ack_p99_ms=%.3f fetches=%d fetch_kb=%.1f fetch_p99_ms=%.3f fetch_max_ms=%.3f\n",
		sent, measured, received.Load(), float64(sent)/elapsed.Seconds(), quantile(lats, 0.50), quantile(lats, 0.99),
		quantile(lats, 0.999), quantile(lats, 1), quantile(acks, 0.50), quantile(acks, 0.99),
		len(rtts), float64(fetchBytes)/float64(max(len(rtts), 1))/1024, quantile(rtts, 0.99), quantile(rtts, 1))
	return nil
}

// fetchTimes keeps the consumer's Fetch round trips while recording: from
// writing the request to having read the whole response, as the client saw
// them. Next to the end-to-end figures it tells a slow answer from a slow
// client; at rates the consumer keeps up with, the round trips include the
// broker's wait for new records (up to FetchMaxWait).
type fetchTimes struct {
	mu    sync.Mutex
	on    bool
	rtts  []int64 // ns
	bytes int64
}

func (f *fetchTimes) record(on bool) { f.mu.Lock(); f.on = on; f.mu.Unlock() }

func (f *fetchTimes) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key != 1 || e2e.Err() != nil { // 1: Fetch
		return
	}
	f.mu.Lock()
	if f.on {
		f.rtts = append(f.rtts, int64(e2e.DurationE2E()))
		f.bytes += int64(e2e.BytesRead)
	}
	f.mu.Unlock()
}

func (f *fetchTimes) sorted() ([]int64, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	slices.Sort(f.rtts)
	return f.rtts, f.bytes
}

// recordSlab hands out records and their values from blocks of 4,096, so
// that at hundreds of thousands of records a second the client allocates
// 4,096 times less often. A record is never handed out twice: franz-go
// keeps it until it is acknowledged, and the block goes when the last of
// its records does.
type recordSlab struct {
	size   int
	recs   []kgo.Record
	values []byte
}

func (s *recordSlab) next() *kgo.Record {
	if len(s.recs) == 0 {
		s.recs = make([]kgo.Record, 4096)
		s.values = make([]byte, 4096*s.size)
	}
	r := &s.recs[0]
	r.Value = s.values[:s.size:s.size]
	s.recs, s.values = s.recs[1:], s.values[s.size:]
	return r
}

// quantile is the q-th quantile of sorted nanoseconds, in milliseconds.
func quantile(sorted []int64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(int(q*float64(len(sorted))), len(sorted)-1)
	return float64(sorted[i]) / 1e6
}

func txn(args []string) error {
	fs := flag.NewFlagSet("txn", flag.ContinueOnError)
	addr := fs.String("b", "", "bootstrap host:port")
	topic := fs.String("topic", "", "topic")
	interval := fs.Duration("interval", 10*time.Millisecond, "how long a transaction produces before it commits")
	warmup := fs.Duration("warmup", 2*time.Second, "transactions not counted")
	duration := fs.Duration("duration", 10*time.Second, "measured time")
	size := fs.Int("size", 100, "record size")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" || *topic == "" {
		return errors.New("txn needs -b and -topic")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(*addr), kgo.DefaultProduceTopic(*topic),
		kgo.TransactionalID(fmt.Sprintf("benchcompare-txn-%d", time.Now().UnixNano())),
		kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(64<<10),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := context.Background()
	value := make([]byte, *size)
	// One whole transaction before the clock starts: the first one
	// waits for InitProducerId and, on a fresh broker, for
	// __transaction_state to be created and loaded.
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
		return fmt.Errorf("first transaction: %w", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("first transaction: %w", err)
	}
	var failed atomic.Value
	var records, bytes int64
	var endTxn []int64
	begin := time.Now()
	measureFrom, stop := begin.Add(*warmup), begin.Add(*warmup+*duration)
	var measured time.Time
	for time.Now().Before(stop) {
		counted := !time.Now().Before(measureFrom)
		if counted && measured.IsZero() {
			measured = time.Now()
		}
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		n := int64(0)
		for end := time.Now().Add(*interval); time.Now().Before(end); n++ {
			cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Store(err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		if e := failed.Load(); e != nil {
			return e.(error)
		}
		t0 := time.Now()
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		if counted {
			endTxn = append(endTxn, time.Since(t0).Nanoseconds())
			records += n
			bytes += n * int64(*size)
		}
	}
	wall := time.Since(measured).Seconds()
	slices.Sort(endTxn)
	var maxMs float64
	if len(endTxn) > 0 {
		maxMs = float64(endTxn[len(endTxn)-1]) / 1e6
	}
	fmt.Printf("recs=%.0f MBs=%.2f txns=%d p50_ms=%.2f p99_ms=%.2f max_ms=%.2f\n",
		float64(records)/wall, float64(bytes)/wall/1e6, len(endTxn), quantile(endTxn, 0.5), quantile(endTxn, 0.99), maxMs)
	return nil
}
