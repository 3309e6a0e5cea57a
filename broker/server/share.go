package server

import (
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/share"
)

// startShares starts the share-group manager (broker/share), its state
// journal in the first log dir.
func (s *Server) startShares(logDir string) error {
	m, err := share.NewManager(share.ConfigFrom(s.cfg), filepath.Clean(logDir), s.logger)
	if err != nil {
		return err
	}
	s.shares = m
	m.Start()
	return nil
}

// shareTopics is the cluster's topics as the share assignor sees them.
func shareTopics(img *cluster.Image) map[string]share.TopicMeta {
	out := make(map[string]share.TopicMeta, len(img.Topics))
	for name, t := range img.Topics {
		if !t.Internal() {
			out[name] = share.TopicMeta{ID: [16]byte(t.ID), Partitions: int32(len(t.Partitions))}
		}
	}
	return out
}

// topicNames maps topic ids to names.
func topicNames(img *cluster.Image) map[[16]byte]string {
	out := make(map[[16]byte]string, len(img.Topics))
	for name, t := range img.Topics {
		out[[16]byte(t.ID)] = name
	}
	return out
}

// openedShareSession notes a share session this connection opened.
func (c *conn) openedShareSession(group, member string) {
	if c.shareSessions == nil {
		c.shareSessions = map[[2]string]struct{}{}
	}
	c.shareSessions[[2]string{group, member}] = struct{}{}
}

// closeShareSessions releases the records of the share sessions this
// connection opened and still owns (a client that went away without
// closing them, or a consumer that crashed).
func (c *conn) closeShareSessions() {
	if c.s.shares == nil {
		return
	}
	for k := range c.shareSessions {
		c.s.shares.CloseSessionOf(k[0], k[1], c)
	}
}

// alterShareGroupConfigs serves IncrementalAlterConfigs on a GROUP
// resource for the one group config share groups read here,
// share.auto.offset.reset (latest or earliest). Kafka keeps group configs
// in the metadata log; Tributary keeps this one with the share-group
// state of the broker that receives it (docs/broker.md).
func (s *Server) alterShareGroupConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if rr.ResourceName == "" {
		return apiErrorf(kerr.InvalidRequest, "a group resource needs a group id")
	}
	reset := ""
	for _, cfg := range rr.Configs {
		if cfg.Name != "share.auto.offset.reset" {
			return apiErrorf(kerr.InvalidConfig, "Unknown group config name: %s", cfg.Name)
		}
		switch cfg.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if v := *cfg.Value; v != "latest" && v != "earliest" {
				return apiErrorf(kerr.InvalidConfig, "Invalid value %s for configuration share.auto.offset.reset: must be latest or earliest", v)
			}
			reset = *cfg.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			reset = "latest"
		default:
			return apiErrorf(kerr.InvalidConfig, "share.auto.offset.reset is not a list: only SET and DELETE apply")
		}
	}
	if validateOnly || reset == "" {
		return nil
	}
	s.shares.SetAutoOffsetReset(rr.ResourceName, reset)
	return nil
}
