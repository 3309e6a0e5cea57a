package kafkacli

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-848 consumer groups (group.protocol=consumer) are not classic groups:
// DescribeGroups answers GROUP_ID_NOT_FOUND for them, as Kafka does, and
// kafka-go has no ConsumerGroupDescribe. So the groups DescribeGroups did
// not find are asked again with ConsumerGroupDescribe through franz-go, as
// kafka-consumer-groups.sh does.

// describeConsumerGroups fills in, in out, the groups among ids that are
// consumer-protocol groups. A broker without ConsumerGroupDescribe, or any
// failure, leaves out as it is.
func (c *Cluster) describeConsumerGroups(ctx context.Context, ids []string, out map[string]*GroupDescription) {
	opts, err := ClientOpts()
	if err != nil {
		return
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.ClientID(ClientID),
		kgo.DialTimeout(10 * time.Second), kgo.RequestRetries(1)}, opts...)...)
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = ids
	// Sharded by coordinator: franz-go sends each group to its own.
	for _, sh := range cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			continue
		}
		for _, g := range sh.Resp.(*kmsg.ConsumerGroupDescribeResponse).Groups {
			if g.ErrorCode != 0 {
				continue
			}
			d := &GroupDescription{ID: g.Group, State: g.State, ProtocolType: "consumer", Protocol: g.AssignorName, Epoch: g.Epoch}
			for _, m := range g.Members {
				gm := GroupMember{ID: m.MemberID, ClientID: m.ClientID, Host: strings.TrimPrefix(m.ClientHost, "/"),
					Epoch: m.MemberEpoch, Assignment: assignmentByName(m.Assignment), Target: assignmentByName(m.TargetAssignment),
					Classic: m.MemberType == 0}
				if m.InstanceID != nil {
					gm.InstanceID = *m.InstanceID
				}
				d.Members = append(d.Members, gm)
			}
			sort.Slice(d.Members, func(i, j int) bool { return d.Members[i].ID < d.Members[j].ID })
			out[g.Group] = d
		}
	}
}

func assignmentByName(a kmsg.Assignment) map[string][]int {
	out := map[string][]int{}
	for _, t := range a.TopicPartitions {
		name := t.Topic
		if name == "" {
			name = FormatTopicID(t.TopicID)
		}
		for _, p := range t.Partitions {
			out[name] = append(out[name], int(p))
		}
		sort.Ints(out[name])
	}
	return out
}
