package registry_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// TestClusterForwarding: three brokers, each serving the registry. A write
// sent to a node that does not lead _schemas partition 0 is forwarded to
// the one that does, and every node serves it at once; then the leader is
// killed while registrations go on through the other two: every schema
// keeps one id on every node and no two schemas share one.
//
// Three brokers and a leader's death take about 50 s under -race, past
// what make test can spare: TRIBUTARY_TEST_LONG=1 (make test-long) runs
// it. Forwarding itself is in make test through TestFranzSR's second
// registry.
func TestClusterForwarding(t *testing.T) {
	if os.Getenv("TRIBUTARY_TEST_LONG") == "" {
		t.Skip("a 3-node cluster and a leader kill: TRIBUTARY_TEST_LONG=1 runs it")
	}
	t.Parallel()
	urls := map[int32]string{}
	var mu sync.Mutex
	c := testcluster.StartCustom(t, 3, func(n *testcluster.Node, cfg *testbroker.Config) {
		mu.Lock()
		defer mu.Unlock()
		urls[n.ID] = fmt.Sprintf("http://127.0.0.1:%d", testbroker.FreePort(t))
		cfg.Props = append(cfg.Props, "schema.registry.listeners="+urls[n.ID])
	})
	clients := map[int32]*sr.Client{}
	for id, u := range urls {
		waitRegistry(t, u)
		cl, err := sr.NewClient(sr.URLs(u))
		if err != nil {
			t.Fatal(err)
		}
		clients[id] = cl
	}
	ctx := context.Background()
	leader := c.Leaders("_schemas", 30*time.Second)[0]
	var others []int32
	for id := range urls {
		if id != leader {
			others = append(others, id)
		}
	}
	s := func(i int) sr.Schema {
		return sr.Schema{Schema: fmt.Sprintf(`{"type":"record","name":"R","doc":"v%d","fields":[{"name":"a","type":"int"}]}`, i)}
	}
	first, err := clients[others[0]].CreateSchema(ctx, "fwd-value", s(0))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Node(others[0]).Log(), "forwarded a write to the leader") {
		t.Fatalf("node %d (not the leader, %d) did not forward the write", others[0], leader)
	}
	// Read-your-write on the node that forwarded, and on the third.
	for _, id := range others {
		got, err := clients[id].SchemaByVersion(ctx, "fwd-value", 1)
		if err != nil || got.ID != first.ID {
			t.Fatalf("node %d right after the write: %+v %v", id, got, err)
		}
	}

	// Registrations through the two survivors while the leader dies.
	const n = 40
	ids := make([]int, n)
	var wg sync.WaitGroup
	for w, id := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 2 {
				deadline := time.Now().Add(60 * time.Second)
				for {
					got, err := clients[id].CreateSchema(ctx, fmt.Sprintf("kill-%d-value", i%4), s(i+1))
					if err == nil {
						ids[i] = got.ID
						break
					}
					if time.Now().After(deadline) {
						t.Errorf("schema %d through node %d: %v", i, id, err)
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	c.Node(leader).Kill()
	wg.Wait()
	if t.Failed() {
		for _, id := range others {
			for _, l := range strings.Split(c.Node(id).Log(), "\n") {
				if strings.Contains(l, "registry") {
					t.Logf("node %d: %.300s", id, l)
				}
			}
		}
		t.FailNow()
	}
	seen := map[int]int{first.ID: -1}
	for i, id := range ids {
		if o, dup := seen[id]; dup {
			t.Fatalf("schemas %d and %d share id %d", o, i, id)
		}
		seen[id] = i
	}
	// Both survivors agree on every subject, version and id.
	for sub := range 4 {
		subject := fmt.Sprintf("kill-%d-value", sub)
		var views []string
		for _, id := range others {
			deadline := time.Now().Add(30 * time.Second)
			for {
				all, err := clients[id].Schemas(ctx, subject)
				if err == nil && len(all) == n/4 {
					views = append(views, fmt.Sprint(all))
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("node %d serves %d versions of %s: %v", id, len(all), subject, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		if views[0] != views[1] {
			t.Fatalf("%s differs between nodes:\n%s\n%s", subject, views[0], views[1])
		}
	}
	for i, id := range ids {
		got, err := clients[others[0]].SchemaByID(ctx, id)
		if err != nil || got.Schema != s(i+1).Schema {
			t.Fatalf("id %d: %+v %v, want schema %d", id, got, err, i+1)
		}
	}
}
