package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/config"
)

// TestOpenListenerMetric: a PLAINTEXT listener on every interface with no
// authorizer is counted in tributary_broker_open_listeners; with an
// authorizer, or on loopback, it is not, unless User:ANONYMOUS is a super
// user.
func TestOpenListenerMetric(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		prop map[string]string
		want float64
	}{
		{"open", map[string]string{"listeners": "PLAINTEXT://0.0.0.0:0"}, 1},
		{"authorizer", map[string]string{"listeners": "PLAINTEXT://0.0.0.0:0", "authorizer.class.name": config.StandardAuthorizer}, 0},
		{"loopback", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0"}, 0},
		{"anonymous super user", map[string]string{"listeners": "PLAINTEXT://0.0.0.0:0", "authorizer.class.name": config.StandardAuthorizer, "super.users": "User:admin;User:ANONYMOUS"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := map[string]string{"log.dirs": t.TempDir()}
			for k, v := range tc.prop {
				all[k] = v
			}
			cfg, err := config.ParseBroker(all)
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			s := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})), Registry: reg})
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			defer shutdown(t, s)
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := 0.0
			for _, mf := range mfs {
				if mf.GetName() == "tributary_broker_open_listeners" {
					for _, m := range mf.GetMetric() {
						got += m.GetGauge().GetValue()
					}
				}
			}
			if got != tc.want {
				t.Fatalf("tributary_broker_open_listeners = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAclsSurviveRestart: ACLs are metadata records, replayed at start.
func TestAclsSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	props := map[string]string{"authorizer.class.name": config.StandardAuthorizer, "super.users": "User:ANONYMOUS"}
	s := startBrokerIn(t, dir, props)
	describe := func(s *Server) *kmsg.DescribeACLsResponse {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr("PLAINTEXT")))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for _, name := range []string{"a", "b"} {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, name, kmsg.ACLResourcePatternTypePrefixed
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(context.Background(), cl)
	cl.Close()
	if err != nil || resp.Results[0].ErrorCode != 0 || resp.Results[1].ErrorCode != 0 {
		t.Fatalf("CreateAcls: %+v %v", resp, err)
	}
	if d := describe(s); len(d.Resources) != 2 {
		t.Fatalf("before restart: %+v", d.Resources)
	}
	shutdown(t, s)
	s = startBrokerIn(t, dir, props)
	defer shutdown(t, s)
	d := describe(s)
	if len(d.Resources) != 2 || d.Resources[0].ResourcePatternType != kmsg.ACLResourcePatternTypePrefixed || d.Resources[0].ACLs[0].Principal != "User:alice" {
		t.Fatalf("after restart: %+v", d.Resources)
	}
}

// TestRefusedAcksZeroProduceCloses: a Produce with acks=0 that the
// authorizer refuses closes the connection, as Kafka does, since the
// producer hears of the refusal no other way; an allowed one does not.
func TestRefusedAcksZeroProduceCloses(t *testing.T) {
	t.Parallel()
	s := startBroker(t, map[string]string{"authorizer.class.name": config.StandardAuthorizer, "allow.everyone.if.no.acl.found": "true"})
	for _, name := range []string{"open", "closed"} {
		if _, err := s.ctrl.CreateTopic(topicSpec(name), false); err != nil {
			t.Fatal(err)
		}
	}
	if errs, _, err := s.ctrl.CreateAcls([]acl.Binding{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "closed", PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:*", Host: "*", Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeDeny}}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	for _, tc := range []struct {
		topic  string
		closed bool
	}{{"open", false}, {"closed", true}} {
		nc, err := net.Dial("tcp", s.Addr("PLAINTEXT"))
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 0, 5000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: tc.topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: testBatch(t, []byte("v"))}}}}
		nc.Write(frame(req, 9, nil))
		nc.Write(frame(kmsg.NewPtrApiVersionsRequest(), 3, nil))
		var sz [4]byte
		_, err = io.ReadFull(nc, sz[:])
		nc.Close()
		if closed := errors.Is(err, io.EOF); closed != tc.closed || (!closed && err != nil) {
			t.Errorf("acks=0 to %s: the next request's answer: %v, want closed %v", tc.topic, err, tc.closed)
		}
	}
}
