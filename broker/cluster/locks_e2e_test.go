package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/tributary-io/tributary/internal/testcluster"
)

// TestCommitWaitingForISRDoesNotBlockOtherGroups: a commit waits for the
// ISR (acks=all) of its __consumer_offsets partition; with one follower
// paused that takes seconds (until the controller fences it). Meanwhile the
// same coordinator answers another group's OffsetFetch at once: it does
// not hold its lock across the wait (issue 20).
func TestCommitWaitingForISRDoesNotBlockOtherGroups(t *testing.T) {
	c := testcluster.Start(t, 3, "offsets.topic.replication.factor=3")
	ctrl := c.Controller(15 * time.Second)
	adm := c.Admin()
	waitBrokers(t, adm, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "q"); err != nil {
		t.Fatal(err)
	}
	c.Leaders("q", 10*time.Second)
	// Two groups coordinated by a node that is not the controller; the
	// third node, a follower of every __consumer_offsets partition, is the
	// one paused.
	var names []string
	for i := range 300 {
		names = append(names, fmt.Sprintf("g-%d", i))
	}
	var coord, paused int32 = -1, -1
	byNode := map[int32][]string{}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		found := adm.FindGroupCoordinators(ctx, names...)
		ok := true
		for _, r := range found {
			if r.Err != nil {
				ok = false
				break
			}
			byNode[r.NodeID] = append(byNode[r.NodeID], r.Name)
		}
		if ok {
			break
		}
		clear(byNode)
		if time.Now().After(deadline) {
			t.Fatal("no coordinators found within 30 s")
		}
	}
	for id := int32(1); id <= 3; id++ {
		if id != ctrl && len(byNode[id]) >= 2 {
			coord = id
		}
	}
	for id := int32(1); id <= 3; id++ {
		if id != ctrl && id != coord {
			paused = id
		}
	}
	if coord < 0 || paused < 0 {
		t.Fatalf("no node other than the controller %d coordinates two of 300 groups: %v", ctrl, byNode)
	}
	waiting, other := byNode[coord][0], byNode[coord][1]
	client := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.RequestRetries(0), kgo.MaxVersions(commitsByName()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	commit := func(cl *kgo.Client, group string, offset int64) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "q"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		// Straight to the coordinator: a client's coordinator lookup could
		// go to the paused node and time the client out instead.
		r, err := cl.Broker(int(coord)).Request(ctx, req)
		if err != nil {
			return err
		}
		resp := r.(*kmsg.OffsetCommitResponse)
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	committer, fetcher := client(), client()
	fetch := func(group string) (time.Duration, error) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = group // up to v7
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = group // v8 and later
		req.Groups = append(req.Groups, rg)
		t0 := time.Now()
		r, err := fetcher.Broker(int(coord)).Request(ctx, req)
		took := time.Since(t0)
		if err != nil {
			return took, err
		}
		resp := r.(*kmsg.OffsetFetchResponse)
		code := resp.ErrorCode
		for _, g := range resp.Groups {
			if g.ErrorCode != 0 {
				code = g.ErrorCode
			}
		}
		return took, kerr.ErrorForCode(code)
	}
	// Both groups exist and both clients know their coordinator.
	for _, g := range []string{waiting, other} {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			err := commit(committer, g, 1)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("commit %s before the pause: %v", g, err)
			}
		}
		if _, err := fetch(g); err != nil {
			t.Fatal(err)
		}
	}

	if err := c.Node(paused).Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer c.Node(paused).Signal(syscall.SIGCONT)
	type result struct {
		took time.Duration
		err  error
	}
	committed := make(chan result, 1)
	start := time.Now()
	go func() {
		err := commit(committer, waiting, 2)
		committed <- result{time.Since(start), err}
	}()
	time.Sleep(300 * time.Millisecond)
	fetchTook, err := fetch(other)
	if err != nil {
		t.Fatalf("OffsetFetch of %s: %v", other, err)
	}
	r := <-committed
	t.Logf("commit of %s with node %d paused: %v (%v); OffsetFetch of %s meanwhile: %v", waiting, paused, r.took, r.err, other, fetchTook)
	if r.took < time.Second {
		t.Fatalf("the commit did not wait for the paused follower (took %v): the test proves nothing", r.took)
	}
	if fetchTook > 500*time.Millisecond {
		t.Errorf("OffsetFetch of another group took %v while a commit waited for the ISR: the coordinator's lock is held across the wait", fetchTook)
	}
}

// commitsByName caps OffsetCommit and OffsetFetch at v9: the requests these
// tests build name their topic, and v10 names topics by id only.
func commitsByName() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	v.SetMaxKeyVersion(kmsg.OffsetFetch.Int16(), 9)
	return v
}
