package kafkacli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// The performance loops are Apache Kafka's ProducerPerformance and
// ConsumerPerformance (kafka-producer-perf-test.sh,
// kafka-consumer-perf-test.sh) on kafka-go: the same measures, and the same
// lines, so numbers from both tools can be put side by side.

// maxLatencySamples caps the latencies kept for percentiles, as Kafka's
// ProducerPerformance does (every n-th record for n = records/500000).
const maxLatencySamples = 500000

// PerfProduceConfig is a producer performance run.
type PerfProduceConfig struct {
	WriterConfig
	Records    int64
	RecordSize int
	// Throughput caps records per second; <= 0 is no cap.
	Throughput float64
	// Progress, if set, gets a line every ReportInterval.
	Progress       io.Writer
	ReportInterval time.Duration
}

// PerfProduceResult is what a producer run measured. Latency is from
// handing a record to the writer to its acknowledgement.
type PerfProduceResult struct {
	Records       int64   `json:"records"`
	Failed        int64   `json:"failed"`
	Bytes         int64   `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`
	AvgMs         float64 `json:"latency_avg_ms"`
	P50Ms         float64 `json:"latency_p50_ms"`
	P95Ms         float64 `json:"latency_p95_ms"`
	P99Ms         float64 `json:"latency_p99_ms"`
	P999Ms        float64 `json:"latency_p99_9_ms"`
	MaxMs         float64 `json:"latency_max_ms"`
	Err           error   `json:"-"`
}

// String is Kafka's ProducerPerformance summary line, with the percentiles
// in fractional milliseconds:
//
//	100000 records sent, 49975.0 records/sec (4.77 MB/sec), 3.21 ms avg latency, 40.12 ms max latency, 2.90 ms 50th, 6.01 ms 95th, 9.87 ms 99th, 30.20 ms 99.9th.
func (r *PerfProduceResult) String() string {
	return fmt.Sprintf("%d records sent, %.1f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %.2f ms 50th, %.2f ms 95th, %.2f ms 99th, %.2f ms 99.9th.",
		r.Records, r.RecordsPerSec, r.MBPerSec, r.AvgMs, r.MaxMs, r.P50Ms, r.P95Ms, r.P99Ms, r.P999Ms)
}

// JSON is the result as one JSON object.
func (r *PerfProduceResult) JSON() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// latencyWindow accumulates latencies between two progress lines, and
// over the whole run.
type latencyWindow struct {
	start         time.Time
	count, bytes  int64
	total, maxLat time.Duration
}

func (w *latencyWindow) add(n int64, bytes int64, lat time.Duration) {
	w.count += n
	w.bytes += bytes
	w.total += lat * time.Duration(n)
	w.maxLat = max(w.maxLat, lat)
}

func (w *latencyWindow) line(now time.Time) string {
	secs := now.Sub(w.start).Seconds()
	avg := 0.0
	if w.count > 0 {
		avg = ms(w.total) / float64(w.count)
	}
	return fmt.Sprintf("%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.",
		w.count, float64(w.count)/secs, float64(w.bytes)/secs/(1<<20), avg, ms(w.maxLat))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// PerfProduce sends cfg.Records records of cfg.RecordSize random bytes
// (uppercase letters, as Kafka's tool sends) without keys, at most
// cfg.Throughput a second, and measures throughput and latency. It stops
// early when ctx ends or a record fails.
func (c *Cluster) PerfProduce(ctx context.Context, cfg PerfProduceConfig) (*PerfProduceResult, error) {
	payload := make([]byte, cfg.RecordSize)
	for i := range payload {
		payload[i] = byte('A' + rand.IntN(26))
	}
	sampling := max(cfg.Records/maxLatencySamples, 1)

	var (
		mu       sync.Mutex // guards the fields below, written by the writer's goroutines
		total    latencyWindow
		window   latencyWindow
		samples  = make([]time.Duration, 0, min(cfg.Records, maxLatencySamples)+1)
		acked    int64
		failed   int64
		firstErr error
		failedCh = make(chan struct{})
	)
	buf := newBudget(cfg.BufferBytes)
	w := c.newWriter(cfg.WriterConfig, func(msgs []kafka.Message, err error) {
		now := time.Now()
		buf.release(int64(len(msgs) * len(payload)))
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("writing to %q partition %d: %w", cfg.Topic, msgs[0].Partition, unwrapClient(err))
				close(failedCh)
			}
			failed += int64(len(msgs))
			return
		}
		for i := range msgs {
			// Time is the record's timestamp, taken when it was handed
			// over; kafka-go keeps it (and its monotonic reading).
			lat := now.Sub(msgs[i].Time)
			total.add(1, int64(len(payload)), lat)
			window.add(1, int64(len(payload)), lat)
			if acked%sampling == 0 {
				samples = append(samples, lat)
			}
			acked++
		}
	})

	start := time.Now()
	total.start, window.start = start, start
	stopReport := reportProgress(cfg.Progress, cfg.ReportInterval, func(now time.Time) string {
		mu.Lock()
		defer mu.Unlock()
		line := window.line(now)
		window = latencyWindow{start: now}
		return line
	})

	// Without a throughput cap records go to the writer a chunk at a time:
	// each WriteMessages call looks the topic up in kafka-go's metadata
	// cache, which costs more than queueing one record.
	chunk := int64(100)
	if cfg.Throughput > 0 {
		chunk = 1
	}
	msgs := make([]kafka.Message, 0, chunk)
	var sent int64
	var sendErr error
send:
	for sent < cfg.Records {
		select {
		case <-ctx.Done():
			break send
		case <-failedCh:
			break send
		default:
		}
		if cfg.Throughput > 0 {
			due := start.Add(time.Duration(float64(sent) / cfg.Throughput * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					break send
				}
			}
		}
		n := min(chunk, cfg.Records-sent)
		buf.acquire(n * int64(len(payload)))
		msgs = msgs[:0]
		now := time.Now()
		for range n {
			msgs = append(msgs, kafka.Message{Value: payload, Time: now})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			buf.release(n * int64(len(payload)))
			sendErr = fmt.Errorf("writing to %q: %w", cfg.Topic, unwrapClient(err))
			break
		}
		sent += n
	}
	select {
	case <-failedCh:
		// kafka-go retries every queued batch before Close returns, which
		// can take minutes when the cluster is gone; the run is over at
		// the first failure, so let the writer wind down on its own.
		go w.Close()
	default:
		w.Close()
	}
	end := time.Now()
	stopReport()

	mu.Lock()
	defer mu.Unlock()
	secs := end.Sub(start).Seconds()
	r := &PerfProduceResult{
		Records:       acked,
		Failed:        failed,
		Bytes:         total.bytes,
		Seconds:       secs,
		RecordsPerSec: float64(acked) / secs,
		MBPerSec:      float64(total.bytes) / secs / (1 << 20),
		MaxMs:         ms(total.maxLat),
		Err:           firstErr,
	}
	if acked > 0 {
		r.AvgMs = ms(total.total) / float64(acked)
	}
	slices.Sort(samples)
	pct := func(p float64) float64 {
		if len(samples) == 0 {
			return 0
		}
		return ms(samples[min(int(float64(len(samples))*p), len(samples)-1)])
	}
	r.P50Ms, r.P95Ms, r.P99Ms, r.P999Ms = pct(0.5), pct(0.95), pct(0.99), pct(0.999)
	if sendErr != nil {
		return r, sendErr
	}
	return r, firstErr
}

// PerfConsumeConfig is a consumer performance run.
type PerfConsumeConfig struct {
	Topic   string
	Records int64
	// Offsets is where each partition is read from (usually its start).
	Offsets map[int]int64
	// Timeout ends the run when no record came for that long.
	Timeout        time.Duration
	Progress       io.Writer
	ReportInterval time.Duration
	MaxBytes       int
}

// PerfConsumeResult is what a consumer run measured: from the first fetch
// to the last record, so connecting is included as it is in Kafka's tool.
type PerfConsumeResult struct {
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`
	Records       int64     `json:"records"`
	Bytes         int64     `json:"bytes"`
	Seconds       float64   `json:"seconds"`
	RecordsPerSec float64   `json:"records_per_sec"`
	MBPerSec      float64   `json:"mb_per_sec"`
}

// PerfConsumeHeader is the header of Kafka's ConsumerPerformance output.
const PerfConsumeHeader = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"

// String is the line under PerfConsumeHeader. There is no group, hence no
// rebalance: rebalance.time.ms is 0 and the fetch figures equal the totals.
func (r *PerfConsumeResult) String() string {
	mb := float64(r.Bytes) / (1 << 20)
	return fmt.Sprintf("%s, %s, %.4f, %.4f, %d, %.4f, 0, %d, %.4f, %.4f",
		kafkaTime(r.Start), kafkaTime(r.End), mb, r.MBPerSec, r.Records, r.RecordsPerSec,
		r.End.Sub(r.Start).Milliseconds(), r.MBPerSec, r.RecordsPerSec)
}

// kafkaTime is Java's "yyyy-MM-dd HH:mm:ss:SSS", which Go's layouts cannot
// say: they take fractional seconds only after a dot or a comma.
func kafkaTime(t time.Time) string {
	return fmt.Sprintf("%s:%03d", t.Format("2006-01-02 15:04:05"), t.Nanosecond()/int(time.Millisecond))
}

// JSON is the result as one JSON object.
func (r *PerfConsumeResult) JSON() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// PerfConsume reads cfg.Records records from cfg.Offsets and measures the
// throughput. Running out of records for cfg.Timeout ends it early with an
// error wrapping ErrIdle, and the result so far.
func (c *Cluster) PerfConsume(ctx context.Context, cfg PerfConsumeConfig) (*PerfConsumeResult, error) {
	r := &PerfConsumeResult{Start: time.Now()}
	r.End = r.Start
	var mu sync.Mutex
	var wRecords, wBytes int64
	wStart := r.Start
	stopReport := reportProgress(cfg.Progress, cfg.ReportInterval, func(now time.Time) string {
		mu.Lock()
		defer mu.Unlock()
		secs := now.Sub(wStart).Seconds()
		line := fmt.Sprintf("%d records received, %.1f records/sec (%.2f MB/sec), %d of %d so far.",
			wRecords, float64(wRecords)/secs, float64(wBytes)/secs/(1<<20), r.Records, cfg.Records)
		wRecords, wBytes, wStart = 0, 0, now
		return line
	})
	err := c.Consume(ctx, ConsumeConfig{Topic: cfg.Topic, Offsets: cfg.Offsets, Idle: cfg.Timeout, MaxBytes: cfg.MaxBytes}, func(m *kafka.Message) error {
		n := int64(len(m.Key) + len(m.Value))
		mu.Lock()
		r.Records++
		r.Bytes += n
		wRecords++
		wBytes += n
		r.End = time.Now()
		done := r.Records >= cfg.Records
		mu.Unlock()
		if done {
			return ErrStop
		}
		return nil
	})
	stopReport()
	mu.Lock()
	defer mu.Unlock()
	secs := r.End.Sub(r.Start).Seconds()
	if secs > 0 {
		r.Seconds = secs
		r.RecordsPerSec = float64(r.Records) / secs
		r.MBPerSec = float64(r.Bytes) / secs / (1 << 20)
	}
	return r, err
}

// reportProgress prints line(now) to w every interval until the returned
// stop is called; stop returns once no line can be printed any more. A nil w
// or a zero interval prints nothing.
func reportProgress(w io.Writer, every time.Duration, line func(now time.Time) string) (stop func()) {
	if w == nil || every <= 0 {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-t.C:
				fmt.Fprintln(w, line(now))
			}
		}
	}()
	return func() { close(quit); <-done }
}
