package tier_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/remotelog"
	"github.com/tributary-io/tributary/internal/testcluster"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

// outageLength is how long TestTieredHDFSOutage keeps HDFS down: the
// issue's minute under make test-long (TRIBUTARY_TEST_LONG=1), less in
// make test.
func outageLength() time.Duration {
	if os.Getenv("TRIBUTARY_TEST_LONG") != "" {
		return time.Minute
	}
	return 25 * time.Second
}

// TestTieredHDFSOutage (issue 26): a 3-node cluster tiers to an HDFS of
// its own, which is stopped for a while (outageLength) and started again
// while a producer (acks=all) goes on. During the outage: producing and a
// consumer of the recent records go on from local data; a read of the
// remote range fails with a retriable error (KAFKA_STORAGE_ERROR); no
// broker deletes a segment that is not uploaded, though local retention
// (two segments) wants to; the brokers say remote storage is failing, in
// their log and their metrics. Afterwards: the remote read succeeds,
// uploads catch up to the high watermark, and franz-go reads every
// acknowledged record from offset 0 in order, each once.
func TestTieredHDFSOutage(t *testing.T) {
	t.Parallel()
	hd := testhdfs.StartPrivate(t)
	uri := "hdfs://" + hd.NameNode + "/tmp/tiered-outage" // /tmp: writable by every user
	c := testcluster.Start(t, 3,
		"remote.log.storage.system.enable=true",
		"rsm.config.storage.uri="+uri,
		"rsm.config.storage.hdfs.user="+hd.User,
		"remote.log.manager.task.interval.ms=100",
		"log.retention.check.interval.ms=100",
		"log.segment.delete.delay.ms=0",
	)
	outage := outageLength()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute+outage)
	defer cancel()
	const topic = "tiered3" // consumeValues' topic
	const segBytes, localBytes = 16384, 32768
	adm := c.Admin()
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{
		"remote.storage.enable": ptr("true"),
		"segment.bytes":         ptr(strconv.Itoa(segBytes)),
		"local.retention.bytes": ptr(strconv.Itoa(localBytes)),
		"min.insync.replicas":   ptr("2"),
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, node := range c.Nodes {
				t.Logf("node %d log:\n%s", node.ID, lastLines(node.Log(), 40))
				t.Logf("node %d local segments (base offset: bytes): %s", node.ID, segmentSizes(filepath.Join(node.DataDir(), topic+"-0")))
			}
		}
	})

	// The producer: acks=all, idempotent (franz-go's default), some
	// 20 kB/s of 100-byte records until stopProducing.
	prod, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(2*time.Minute), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var (
		mu       sync.Mutex
		acked    = map[int]bool{}
		ackTimes []time.Time
		firstErr error
	)
	stopProducing := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		pad := strings.Repeat("x", 80)
		for i := 0; ctx.Err() == nil; i++ {
			select {
			case <-stopProducing:
				prod.Flush(ctx)
				return
			default:
			}
			prod.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%09d %s", i, pad))}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					acked[i] = true
					ackTimes = append(ackTimes, time.Now())
				} else if firstErr == nil {
					firstErr = err
				}
			})
			if i%20 == 19 {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	defer func() {
		select {
		case <-stopProducing:
		default:
			close(stopProducing)
		}
		<-produced
	}()
	ackedSince := func(from time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, at := range ackTimes {
			if !at.Before(from) {
				n++
			}
		}
		return n
	}

	fs, err := fsys.Open(uri, fsys.Options{User: hd.User})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { fs.Close() }()
	var remote string
	manifest := func() *remotelog.Manifest {
		if remote == "" {
			ents, _ := fs.ReadDir(".")
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), topic+"-") {
					remote = e.Name() + "/0"
				}
			}
			if remote == "" {
				return nil
			}
		}
		m, _ := remotelog.ReadLatest(fs, remote)
		return m
	}
	leader := c.Leaders(topic, 30*time.Second)[0]
	leaderDir := filepath.Join(c.Node(leader).DataDir(), topic+"-0")
	// Before the outage: some segments uploaded, and the leader's local
	// log past offset 0, so that offset 0 is read from HDFS.
	waitFor(t, ctx, "the first uploads and the leader's local log to start above 0", func() bool {
		m := manifest()
		segs := localLogsIfAny(leaderDir)
		return m != nil && len(m.Segments) >= 3 && len(segs) > 0 && segs[0] > 0
	})
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	topicID := md.Topics[topic].ID
	fetchCl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(leader).Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer fetchCl.Close()
	// remoteRead fetches offset 0 from the leader: records, or the
	// partition's error.
	remoteRead := func() (int, error) {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 100, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 0, 64<<10, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		rctx, rcancel := context.WithTimeout(ctx, time.Minute)
		defer rcancel()
		resp, err := fetchCl.Broker(int(leader)).Request(rctx, req)
		if err != nil {
			return 0, fmt.Errorf("request: %w", err)
		}
		fr := resp.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
			return 0, err
		}
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			return 0, fmt.Errorf("a fetch response with %d topics", len(fr.Topics))
		}
		p := fr.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return 0, err
		}
		return len(p.RecordBatches), nil
	}

	// A consumer of the recent records, from the end on: it must keep
	// reading through the outage.
	var tailOffset atomic.Int64
	tailOffset.Store(-1)
	tail, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtEnd()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer tail.Close()
	tailDone := make(chan struct{})
	tailCtx, tailStop := context.WithCancel(ctx)
	go func() {
		defer close(tailDone)
		for tailCtx.Err() == nil {
			tail.PollFetches(tailCtx).EachRecord(func(r *kgo.Record) { tailOffset.Store(r.Offset) })
		}
	}()
	defer func() { tailStop(); <-tailDone }()
	waitFor(t, ctx, "the tail consumer's first record", func() bool { return tailOffset.Load() >= 0 })

	// The outage.
	before := manifest()
	t.Logf("before the outage: uploaded end %d, leader %d's local log from %v", before.UploadedEnd(), leader, localLogsIfAny(leaderDir)[0])
	// The log checks below read only what the leader logged after the
	// outage began (and, for the recovery, after HDFS was started): a
	// transient failure before it, and its recovery, must not satisfy
	// them.
	logAtDown := len(c.Node(leader).Log())
	hd.Stop()
	down := time.Now()
	// lowest[node] is the highest local log start each broker had during
	// the outage; peak the most segments the leader held.
	lowest := map[int32]int64{}
	peak := 0
	sample := func() {
		for _, node := range c.Brokers() {
			if segs := localLogsIfAny(filepath.Join(node.DataDir(), topic+"-0")); len(segs) > 0 {
				lowest[node.ID] = max(lowest[node.ID], segs[0])
			}
		}
		peak = max(peak, len(localLogsIfAny(leaderDir)))
	}
	var readErr error
	var tailAt int64
	alarmed, metricSeen := false, false
	for time.Since(down) < outage {
		sample()
		if readErr == nil && time.Since(down) > 2*time.Second {
			// The remote range is unreachable: a retriable error,
			// never OFFSET_OUT_OF_RANGE (which resets consumers) nor
			// records from elsewhere.
			n, err := remoteRead()
			if err == nil {
				t.Logf("a fetch of offset 0 during the outage read %d batches (from the chunk cache?)", n)
			} else {
				readErr = err
				if !errors.Is(err, kerr.KafkaStorageError) || !kerr.IsRetriable(err) {
					t.Errorf("a fetch of offset 0 during the outage: %v, want the retriable KAFKA_STORAGE_ERROR", err)
				} else {
					t.Logf("a fetch of offset 0 during the outage: %v (retriable)", err)
				}
			}
		}
		if tailAt == 0 && time.Since(down) > outage/3 {
			tailAt = tailOffset.Load()
		}
		if !alarmed && strings.Contains(c.Node(leader).Log()[logAtDown:], "remote storage is failing for the partition") {
			alarmed = true
		}
		if !metricSeen && metricValue(t, c.Node(leader).AdminAddr(), "tributary_broker_remote_storage_failing_partitions") > 0 {
			metricSeen = true
		}
		time.Sleep(200 * time.Millisecond)
	}
	sample()
	tailEnd := tailOffset.Load()
	duringOutage := ackedSince(down)
	leaderBytes := dirBytes(leaderDir)
	up := time.Now()
	logAtUp := len(c.Node(leader).Log())
	hd.Start()
	started := time.Now()
	t.Logf("HDFS down for %v: %d records acknowledged meanwhile; the tail consumer went from %d to %d; the leader held up to %d segments (%d bytes at the end, local.retention.bytes %d)",
		up.Sub(down).Round(time.Second), duringOutage, tailAt, tailEnd, peak, leaderBytes, localBytes)
	if duringOutage == 0 {
		t.Errorf("no record was acknowledged while HDFS was down")
	}
	if tailEnd <= tailAt {
		t.Errorf("the tail consumer stopped during the outage: at offset %d after a third of it, %d at its end", tailAt, tailEnd)
	}
	if readErr == nil {
		t.Errorf("no fetch of the remote range failed during the outage")
	}
	if !alarmed {
		t.Errorf("the leader did not log that remote storage is failing")
	}
	if !metricSeen {
		t.Errorf("the leader's tributary_broker_remote_storage_failing_partitions stayed 0 during the outage")
	}
	// Local retention wanted to delete: the test means nothing otherwise.
	if leaderBytes < 3*localBytes {
		t.Errorf("the leader held only %d bytes at the end of the outage: local retention (%d bytes) was never tested", leaderBytes, localBytes)
	}

	// After the outage: the remote read works again.
	waitFor(t, ctx, "a fetch of offset 0 to succeed after the outage", func() bool {
		n, err := remoteRead()
		return err == nil && n > 0
	})
	t.Logf("HDFS took %v to start; the remote read worked %v after", started.Sub(up).Round(100*time.Millisecond), time.Since(started).Round(100*time.Millisecond))
	// No broker's local log started past what was remote: the remote end
	// during the outage is that of the newest manifest version written
	// before HDFS came back (none was written while it was down).
	// The test's own HDFS client failed calls during the outage, and
	// colinmarc/hdfs refuses calls for a few seconds after such failures
	// ("no available namenodes") before it dials again: ask until it does.
	var vs []remotelog.Version
	waitFor(t, ctx, "the test's HDFS client to list the manifests after the outage", func() bool {
		var err error
		vs, err = remotelog.Versions(fs, remote)
		return err == nil
	})
	var remoteEnd int64 = -1
	for _, v := range vs {
		if v.ModTime.Before(up) {
			if m, err := remotelog.ReadVersion(fs, remote, v.Seq); err == nil {
				remoteEnd = max(remoteEnd, m.UploadedEnd())
			}
		}
	}
	for id, start := range lowest {
		if start > remoteEnd {
			t.Errorf("node %d's local log started at %d during the outage, past the remote end %d: a segment was deleted before it was uploaded", id, start, remoteEnd)
		}
	}
	t.Logf("remote end during the outage %d (%d before it); local log starts during it, by node: %v", remoteEnd, before.UploadedEnd(), lowest)

	// Uploads resume and reach the high watermark, then everything
	// acknowledged reads back from offset 0, in order, once.
	waitFor(t, ctx, "records acknowledged after the outage", func() bool { return ackedSince(up) > 100 })
	close(stopProducing)
	<-produced
	mu.Lock()
	t.Logf("%d records acknowledged; first produce error: %v", len(acked), firstErr)
	mu.Unlock()
	hw := highWatermark(t, ctx, adm, topic)
	trailer := &kgo.Record{Value: []byte(strings.Repeat("t", segBytes))}
	for trailers := 0; ; trailers++ {
		if segs := localLogsIfAny(leaderDir); len(segs) > 0 && segs[len(segs)-1] >= hw {
			break
		}
		if trailers == 40 {
			t.Fatalf("the leader did not roll past the high watermark %d after %d trailer records", hw, trailers)
		}
		if err := prod.ProduceSync(ctx, trailer).FirstErr(); err != nil {
			t.Fatalf("trailer record: %v", err)
		}
	}
	waitFor(t, ctx, "uploads to reach the high watermark", func() bool {
		m := manifest()
		return m != nil && m.UploadedEnd() >= hw
	})
	m := manifest()
	checkContiguous(t, m)
	t.Logf("uploaded end %d, high watermark %d, %v after HDFS started", m.UploadedEnd(), hw, time.Since(started).Round(100*time.Millisecond))
	waitFor(t, ctx, "the leader to say remote storage answers again", func() bool {
		return strings.Contains(c.Node(leader).Log()[logAtUp:], "remote storage answers again")
	})
	waitFor(t, ctx, "every broker's failing-partitions gauge back to 0", func() bool {
		for _, node := range c.Brokers() {
			if metricValue(t, node.AdminAddr(), "tributary_broker_remote_storage_failing_partitions") != 0 {
				return false
			}
		}
		return true
	})
	values := consumeValues(t, ctx, c.Bootstrap(), hw, make(chan int64, 1))
	checkInOrder(t, "franz-go", values, acked, &mu)
	waitFor(t, ctx, "the leader to keep only the recent segments again", func() bool {
		return len(localLogsIfAny(leaderDir)) <= 2*localBytes/segBytes+3
	})
}

// metricValue is a gauge's or counter's value on a node's /metrics; -1
// when it is missing.
func metricValue(t *testing.T, admin, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}
