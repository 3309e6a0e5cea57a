package cluster

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// remote is whether a change must go to another node, the active controller.
func (c *Controller) remote() bool {
	return c.q != nil && !c.IsActive() && c.forward != nil
}

// createTopicRemote asks the active controller to create a topic, then
// waits until the quorum brought the topic here.
func (c *Controller) createTopicRemote(spec TopicSpec) (*Topic, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = spec.Name, spec.Partitions, spec.ReplicationFactor
	if rt.NumPartitions == 0 {
		rt.NumPartitions = -1
	}
	if rt.ReplicationFactor == 0 {
		rt.ReplicationFactor = -1
	}
	for k, v := range spec.Configs {
		v := v
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, &v
		rt.Configs = append(rt.Configs, cfg)
	}
	for i, replicas := range spec.Assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := c.forward(req)
	if err != nil {
		return nil, errorf(kerr.NotController, "%v", err)
	}
	st := resp.(*kmsg.CreateTopicsResponse).Topics[0]
	if st.ErrorCode != 0 {
		msg := kerr.ErrorForCode(st.ErrorCode).Error()
		if st.ErrorMessage != nil {
			msg = *st.ErrorMessage
		}
		return nil, errorf(kerr.ErrorForCode(st.ErrorCode).(*kerr.Error), "%s", msg)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if t, ok := c.Image().Topics[spec.Name]; ok {
			return t, nil
		}
	}
	return nil, errorf(kerr.RequestTimedOut, "topic %s was created but has not reached this node yet", spec.Name)
}

// allocateRemote asks the active controller for a block of producer ids.
func (c *Controller) allocateRemote() (int64, error) {
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = c.nodeID, -1 // the forwarder sets the broker's epoch
	resp, err := c.forward(req)
	if err != nil {
		return 0, errorf(kerr.NotController, "%v", err)
	}
	r := resp.(*kmsg.AllocateProducerIDsResponse)
	if r.ErrorCode != 0 {
		return 0, kerr.ErrorForCode(r.ErrorCode)
	}
	return r.ProducerIDStart, nil
}
