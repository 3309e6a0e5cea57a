package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// Strangers on a SASL listener that declare the largest frame allowed
// before authentication (sasl.server.max.receive.size, 512 KiB) and then
// send nothing must not take the request pool (queued.max.request.bytes)
// from authenticated clients: a producer's large requests on another
// listener go through at once, not after the strangers' body deadline.
func TestPreAuthFramesOutsideRequestPool(t *testing.T) {
	t.Parallel()
	const pool = 1 << 20
	ports := [2]int{testbroker.FreePort(t), testbroker.FreePort(t)}
	plain, sasl := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	testbroker.StartConfig(t, testbroker.Config{
		Dir: t.TempDir(), Port: ports[0],
		Listeners: fmt.Sprintf("PLAINTEXT://%s,SASL_PLAINTEXT://%s", plain, sasl),
		Props: []string{
			fmt.Sprintf("queued.max.request.bytes=%d", pool),
			fmt.Sprintf("socket.request.max.bytes=%d", pool),
			"listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-256",
		},
	})
	// Eight strangers declare 4 MiB between them, four times the pool.
	for range 8 {
		nc, err := net.Dial("tcp", sasl)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := nc.Write(binary.BigEndian.AppendUint32(nil, 512<<10)); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(plain), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(pool))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	value := bytes.Repeat([]byte("x"), 600<<10)
	began := time.Now()
	for i := range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "beside-strangers", Value: value}).FirstErr(); err != nil {
			t.Fatalf("large produce %d with strangers holding frames open: %v after %v", i, err, time.Since(began))
		}
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("five 600 KiB produces took %v beside stalled unauthenticated frames", took)
	}
}
