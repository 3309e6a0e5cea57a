package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
)

// errNoController is returned while no controller is active or reachable.
var errNoController = errors.New("broker/server: no active controller is reachable")

// toController sends a request to the active controller over the Kafka
// protocol, on its inter-broker listener, and decodes the answer. It is how
// a broker that is not the active controller registers, heartbeats, creates
// the topics it needs and allocates producer ids: a connection per request,
// since these are rare.
func (s *Server) toController(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	img := s.ctrl.Image()
	b, ok := img.Brokers[img.ControllerID]
	if img.ControllerID < 0 || img.ControllerID == s.nodeID || !ok {
		// This node's own image may lag its Raft state for a moment; never
		// send to ourselves what we were not able to do.
		return nil, errNoController
	}
	addr, err := s.interBrokerAddr(b)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("broker/server: controller %d at %s: %w", b.ID, addr, err)
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	if req.MaxVersion() < req.GetVersion() {
		req.SetVersion(req.MaxVersion())
	}
	if _, err := nc.Write(frameRequest(req, s.nodeID)); err != nil {
		return nil, err
	}
	r := bufio.NewReader(nc)
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, fmt.Errorf("broker/server: controller %d: %w", b.ID, err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body = body[4:] // correlation id
	if resp.IsFlexible() {
		body = body[1:] // no tagged fields in the header
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("broker/server: controller %d: %w", b.ID, err)
	}
	return resp, nil
}

// frameRequest encodes req with a request header (v2 when flexible).
func frameRequest(req kmsg.Request, nodeID int32) []byte {
	clientID := fmt.Sprintf("tributary-broker-%d", nodeID)
	buf := make([]byte, 4, 256)
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = binary.BigEndian.AppendUint32(buf, 1)
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(clientID)))
	buf = append(buf, clientID...)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// interBrokerAddr is where brokers reach b: its inter.broker.listener.name
// listener, else the one named like this node's first listener.
func (s *Server) interBrokerAddr(b cluster.Broker) (string, error) {
	want := s.cfg.String("inter.broker.listener.name")
	if want == "" {
		if own, ok := s.ctrl.Image().Brokers[s.nodeID]; ok && len(own.Listeners) > 0 {
			want = own.Listeners[0].Name
		} else if ls, err := s.cfg.AdvertisedListeners(); err == nil && len(ls) > 0 {
			want = ls[0].Name
		}
	}
	for _, l := range b.Listeners {
		if l.Name == want {
			return net.JoinHostPort(l.Host, fmt.Sprint(l.Port)), nil
		}
	}
	return "", fmt.Errorf("broker/server: broker %d has no %s listener", b.ID, want)
}
