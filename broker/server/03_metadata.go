package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
)

// authorizedOpsOmitted is Kafka's "not requested" value for
// authorized-operations fields.
const authorizedOpsOmitted = -2147483648

func (s *Server) handleMetadata(c *conn, req *kmsg.MetadataRequest) (*kmsg.MetadataResponse, error) {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	img := s.ctrl.Image()
	resp.Brokers = s.metadataBrokers(img, c.listener)
	resp.ClusterID = &img.ClusterID
	resp.ControllerID = s.controllerIDForClients(img)
	resp.AuthorizedOperations = authorizedOpsOmitted

	// v0 asks for every topic with an empty list; v1+ with a null one.
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, name := range img.TopicNames() {
			resp.Topics = append(resp.Topics, metadataTopic(img, img.Topics[name], req.IncludeTopicAuthorizedOperations))
		}
		return resp, nil
	}
	autoCreate := s.cfg.Bool("auto.create.topics.enable") && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, rt := range req.Topics {
		var t *cluster.Topic
		var name string
		switch {
		case rt.Topic != nil:
			name = *rt.Topic
			t = img.Topics[name]
		case rt.TopicID != [16]byte{}:
			t = img.ByID[cluster.TopicID(rt.TopicID)]
		}
		if t == nil && autoCreate && name != "" {
			created, err := s.autoCreate(name)
			if err != nil {
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic, mt.ErrorCode = &name, kafkaCode(err)
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			t = created
		}
		if t == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			if name != "" {
				mt.Topic, mt.ErrorCode = &name, kerr.UnknownTopicOrPartition.Code
			} else {
				mt.ErrorCode = kerr.UnknownTopicID.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, metadataTopic(img, t, req.IncludeTopicAuthorizedOperations))
	}
	return resp, nil
}

// autoCreate creates a topic a client asked about, with the broker defaults.
func (s *Server) autoCreate(name string) (*cluster.Topic, error) {
	t, err := s.ctrl.CreateTopic(cluster.TopicSpec{Name: name, Partitions: -1, ReplicationFactor: -1}, false)
	if ce, ok := cluster.IsError(err); ok && ce.Code == kerr.TopicAlreadyExists {
		// Another connection created it first.
		return s.ctrl.Image().Topics[name], nil
	}
	if err == nil {
		s.logger.Info("auto-created topic", "topic", name, "partitions", len(t.Partitions))
	}
	return t, err
}

// metadataBrokers lists each live broker at its endpoint for the listener
// the client connected through, as Kafka does, so that clients stay on the
// network they came in on.
func (s *Server) metadataBrokers(img *cluster.Image, listener string) []kmsg.MetadataResponseBroker {
	var out []kmsg.MetadataResponseBroker
	for _, b := range img.LiveBrokers() {
		for _, l := range b.Listeners {
			if l.Name != listener {
				continue
			}
			mb := kmsg.NewMetadataResponseBroker()
			mb.NodeID, mb.Host, mb.Port = b.ID, l.Host, int32(l.Port)
			if b.Rack != "" {
				rack := b.Rack
				mb.Rack = &rack
			}
			out = append(out, mb)
		}
	}
	return out
}

func metadataTopic(img *cluster.Image, t *cluster.Topic, authorizedOps bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic, mt.TopicID, mt.IsInternal = &name, t.ID, t.Internal()
	mt.AuthorizedOperations = authorizedOpsOmitted
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.LeaderEpoch = p.Index, p.Leader, p.LeaderEpoch
		mp.Replicas, mp.ISR, mp.OfflineReplicas = p.Replicas, p.ISR, img.OfflineReplicas(p)
		if p.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
