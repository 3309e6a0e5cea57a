package server_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// TestScramUserOnEveryBroker: a SCRAM user created through one broker of a
// three-node cluster authenticates on every broker, at the first attempt,
// as soon as AlterUserScramCredentials returns; a deleted one is refused
// everywhere as soon as its call returns.
func TestScramUserOnEveryBroker(t *testing.T) {
	t.Parallel()
	start := time.Now()
	var mu sync.Mutex
	sasl := map[int32]string{}
	c := testcluster.StartCustom(t, 3, func(n *testcluster.Node, cfg *testbroker.Config) {
		port := testbroker.FreePort(t)
		mu.Lock()
		sasl[n.ID] = fmt.Sprintf("127.0.0.1:%d", port)
		mu.Unlock()
		cfg.Listeners += fmt.Sprintf(",SASL_PLAINTEXT://127.0.0.1:%d", port)
		cfg.Props = append(cfg.Props, "inter.broker.listener.name=PLAINTEXT")
	})
	t.Logf("cluster started after %v", time.Since(start))
	ctx := context.Background()
	auth := func(id int32, user, pass string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(sasl[id]), kgo.RequestRetries(0),
			kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	for round, via := range []int32{2, 3} {
		user := fmt.Sprintf("user-%d", round)
		adm := kadm.NewClient(mustClient(t, c.Node(via).Addr()))
		began := time.Now()
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "pw"}})
		if err == nil {
			err = res[user].Err
		}
		if err != nil {
			t.Fatalf("creating %s through broker %d: %v", user, via, err)
		}
		t.Logf("AlterUserScramCredentials through broker %d: %v", via, time.Since(began))
		for id := int32(1); id <= 3; id++ {
			if err := auth(id, user, "pw"); err != nil {
				t.Errorf("%s created through broker %d does not authenticate on broker %d at once: %v", user, via, id, err)
			}
		}
		res, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: user, Mechanism: kadm.ScramSha512}}, nil)
		if err == nil {
			err = res[user].Err
		}
		if err != nil {
			t.Fatalf("deleting %s: %v", user, err)
		}
		for id := int32(1); id <= 3; id++ {
			if err := auth(id, user, "pw"); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Errorf("%s deleted through broker %d still authenticates on broker %d: %v", user, via, id, err)
			}
		}
	}
	t.Logf("took %v", time.Since(start))
}

func mustClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
