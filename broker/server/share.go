package server

import (
	"time"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/share"
)

// startShares starts the share-group manager (broker/share) with its
// state in __share_group_state (share_state.go).
func (s *Server) startShares() error {
	s.shareState = newShareState(s)
	s.shareState.start()
	m, err := share.NewManager(share.ConfigFrom(s.cfg), s.shareState, s.logger)
	if err != nil {
		return err
	}
	s.shares = m
	// The coordinator initializes a group's share partitions before it
	// assigns them; leaders refuse the others (broker/share/init.go).
	m.SetInitializer(s.shareState.InitializeNew)
	m.SetSink(shareSink{s.groups}, func(id string) int32 {
		// As the coordinator counts them: the topic's partitions, or the
		// configured number before it exists.
		n := int32(s.cfg.Int("offsets.topic.num.partitions"))
		if t, ok := s.ctrl.Image().Topics[group.OffsetsTopic]; ok && len(t.Partitions) > 0 {
			n = int32(len(t.Partitions))
		}
		return group.PartitionFor(id, n)
	})
	s.groups.SetShareSink(shareLoader{s})
	if beforeGroupSubscribe != nil {
		beforeGroupSubscribe(s)
	}
	// Subscribe first, then read the image: a group-config change
	// published between a read and the subscription would otherwise be
	// missed until the next change (Controller.publish calls only the
	// subscribers it has then, and the groups read the settings set here,
	// not the image).
	s.ctrl.Subscribe(func(prev, next *cluster.Image) {
		if prev == nil || next == nil {
			return
		}
		if !sameGroupConfigs(prev.GroupConfigs, next.GroupConfigs) {
			s.setGroupSettings()
		}
		// Only a topic seen in one image and gone from the next was
		// deleted: an image not yet caught up must not drop state.
		var gone map[[16]byte]bool
		for id := range prev.ByID {
			if _, ok := next.ByID[id]; !ok {
				if gone == nil {
					gone = map[[16]byte]bool{}
				}
				gone[[16]byte(id)] = true
			}
		}
		m.ForgetTopics(gone)
	})
	s.setGroupSettings()
	m.Start()
	return nil
}

// beforeGroupSubscribe, set only by a test
// (TestGroupConfigChangedDuringStart), runs as startShares subscribes to
// group-config changes: a change published there must not be missed.
var beforeGroupSubscribe func(*Server)

// isOtherGroup says whether a classic or consumer group holds id (Kafka's
// groups have one type).
func (s *Server) isOtherGroup(id string) bool {
	for _, g := range s.groups.List() {
		if g.ID == id {
			return true
		}
	}
	return false
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

// maxConnShareSessions bounds the share sessions one connection holds: a
// share consumer keeps one per broker, so a connection opening more is
// taking group.share.max.share.sessions from everyone else (review M2).
const maxConnShareSessions = 16

// mayOpenShareSession says whether this connection may open (or reopen)
// member's share session, after forgetting the sessions it no longer
// owns (closed, replaced elsewhere, or dropped when the member left), so
// that the list does not grow with every epoch 0 and -1 cycle.
func (c *conn) mayOpenShareSession(group, member string) bool {
	k := [2]string{group, member}
	if _, ok := c.shareSessions[k]; ok || len(c.shareSessions) < maxConnShareSessions {
		return true
	}
	for o := range c.shareSessions {
		if !c.s.shares.OwnsSession(o[0], o[1], c) {
			delete(c.shareSessions, o)
		}
	}
	return len(c.shareSessions) < maxConnShareSessions
}

// openedShareSession notes a share session this connection opened.
func (c *conn) openedShareSession(group, member string) {
	if c.shareSessions == nil {
		c.shareSessions = map[[2]string]struct{}{}
	}
	c.shareSessions[[2]string{group, member}] = struct{}{}
}

// closedShareSession forgets a share session closed with epoch -1.
func (c *conn) closedShareSession(group, member string) {
	delete(c.shareSessions, [2]string{group, member})
}

// closeShareSessions releases the records of the share sessions this
// connection opened and still owns (a client that went away without
// closing them, or a consumer that crashed).
func (c *conn) closeShareSessions() {
	// Sessions exist only on connections that served share requests,
	// which start after the share manager does; checking them first keeps
	// the connections accepted early (Raft's, before the manager is set)
	// from reading s.shares while start-up writes it.
	if len(c.shareSessions) == 0 || c.s.shares == nil {
		return
	}
	for k := range c.shareSessions {
		c.s.shares.CloseSessionOf(k[0], k[1], c)
	}
}

// lockMillis is the group's record lock duration, which ShareFetch and
// ShareAcknowledge tell the client (share.record.lock.duration.ms).
func (s *Server) lockMillis(group *string) int32 {
	g := ""
	if group != nil {
		g = *group
	}
	return int32(s.shares.LockDuration(g) / time.Millisecond)
}

// shareSink writes the share groups' records to __consumer_offsets
// through the group coordinator (broker/share's persist.go).
type shareSink struct{ c *group.Coordinator }

func (k shareSink) Write(p int32, gen uint64, recs []share.Record, done func(error)) {
	out := make([]group.Record, len(recs))
	for i, r := range recs {
		out[i] = group.Record{Key: r.Key, Value: r.Value}
	}
	k.c.WriteShare(p, gen, out, done)
}

// shareLoader hands the share records the coordinator loads to the share
// groups, with the topics as they are now.
type shareLoader struct{ s *Server }

func (l shareLoader) LoadShare(p int32, gen uint64, recs []group.Record) {
	in := make([]share.Record, len(recs))
	for i, r := range recs {
		in[i] = share.Record{Key: r.Key, Value: r.Value}
	}
	l.s.shares.LoadShare(p, gen, in, shareTopics(l.s.ctrl.Image()))
}

func (l shareLoader) UnloadShare(p int32, gen uint64) { l.s.shares.UnloadShare(p, gen) }
