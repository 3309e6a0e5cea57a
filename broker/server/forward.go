package server

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
)

// Admin requests that change the metadata are the active controller's to
// decide. A broker that is not the active controller forwards them to it,
// on its controller listener, and relays the answer (KIP-590, without the
// envelope: there are no principals to carry yet). Clients may then send
// them to any broker, which is what Metadata's controller id invites when
// the active controller is not a broker they can reach.
var forwardedAPIs = map[int16]bool{
	kmsg.CreateTopics.Int16():               true,
	kmsg.DeleteTopics.Int16():               true,
	kmsg.CreatePartitions.Int16():           true,
	kmsg.AlterConfigs.Int16():               true,
	kmsg.IncrementalAlterConfigs.Int16():    true,
	kmsg.ElectLeaders.Int16():               true,
	kmsg.AlterPartitionAssignments.Int16():  true,
	kmsg.ListPartitionReassignments.Int16(): true,
	kmsg.UnregisterBroker.Int16():           true,
}

// controllerAPIs are what a controller listener serves: the brokers'
// calls to the active controller and the forwarded admin requests.
var controllerAPIs = map[int16]bool{
	kmsg.ApiVersions.Int16():         true,
	kmsg.BrokerRegistration.Int16():  true,
	kmsg.BrokerHeartbeat.Int16():     true,
	kmsg.AlterPartition.Int16():      true,
	kmsg.AllocateProducerIDs.Int16(): true,
	kmsg.DescribeQuorum.Int16():      true,
}

func init() {
	for k := range forwardedAPIs {
		controllerAPIs[k] = true
	}
}

// forwards is whether c's request goes to the active controller. Requests
// that came in on a controller listener never go further, so a forwarded
// request that meets a controller that just lost its leadership gets
// NOT_CONTROLLER instead of travelling on.
func (s *Server) forwards(c *conn, key int16) bool {
	return forwardedAPIs[key] && s.ctrl.Quorum() && !s.controllerListeners[c.listener] && !s.ctrl.IsActive()
}

// forward sends req to the active controller and returns its answer, once
// this node's metadata shows what it changed, so that the client's next
// request here sees it. Without a reachable controller the request is
// served here, which answers NOT_CONTROLLER where it must.
func (s *Server) forward(c *conn, req kmsg.Request, local handler) (kmsg.Response, error) {
	fwd, merge := s.preprocessForward(req)
	if fwd == nil {
		return merge(nil), nil
	}
	resp, err := s.toController(context.Background(), fwd)
	if err != nil {
		c.logger.Debug("forwarding to the controller", "api", kmsg.NameForKey(req.Key()), "err", err)
		return local.fn(c, req)
	}
	s.metrics.forwarded.WithLabelValues(kmsg.NameForKey(req.Key())).Inc()
	s.awaitForwarded(fwd, resp)
	return merge(resp), nil
}

// preprocessForward does the checks only the receiving broker can do
// before a request goes to the controller: a BROKER resource of an alter
// must name this broker (or be "", the cluster default), and the
// controller, which sees the request come from a broker, cannot tell which
// broker the client meant. Those resources are answered here with the
// error, the rest are forwarded (fwd, nil when none is left) and merge puts
// the answers back in the request's order, as Kafka's
// ConfigAdminManager.preprocess and reassemble*Response do.
func (s *Server) preprocessForward(req kmsg.Request) (fwd kmsg.Request, merge func(kmsg.Response) kmsg.Response) {
	badBroker := func(typ kmsg.ConfigResourceType, name string) error {
		if typ != kmsg.ConfigResourceTypeBroker || name == "" {
			return nil
		}
		return s.checkBrokerResource(name)
	}
	switch q := req.(type) {
	case *kmsg.IncrementalAlterConfigsRequest:
		kept, errs := splitResources(q.Resources, func(rr kmsg.IncrementalAlterConfigsRequestResource) error {
			return badBroker(rr.ResourceType, rr.ResourceName)
		})
		if len(kept) == len(q.Resources) {
			break
		}
		f := *q
		f.Resources = kept
		return forwardOrNil(&f, len(kept)), func(r kmsg.Response) kmsg.Response {
			out := q.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
			var got []kmsg.IncrementalAlterConfigsResponseResource
			if r != nil {
				fr := r.(*kmsg.IncrementalAlterConfigsResponse)
				out.ThrottleMillis, got = fr.ThrottleMillis, fr.Resources
			}
			out.Resources = mergeResources(q.Resources, errs, got, func(rr kmsg.IncrementalAlterConfigsRequestResource, code int16, msg *string) kmsg.IncrementalAlterConfigsResponseResource {
				sr := kmsg.NewIncrementalAlterConfigsResponseResource()
				sr.ResourceType, sr.ResourceName, sr.ErrorCode, sr.ErrorMessage = rr.ResourceType, rr.ResourceName, code, msg
				return sr
			})
			return out
		}
	case *kmsg.AlterConfigsRequest:
		kept, errs := splitResources(q.Resources, func(rr kmsg.AlterConfigsRequestResource) error {
			return badBroker(rr.ResourceType, rr.ResourceName)
		})
		if len(kept) == len(q.Resources) {
			break
		}
		f := *q
		f.Resources = kept
		return forwardOrNil(&f, len(kept)), func(r kmsg.Response) kmsg.Response {
			out := q.ResponseKind().(*kmsg.AlterConfigsResponse)
			var got []kmsg.AlterConfigsResponseResource
			if r != nil {
				fr := r.(*kmsg.AlterConfigsResponse)
				out.ThrottleMillis, got = fr.ThrottleMillis, fr.Resources
			}
			out.Resources = mergeResources(q.Resources, errs, got, func(rr kmsg.AlterConfigsRequestResource, code int16, msg *string) kmsg.AlterConfigsResponseResource {
				sr := kmsg.NewAlterConfigsResponseResource()
				sr.ResourceType, sr.ResourceName, sr.ErrorCode, sr.ErrorMessage = rr.ResourceType, rr.ResourceName, code, msg
				return sr
			})
			return out
		}
	}
	return req, func(r kmsg.Response) kmsg.Response { return r }
}

// splitResources keeps the resources bad refuses nothing of, and says why
// each other one is refused (errs by the request's index).
func splitResources[R any](in []R, bad func(R) error) (kept []R, errs []error) {
	errs = make([]error, len(in))
	for i, r := range in {
		if errs[i] = bad(r); errs[i] == nil {
			kept = append(kept, r)
		}
	}
	return kept, errs
}

// mergeResources answers every resource of the request in its order: the
// refused ones with their error, the others with the controller's answers
// to what was forwarded, in turn.
func mergeResources[RQ, RS any](in []RQ, errs []error, got []RS, answer func(rq RQ, code int16, msg *string) RS) []RS {
	out := make([]RS, 0, len(in))
	for i, rq := range in {
		switch {
		case errs[i] != nil:
			out = append(out, answer(rq, kafkaCode(errs[i]), adminMessage(errs[i])))
		case len(got) > 0:
			out, got = append(out, got[0]), got[1:]
		default: // the controller answered fewer than it was asked
			out = append(out, answer(rq, kerr.UnknownServerError.Code, nil))
		}
	}
	return out
}

// forwardOrNil is f, or nil when nothing of the request is left to forward.
func forwardOrNil(f kmsg.Request, n int) kmsg.Request {
	if n == 0 {
		return nil
	}
	return f
}

// forwardedVisible is how long a forwarded change may take to reach this
// node's metadata before the answer goes out anyway.
const forwardedVisible = 10 * time.Second

// awaitForwarded waits until the topics a forwarded request created,
// deleted or grew, and the configs it set or removed, look that way here.
func (s *Server) awaitForwarded(req kmsg.Request, resp kmsg.Response) {
	var done func(*cluster.Image) bool
	switch r := resp.(type) {
	case *kmsg.IncrementalAlterConfigsResponse:
		q := req.(*kmsg.IncrementalAlterConfigsRequest)
		if q.ValidateOnly {
			return
		}
		want := map[configResource][]configWant{}
		for _, rr := range q.Resources {
			for _, c := range rr.Configs {
				switch c.Op {
				case kmsg.IncrementalAlterConfigOpSet:
					want[configResource{rr.ResourceType, rr.ResourceName}] = append(want[configResource{rr.ResourceType, rr.ResourceName}], configWant{c.Name, c.Value})
				case kmsg.IncrementalAlterConfigOpDelete:
					want[configResource{rr.ResourceType, rr.ResourceName}] = append(want[configResource{rr.ResourceType, rr.ResourceName}], configWant{c.Name, nil})
				}
			}
		}
		for _, rr := range r.Resources {
			if rr.ErrorCode != 0 {
				delete(want, configResource{rr.ResourceType, rr.ResourceName})
			}
		}
		done = func(img *cluster.Image) bool { return configsLookSo(img, want) }
	case *kmsg.AlterConfigsResponse:
		q := req.(*kmsg.AlterConfigsRequest)
		if q.ValidateOnly {
			return
		}
		want := map[configResource][]configWant{}
		for _, rr := range q.Resources {
			for _, c := range rr.Configs {
				want[configResource{rr.ResourceType, rr.ResourceName}] = append(want[configResource{rr.ResourceType, rr.ResourceName}], configWant{c.Name, c.Value})
			}
		}
		for _, rr := range r.Resources {
			if rr.ErrorCode != 0 {
				delete(want, configResource{rr.ResourceType, rr.ResourceName})
			}
		}
		done = func(img *cluster.Image) bool { return configsLookSo(img, want) }
	case *kmsg.CreateTopicsResponse:
		done = func(img *cluster.Image) bool {
			for _, t := range r.Topics {
				if _, ok := img.Topics[t.Topic]; t.ErrorCode == 0 && !ok {
					return false
				}
			}
			return true
		}
	case *kmsg.DeleteTopicsResponse:
		done = func(img *cluster.Image) bool {
			for _, t := range r.Topics {
				if t.Topic == nil {
					continue
				}
				if _, ok := img.Topics[*t.Topic]; t.ErrorCode == 0 && ok {
					return false
				}
			}
			return true
		}
	default:
		return
	}
	for deadline := time.Now().Add(forwardedVisible); !done(s.ctrl.Image()) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

// controllerIDForClients is the controller id Metadata and DescribeCluster
// give: the active controller when it is a live broker, which clients can
// reach, otherwise this broker, which forwards (Kafka gives a random live
// broker).
func (s *Server) controllerIDForClients(img *cluster.Image) int32 {
	if b, ok := img.Brokers[img.ControllerID]; ok && !b.Fenced {
		return img.ControllerID
	}
	if s.broker && img.ControllerID >= 0 {
		return s.nodeID
	}
	return img.ControllerID
}

// configWant is a config a forwarded alter set (value) or removed (nil).
type configWant struct {
	name  string
	value *string
}

// configsLookSo reports whether img holds the topic and broker configs
// wanted. A topic that is gone has nothing more to wait for.
func configsLookSo(img *cluster.Image, want map[configResource][]configWant) bool {
	for r, ws := range want {
		var have map[string]string
		switch r.typ {
		case kmsg.ConfigResourceTypeTopic:
			t, ok := img.Topics[r.name]
			if !ok {
				continue
			}
			have = t.Configs
		case kmsg.ConfigResourceTypeBroker:
			have = img.BrokerConfigs[r.name]
		default:
			continue
		}
		for _, w := range ws {
			v, ok := have[w.name]
			if w.value == nil && ok || w.value != nil && (!ok || v != *w.value) {
				return false
			}
		}
	}
	return true
}
