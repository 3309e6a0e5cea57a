package cluster_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// A log dir that fails for real: broker 4 has two log dirs, the second an
// 8 MiB tmpfs that fills up (ENOSPC) under an acks=all producer. The dir
// goes offline, the partitions in it lead elsewhere, the other dir keeps
// serving the partitions broker 4 leads, DescribeLogDirs and /metrics show
// the failed dir, nothing acknowledged is lost, and after a restart with
// room on the tmpfs broker 4's replicas there catch up and rejoin the ISR.
func TestFaultLogDirFailure(t *testing.T) {
	tmpfs := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", tmpfs).CombinedOutput(); err != nil {
		testbroker.Require(t, false, "permission to mount a tmpfs (root or CAP_SYS_ADMIN)",
			fmt.Sprintf("mount -t tmpfs failed: %v: %s", err, strings.TrimSpace(string(out))))
	}
	// Registered before any broker starts, so it runs after they stop.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", tmpfs).CombinedOutput(); err != nil {
			exec.Command("umount", "-l", tmpfs).Run()
			t.Logf("umount %s: %v: %s", tmpfs, err, out)
		}
	})

	// One controller, brokers 2 and 3, and broker 4 with two log dirs.
	c := testcluster.StartSplit(t, 1, 2)
	c.Controller(15 * time.Second)
	cfg := c.BrokerOnlyConfig(4)
	good := cfg.Dir
	cfg.Dir = good + "," + tmpfs
	b4 := testbroker.StartConfig(t, cfg)
	seeds := append(strings.Split(c.Bootstrap(), ","), b4.Addr())
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// 8 partitions replicated on all three brokers; broker 4 leads those
	// with p%4 < 2 and follows the others, and puts half of them in each
	// log dir (the dir with fewer logs gets the next one), so that each dir
	// holds replicas it leads and replicas it follows.
	const partitions = 8
	var assign [][]int32
	leader := map[int32]int32{}
	for p := range int32(partitions) {
		switch p % 4 {
		case 0, 1:
			assign = append(assign, []int32{4, 2 + p%2, 3 - p%2})
		default:
			assign = append(assign, []int32{2 + p%2, 4, 3 - p%2})
		}
		leader[p] = assign[p][0]
	}
	createAssigned(t, c, "q", assign, "min.insync.replicas", "2", "segment.bytes", "1048576")
	ldWaitPartitions(t, cl, "q", 30*time.Second, "every partition led by its first replica with an ISR of 3", func(p kmsg.MetadataResponseTopicPartition) bool {
		return p.Leader == leader[p.Partition] && len(p.ISR) == 3
	})
	inTmpfs, inGood := ldDirPartitions(t, cl, tmpfs, good, partitions)
	kinds := func(ps []int32) (led, followed int) {
		for _, p := range ps {
			if leader[p] == 4 {
				led++
			} else {
				followed++
			}
		}
		return led, followed
	}
	if l, f := kinds(inTmpfs); l == 0 || f == 0 {
		t.Fatalf("broker 4 put partitions %v in %s: want some it leads and some it follows", inTmpfs, tmpfs)
	}
	if l, _ := kinds(inGood); l == 0 {
		t.Fatalf("broker 4 put partitions %v in %s: want some it leads", inGood, good)
	}
	t.Logf("partitions in the tmpfs dir: %v, in the other dir: %v", inTmpfs, inGood)

	// Produce until the dir failed and well after.
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(500), kgo.RecordDeliveryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var failed atomic.Bool
	var mu sync.Mutex
	acked := map[string]int32{}
	var before, after, afterTmpfs, afterGood, produceErrs atomic.Int64
	var afterByPartition [partitions]atomic.Int64
	pad := strings.Repeat("x", 4000)
	deadline := time.Now().Add(120 * time.Second)
	// How long from the failure until the controller moved the dir's
	// partitions (Metadata shows them led elsewhere).
	moved := make(chan time.Duration, 1)
	go func() {
		for !failed.Load() {
			if strings.Contains(b4.Log(), "log dir failed") {
				failed.Store(true)
			}
			time.Sleep(20 * time.Millisecond)
		}
		start := time.Now()
		for time.Since(start) < 60*time.Second {
			if ldMoved(cl, "q", inTmpfs) {
				moved <- time.Since(start)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	for i := 0; time.Now().Before(deadline) && after.Load() < 3000; i++ {
		p := int32(i % partitions)
		v := fmt.Sprintf("%d-%d", p, i)
		wg.Add(1)
		prod.Produce(context.Background(), &kgo.Record{Topic: "q", Partition: p, Value: []byte(v + " " + pad)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				produceErrs.Add(1)
				return
			}
			mu.Lock()
			acked[v] = p
			mu.Unlock()
			// By when it was acknowledged: after the failure, those of
			// the failed dir's partitions come from their new leaders.
			if !failed.Load() {
				before.Add(1)
				return
			}
			after.Add(1)
			afterByPartition[p].Add(1)
			if slices.Contains(inTmpfs, p) {
				afterTmpfs.Add(1)
			} else {
				afterGood.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("acknowledged %d records before the dir failed and %d after (%d in partitions that were in the failed dir, %d in the other dir's); %d produce errors",
		before.Load(), after.Load(), afterTmpfs.Load(), afterGood.Load(), produceErrs.Load())
	if !failed.Load() {
		t.Fatalf("the tmpfs log dir never failed:\n%s", b4.Log())
	}
	select {
	case d := <-moved:
		t.Logf("the failed dir's partitions led elsewhere %v after the failure was logged", d.Round(time.Millisecond))
	case <-time.After(60 * time.Second):
	}
	if before.Load() < 1000 || after.Load() < 3000 || afterTmpfs.Load() < 500 || afterGood.Load() < 500 {
		t.Fatalf("too few acknowledged records around the failure to tell anything")
	}
	// The other dir kept serving: each partition there that broker 4 leads
	// took records after the failure.
	for _, p := range inGood {
		if leader[p] == 4 && afterByPartition[p].Load() < 100 {
			t.Errorf("q-%d, led by broker 4 in its healthy dir, took %d records after the failure", p, afterByPartition[p].Load())
		}
	}

	// The failure is named in the log, with the dir and the error.
	var line string
	for _, l := range strings.Split(b4.Log(), "\n") {
		if strings.Contains(l, "log dir failed") {
			line = l
			break
		}
	}
	t.Logf("broker 4: %s", line)
	if !strings.Contains(line, tmpfs) || !strings.Contains(line, "no space left on device") {
		t.Errorf("the failure's log line does not name the dir and the error: %s", line)
	}

	// The failed dir's partitions lead elsewhere without broker 4 in their
	// ISR (those it followed keep their leader); the other dir's are as
	// they were, broker 4 leading its own.
	ldWaitPartitions(t, cl, "q", 30*time.Second, "the failed dir's partitions moved, the others unchanged", func(p kmsg.MetadataResponseTopicPartition) bool {
		if slices.Contains(inTmpfs, p.Partition) {
			return p.Leader > 0 && p.Leader != 4 && !slices.Contains(p.ISR, 4) && (leader[p.Partition] == 4 || p.Leader == leader[p.Partition])
		}
		return p.Leader == leader[p.Partition] && len(p.ISR) == 3
	})

	// DescribeLogDirs on broker 4 shows the failed dir.
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.SetVersion(4)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	kr, err := cl.Broker(4).Request(ctx, req)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range kr.(*kmsg.DescribeLogDirsResponse).Dirs {
		switch d.Dir {
		case tmpfs:
			if d.ErrorCode != kerr.KafkaStorageError.Code {
				t.Errorf("DescribeLogDirs: the failed dir %s has error %v, want KAFKA_STORAGE_ERROR", d.Dir, kerr.ErrorForCode(d.ErrorCode))
			}
		case good:
			if d.ErrorCode != 0 || len(d.Topics) != 1 || len(d.Topics[0].Partitions) != len(inGood) {
				t.Errorf("DescribeLogDirs: the healthy dir %s answers %v with %+v, want no error and its %d partitions", d.Dir, kerr.ErrorForCode(d.ErrorCode), d.Topics, len(inGood))
			}
		default:
			t.Errorf("DescribeLogDirs: unexpected dir %s", d.Dir)
		}
	}

	// /metrics counts it.
	if m := ldScrape(t, b4.AdminAddr()); !strings.Contains(m, "\ntributary_broker_offline_log_dirs 1\n") {
		t.Errorf("/metrics does not show one offline log dir:\n%s", ldGrep(m, "offline"))
	}

	// Every acknowledged record is there.
	ldReadAll(t, seeds, "q", partitions, acked)

	// SIGTERM: a broker with a failed dir still stops cleanly (Stop checks
	// the exit status). Restarted with room on the tmpfs, its replicas
	// there recover, catch up and rejoin the ISR.
	b4.Stop()
	if out, err := exec.Command("mount", "-o", "remount,size=256m", tmpfs).CombinedOutput(); err != nil {
		t.Fatalf("remount %s larger: %v: %s", tmpfs, err, out)
	}
	b4.Restart()
	ldWaitPartitions(t, cl, "q", 60*time.Second, "broker 4 back in every ISR", func(p kmsg.MetadataResponseTopicPartition) bool {
		return len(p.ISR) == 3
	})
	ldReadAll(t, seeds, "q", partitions, acked)
}

// ldMoved is whether Metadata shows every partition of ps led by a broker
// other than 4, without 4 in its ISR.
func ldMoved(cl *kgo.Client, topic string, ps []int32) bool {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 {
		return false
	}
	n := 0
	for _, p := range resp.Topics[0].Partitions {
		if slices.Contains(ps, p.Partition) {
			if p.Leader <= 0 || p.Leader == 4 || slices.Contains(p.ISR, 4) {
				return false
			}
			n++
		}
	}
	return n == len(ps)
}

// ldWaitPartitions waits until every partition of topic satisfies ok.
func ldWaitPartitions(t *testing.T, cl *kgo.Client, topic string, timeout time.Duration, what string, ok func(kmsg.MetadataResponseTopicPartition) bool) {
	t.Helper()
	var last []kmsg.MetadataResponseTopicPartition
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) == 0 {
			continue
		}
		last = resp.Topics[0].Partitions
		all := true
		for _, p := range last {
			all = all && ok(p)
		}
		if all {
			return
		}
	}
	var state []string
	for _, p := range last {
		state = append(state, fmt.Sprintf("%d: leader %d isr %v", p.Partition, p.Leader, p.ISR))
	}
	t.Fatalf("not %s after %v: %s", what, timeout, strings.Join(state, "; "))
}

// ldDirPartitions are broker 4's partitions of q in each of its dirs, once
// it has all of them.
func ldDirPartitions(t *testing.T, cl *kgo.Client, a, b string, partitions int) (inA, inB []int32) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if inA, inB = ldDescribeDirs(t, cl, a, b); len(inA)+len(inB) == partitions {
			return inA, inB
		}
	}
	t.Fatalf("broker 4 lists partitions %v in %s and %v in %s, want %d", inA, a, inB, b, partitions)
	return nil, nil
}

func ldDescribeDirs(t *testing.T, cl *kgo.Client, a, b string) (inA, inB []int32) {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kr, err := cl.Broker(4).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range kr.(*kmsg.DescribeLogDirsResponse).Dirs {
		for _, rt := range d.Topics {
			if rt.Topic != "q" {
				continue
			}
			for _, p := range rt.Partitions {
				switch d.Dir {
				case a:
					inA = append(inA, p.Partition)
				case b:
					inB = append(inB, p.Partition)
				}
			}
		}
	}
	return inA, inB
}

// ldReadAll reads every partition of topic from its start to its high
// watermark and fails the test for each acknowledged value missing.
func ldReadAll(t *testing.T, seeds []string, topic string, partitions int32, acked map[string]int32) {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]bool{}
	missing := func() int {
		n := 0
		for v := range acked {
			if !seen[v] {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && missing() > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cons.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			v, _, _ := strings.Cut(string(r.Value), " ")
			seen[v] = true
		})
	}
	if n := missing(); n > 0 {
		var some []string
		for v := range acked {
			if !seen[v] && len(some) < 10 {
				some = append(some, v)
			}
		}
		t.Fatalf("%d of %d acknowledged records are missing, e.g. %v", n, len(acked), some)
	}
	t.Logf("read back all %d acknowledged records", len(acked))
}

func ldScrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func ldGrep(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
