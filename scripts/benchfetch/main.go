//go:build ignore

// benchfetch is the load generator of scripts/bench-fetch.sh: it fills
// topics with franz-go and reads them back whole, timing the read and
// sampling the broker's CPU from /proc around it.
//
//	go build -o bin/benchfetch scripts/benchfetch/main.go
//	benchfetch freeport
//	benchfetch produce -b 127.0.0.1:9092 -topic t -bytes 2GiB -record-size 1024
//	benchfetch produce -client raw -conns 2 -b 127.0.0.1:9092 -topic t -partitions 6 -bytes 1GiB -record-size 16384
//	benchfetch consume -b 127.0.0.1:9092 -topic t -client raw -broker-pid 1234
//	benchfetch ceiling write -dir D -bytes 4GiB -conns 2 -partitions 6
//	benchfetch ceiling read -files 'D/t-*/*.log'
//
// consume -client raw sends FetchRequests (v12) on its own connection and
// only walks the batch headers of each response, read into one reused
// buffer, so nearly all of the consumer's cost is the kernel's copy into it:
// it stresses the broker. -client kgo is franz-go's consumer, decoding every
// record, for what a real client sees. produce -client raw is the same idea
// for writes: requests encoded once and sent again and again (see
// produceRaw), so that a broker is measured where Kafka's single-threaded
// Java producer would be the limit. Either prints one line of key=value:
// bytes (record batch bytes, headers included), records, wall seconds,
// broker utime/stime (from /proc/<pid>/stat), the consumer's own user/sys
// (getrusage) and the whole machine's busy CPU seconds (/proc/stat, softirq
// included, which on loopback is charged to whoever is running).
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/kwire"
)

func main() {
	if len(os.Args) < 2 {
		fatal(errors.New("usage: benchfetch freeport|produce|consume|ceiling [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "freeport":
		var ln net.Listener
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err == nil {
			fmt.Println(ln.Addr().(*net.TCPAddr).Port)
			ln.Close()
		}
	case "produce":
		err = produce(os.Args[2:])
	case "consume":
		err = consume(os.Args[2:])
	case "ceiling":
		err = ceiling(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "benchfetch:", err)
	os.Exit(1)
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suf, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if strings.HasSuffix(s, suf) {
			s, mult = strings.TrimSuffix(s, suf), m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

// produce writes -bytes of -record-size random, incompressible values with
// franz-go: uncompressed batches of up to 1,000,000 bytes (under the
// broker's message.max.bytes), 10 ms linger, acks=all, idempotent.
func produce(args []string) error {
	fs := flag.NewFlagSet("produce", flag.ExitOnError)
	bootstrap := fs.String("b", "127.0.0.1:9092", "bootstrap (raw: the broker that leads every partition)")
	topic := fs.String("topic", "", "topic")
	total := fs.String("bytes", "2GiB", "value bytes to write")
	size := fs.Int("record-size", 1024, "bytes per record value")
	client := fs.String("client", "kgo", "kgo or raw")
	conns := fs.Int("conns", 2, "raw: connections, each with its share of the partitions")
	partitions := fs.Int("partitions", 6, "raw: partitions of the topic")
	pid := fs.Int("broker-pid", 0, "raw: broker process to sample")
	label := fs.String("label", "", "raw: printed first")
	fs.Parse(args)
	want, err := parseSize(*total)
	if err != nil {
		return err
	}
	if *client == "raw" {
		return produceRaw(*bootstrap, *topic, want, *size, *conns, *partitions, *pid, *label)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(*bootstrap), kgo.DefaultProduceTopic(*topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1_000_000),
		kgo.ProducerLinger(10*time.Millisecond), kgo.MaxBufferedBytes(256<<20), kgo.MaxBufferedRecords(1<<20),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	// One pool of random bytes; each value is a random window of it, so the
	// data does not compress and costs no per-record randomness.
	pool := make([]byte, 64<<20)
	for i := range pool {
		pool[i] = byte(rand.Uint32())
	}
	n := want / int64(*size)
	var failed atomic.Pointer[error]
	start := time.Now()
	ctx := context.Background()
	for i := int64(0); i < n && failed.Load() == nil; i++ {
		off := rand.IntN(len(pool) - *size)
		cl.Produce(ctx, &kgo.Record{Value: pool[off : off+*size]}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if p := failed.Load(); p != nil {
		return *p
	}
	el := time.Since(start).Seconds()
	fmt.Printf("produced %d records of %d bytes to %s in %.1fs (%.0f MB/s of values)\n",
		n, *size, *topic, el, float64(n*int64(*size))/el/1e6)
	return nil
}

type sample struct {
	wall                  time.Time
	brokerUser, brokerSys float64 // seconds
	selfUser, selfSys     float64
	machineBusy           float64 // all CPUs, seconds: user, nice, system, irq, softirq
	machineIRQ            float64 // irq and softirq alone
	machineSteal          float64
}

const clkTck = 100 // USER_HZ; /proc reports ticks of 1/100 s on Linux

func takeSample(pid int) (sample, error) {
	s := sample{wall: time.Now()}
	if pid > 0 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return s, err
		}
		// Fields after the ")" that ends comm: state is field 3, utime 14, stime 15.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		s.brokerUser, s.brokerSys = ut/clkTck, st/clkTck
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	s.selfUser = float64(ru.Utime.Sec) + float64(ru.Utime.Usec)/1e6
	s.selfSys = float64(ru.Stime.Sec) + float64(ru.Stime.Usec)/1e6
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)               // cpu user nice system idle iowait irq softirq steal ...
	for i, v := range f[1:min(len(f), 9)] { // guest time, after steal, is already in user
		t, _ := strconv.ParseFloat(v, 64)
		switch i {
		case 3, 4: // idle, iowait
		case 7:
			s.machineSteal += t / clkTck
		case 5, 6:
			s.machineIRQ += t / clkTck
			fallthrough
		default:
			s.machineBusy += t / clkTck
		}
	}
	return s, nil
}

type partEnd struct {
	partition int32
	end       int64
}

// endOffsets is the high watermark of every partition of topic.
func endOffsets(bootstrap, topic string) ([]partEnd, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []partEnd
	var lerr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			lerr = o.Err
		}
		out = append(out, partEnd{o.Partition, o.Offset})
	})
	if len(out) == 0 && lerr == nil {
		lerr = fmt.Errorf("topic %s has no partitions", topic)
	}
	return out, lerr
}

func consume(args []string) error {
	fs := flag.NewFlagSet("consume", flag.ExitOnError)
	bootstrap := fs.String("b", "127.0.0.1:9092", "bootstrap (raw: also the broker to fetch from)")
	topic := fs.String("topic", "", "topic")
	client := fs.String("client", "raw", "raw or kgo")
	pid := fs.Int("broker-pid", 0, "broker process to sample")
	maxBytes := fs.Int("fetch-max-bytes", fetchBytes, "FetchRequest max_bytes")
	partMax := fs.Int("partition-max-bytes", partBytes, "FetchRequest partition_max_bytes")
	verify := fs.Bool("verify", false, "raw: check every batch's CRC-32C in the measured pass too")
	label := fs.String("label", "", "printed first")
	passes := fs.Int("passes", 2, "full reads of the topic; only the last is measured")
	fs.Parse(args)
	ends, err := endOffsets(*bootstrap, *topic)
	if err != nil {
		return err
	}
	// Every pass but the last warms up (the broker, this process's heap, the
	// page cache) and is not measured; a raw warm-up pass checks every
	// batch's CRC, so the broker's bytes are known right in each mode.
	raw := newRawReader(int(*maxBytes))
	read := func(verify bool) (int64, int64, error) {
		switch *client {
		case "raw":
			return raw.consume(*bootstrap, *topic, ends, int32(*maxBytes), int32(*partMax), verify)
		case "kgo":
			return consumeKgo(*bootstrap, *topic, ends, int32(*maxBytes), int32(*partMax))
		}
		return 0, 0, fmt.Errorf("-client %q: want raw or kgo", *client)
	}
	for i := 1; i < *passes; i++ {
		if _, _, err := read(*verify || i == 1); err != nil {
			return fmt.Errorf("warm-up pass: %w", err)
		}
	}
	before, err := takeSample(*pid)
	if err != nil {
		return err
	}
	bytes, records, err := read(*verify && *passes == 1)
	if err != nil {
		return err
	}
	after, err := takeSample(*pid)
	if err != nil {
		return err
	}
	var want int64
	for _, e := range ends {
		want += e.end
	}
	if records < want {
		return fmt.Errorf("read %d records, want %d", records, want)
	}
	fmt.Printf("%sbytes=%d records=%d wall=%.4f broker_user=%.2f broker_sys=%.2f self_user=%.3f self_sys=%.3f machine=%.2f machine_irq=%.2f steal=%.2f\n",
		*label, bytes, records, after.wall.Sub(before.wall).Seconds(),
		after.brokerUser-before.brokerUser, after.brokerSys-before.brokerSys,
		after.selfUser-before.selfUser, after.selfSys-before.selfSys, after.machineBusy-before.machineBusy,
		after.machineIRQ-before.machineIRQ, after.machineSteal-before.machineSteal)
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// rawReader keeps one response buffer for all passes, touched before use
// (memory that sat idle is slow on its first touch).
type rawReader struct{ buf []byte }

func newRawReader(maxBytes int) *rawReader {
	buf := make([]byte, maxBytes+1<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	return &rawReader{buf[:0]}
}

// consume fetches every partition from 0 to its end, all partitions in
// each request, one request at a time, on a connection of its own.
func (r *rawReader) consume(addr, topic string, ends []partEnd, maxBytes, partBytes int32, verify bool) (bytes, records int64, err error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, 0, err
	}
	defer nc.Close()
	next := make(map[int32]int64, len(ends))
	end := make(map[int32]int64, len(ends))
	for _, e := range ends {
		next[e.partition], end[e.partition] = 0, e.end
	}
	format := kmsg.NewRequestFormatter(kmsg.FormatterClientID("benchfetch"))
	var out []byte
	buf := r.buf
	var hdr [4]byte
	for corr := int32(1); ; corr++ {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 500, 1, maxBytes
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for _, e := range ends {
			if next[e.partition] >= e.end {
				continue
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = e.partition, next[e.partition], partBytes
			rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) == 0 {
			return bytes, records, nil
		}
		// Rotate, as clients do, so no partition always goes first.
		if k := int(corr) % len(rt.Partitions); k > 0 {
			rt.Partitions = append(rt.Partitions[k:], rt.Partitions[:k]...)
		}
		req.Topics = append(req.Topics, rt)
		out = format.AppendRequest(out[:0], req, corr)
		if _, err := nc.Write(out); err != nil {
			return 0, 0, err
		}
		if _, err := io.ReadFull(nc, hdr[:]); err != nil {
			return 0, 0, err
		}
		size := int(binary.BigEndian.Uint32(hdr[:]))
		if size > cap(buf) {
			buf = make([]byte, size)
			r.buf = buf[:0]
		}
		buf = buf[:size]
		if _, err := io.ReadFull(nc, buf); err != nil {
			return 0, 0, err
		}
		if got := int32(binary.BigEndian.Uint32(buf)); got != corr || buf[4] != 0 {
			return 0, 0, fmt.Errorf("response correlation %d (tags %d), want %d", got, buf[4], corr)
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		if err := resp.UnsafeReadFrom(buf[5:]); err != nil {
			return 0, 0, err
		}
		if resp.ErrorCode != 0 {
			return 0, 0, fmt.Errorf("fetch error %d", resp.ErrorCode)
		}
		progress := false
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return 0, 0, fmt.Errorf("partition %d: fetch error %d", p.Partition, p.ErrorCode)
				}
				b := p.RecordBatches
				for len(b) >= 61 {
					n := 12 + int(int32(binary.BigEndian.Uint32(b[8:])))
					if n > len(b) {
						break // a partial batch at the end
					}
					if verify && crc32.Checksum(b[21:n], castagnoli) != binary.BigEndian.Uint32(b[17:]) {
						return 0, 0, fmt.Errorf("partition %d: bad CRC in batch at offset %d", p.Partition, int64(binary.BigEndian.Uint64(b)))
					}
					base := int64(binary.BigEndian.Uint64(b))
					last := base + int64(int32(binary.BigEndian.Uint32(b[23:])))
					if base < next[p.Partition] && verify {
						return 0, 0, fmt.Errorf("partition %d: batch at %d before the fetch offset %d", p.Partition, base, next[p.Partition])
					}
					next[p.Partition] = last + 1
					bytes += int64(n)
					records += int64(int32(binary.BigEndian.Uint32(b[57:])))
					b = b[n:]
					progress = true
				}
			}
		}
		if !progress {
			return 0, 0, fmt.Errorf("a fetch returned no whole batch (next offsets %v)", next)
		}
	}
}

// consumeKgo reads the topic with franz-go's consumer, records decoded,
// no group. Bytes are counted from the fetch hook, per batch: the records'
// bytes plus the 61 bytes of batch header, as consumeRaw counts them.
func consumeKgo(addr, topic string, ends []partEnd, maxBytes, partBytes int32) (bytes, records int64, err error) {
	var batchBytes atomic.Int64
	offsets := map[string]map[int32]kgo.Offset{topic: {}}
	remaining := 0
	end := map[int32]int64{}
	for _, e := range ends {
		offsets[topic][e.partition] = kgo.NewOffset().At(0)
		end[e.partition] = e.end
		if e.end > 0 {
			remaining++
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(offsets),
		kgo.FetchMaxBytes(maxBytes), kgo.FetchMaxPartitionBytes(partBytes), kgo.BrokerMaxReadBytes(maxBytes+16<<20),
		kgo.WithHooks(fetchHook{&batchBytes}))
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := map[int32]bool{}
	for remaining > 0 {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err0(); err != nil {
			return 0, 0, err
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return 0, 0, ferr
		}
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 {
				return
			}
			records += int64(len(p.Records))
			if p.Records[len(p.Records)-1].Offset+1 >= end[p.Partition] && !done[p.Partition] {
				done[p.Partition] = true
				remaining--
			}
		})
	}
	return batchBytes.Load(), records, nil
}

type fetchHook struct{ n *atomic.Int64 }

func (h fetchHook) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	h.n.Add(int64(m.CompressedBytes) + 61)
}

// produceRaw writes about want bytes of values of size bytes to topic's
// partitions over conns connections, partition p on connection p % conns,
// each connection keeping up to 5 requests in flight (the Java producer's
// max.in.flight.requests.per.connection). A request is acks=1 Produce v9
// with one uncompressed batch per partition of as many records as fit in
// 64 KiB (ProducerPerformance's batch.size in bench-vs-kafka.sh), encoded
// once: the client's cost per request is one write of the frame and the
// read of a small answer, so the broker, not the client, sets the rate.
// Every partition's answer is checked.
func produceRaw(addr, topic string, want int64, size, conns, partitions, pid int, label string) error {
	// 61 bytes of batch header; a record of a small value without key or
	// headers adds about 10 bytes of lengths, deltas and attributes.
	perBatch := max(1, (64<<10-61)/(size+10))
	value := make([]byte, size)
	for i := range value {
		value[i] = byte(rand.Uint32())
	}
	recs := make([]kmsg.Record, perBatch)
	for i := range recs {
		recs[i] = kmsg.Record{OffsetDelta: int32(i), Value: value}
	}
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	batch, err := record.Build(opts, recs)
	if err != nil {
		return err
	}
	type lane struct {
		frame   []byte
		records int64 // per request
		nc      net.Conn
	}
	lanes := make([]*lane, conns)
	for c := range lanes {
		req := kmsg.NewProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis = 1, 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		for p := c; p < partitions; p += conns {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = int32(p), batch
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) == 0 {
			return fmt.Errorf("-conns %d is more than the %d partitions", conns, partitions)
		}
		req.Topics = append(req.Topics, rt)
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer nc.Close()
		lanes[c] = &lane{kwire.AppendRequest(nil, &req, 0, "benchfetch"), int64(perBatch * len(rt.Partitions)), nc}
	}
	// A topic just created may not have its leaders ready, and this
	// client does not retry as a producer would: send one request on each
	// connection until it is taken.
	for _, l := range lanes {
		buf := make([]byte, 64<<10)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if _, err := l.nc.Write(l.frame); err != nil {
				return err
			}
			err := readProduceAnswer(l.nc, &buf)
			if err == nil {
				break
			}
			if !errors.Is(err, kerr.NotLeaderForPartition) && !errors.Is(err, kerr.UnknownTopicOrPartition) || time.Now().After(deadline) {
				return err
			}
		}
	}
	perRequest := int64(0)
	for _, l := range lanes {
		perRequest += l.records * int64(size)
	}
	requests := max(1, want/perRequest) // on every lane
	before, err := takeSample(pid)
	if err != nil {
		return err
	}
	errs := make(chan error, 2*conns)
	for _, l := range lanes {
		buf := make([]byte, 64<<10)
		go pipeline(l.nc, l.frame, requests, func() error { return readProduceAnswer(l.nc, &buf) }, errs)
	}
	for range lanes {
		if err := <-errs; err != nil {
			return err
		}
	}
	after, err := takeSample(pid)
	if err != nil {
		return err
	}
	var records int64
	for _, l := range lanes {
		records += requests * l.records
	}
	wall := after.wall.Sub(before.wall).Seconds()
	fmt.Printf("%srecs=%.0f MBs=%.1f bytes=%d records=%d wall=%.4f broker_user=%.2f broker_sys=%.2f self_user=%.3f self_sys=%.3f machine=%.2f\n",
		label, float64(records)/wall, float64(records*int64(size))/wall/1e6, records*int64(size), records, wall,
		after.brokerUser-before.brokerUser, after.brokerSys-before.brokerSys,
		after.selfUser-before.selfUser, after.selfSys-before.selfSys, after.machineBusy-before.machineBusy)
	return nil
}

// pipeline writes frame n times on nc, keeping up to 5 unanswered (the
// Java producer's max.in.flight.requests.per.connection), and reads each
// answer with readAnswer. It sends the first error to errs, or nil once
// the last answer is read.
func pipeline(nc net.Conn, frame []byte, n int64, readAnswer func() error, errs chan<- error) {
	inFlight := make(chan struct{}, 5)
	go func() {
		for range n {
			inFlight <- struct{}{}
			if _, err := nc.Write(frame); err != nil {
				errs <- err
				return
			}
		}
	}()
	for range n {
		if err := readAnswer(); err != nil {
			errs <- err
			return
		}
		<-inFlight
	}
	errs <- nil
}

// readProduceAnswer reads one Produce v9 answer into *buf (grown as
// needed) and returns the first partition's error.
func readProduceAnswer(nc net.Conn, buf *[]byte) error {
	var sz [4]byte
	if _, err := io.ReadFull(nc, sz[:]); err != nil {
		return err
	}
	n := int(binary.BigEndian.Uint32(sz[:]))
	if n > len(*buf) {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if _, err := io.ReadFull(nc, b); err != nil {
		return err
	}
	resp := kmsg.NewProduceResponse()
	resp.SetVersion(9)
	if err := resp.ReadFrom(b[5:]); err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	return nil
}
