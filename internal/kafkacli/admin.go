package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"

	"github.com/segmentio/kafka-go"
)

// The admin requests, through kafka-go's Client. Each returns one error per
// topic (nil for success), so a command can report every topic's outcome;
// the error of the call itself is a failure to ask at all.

// CreateTopics creates topics (CreateTopics).
func (c *Cluster) CreateTopics(ctx context.Context, topics []kafka.TopicConfig) (map[string]error, error) {
	resp, err := c.Client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: topics})
	if err != nil {
		return nil, unwrapClient(err)
	}
	return resp.Errors, nil
}

// DeleteTopics deletes topics by name (DeleteTopics).
func (c *Cluster) DeleteTopics(ctx context.Context, names []string) (map[string]error, error) {
	resp, err := c.Client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: names})
	if err != nil {
		return nil, unwrapClient(err)
	}
	return resp.Errors, nil
}

// CreatePartitions grows topics to a new total count of partitions
// (CreatePartitions); totals maps topic to count.
func (c *Cluster) CreatePartitions(ctx context.Context, totals map[string]int) (map[string]error, error) {
	req := &kafka.CreatePartitionsRequest{}
	for t, n := range totals {
		req.Topics = append(req.Topics, kafka.TopicPartitionsConfig{Name: t, Count: int32(n)})
	}
	resp, err := c.Client.CreatePartitions(ctx, req)
	if err != nil {
		return nil, unwrapClient(err)
	}
	return resp.Errors, nil
}

// ConfigEntry is one topic config as DescribeConfigs reports it.
type ConfigEntry struct {
	Name, Value string
	Source      ConfigSource
	Sensitive   bool
	ReadOnly    bool
}

// ConfigSource is where a config value comes from (DescribeConfigs v1+).
type ConfigSource int8

// Kafka's config sources (org.apache.kafka.clients.admin.ConfigEntry.ConfigSource).
const (
	SourceUnknown              ConfigSource = 0
	SourceDynamicTopic         ConfigSource = 1
	SourceDynamicBroker        ConfigSource = 2
	SourceDynamicDefaultBroker ConfigSource = 3
	SourceStaticBroker         ConfigSource = 4
	SourceDefault              ConfigSource = 5
	SourceDynamicBrokerLogger  ConfigSource = 6
	SourceClientMetrics        ConfigSource = 7
	SourceGroup                ConfigSource = 8
)

func (s ConfigSource) String() string {
	switch s {
	case SourceDynamicTopic:
		return "DYNAMIC_TOPIC_CONFIG"
	case SourceDynamicBroker:
		return "DYNAMIC_BROKER_CONFIG"
	case SourceDynamicDefaultBroker:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case SourceStaticBroker:
		return "STATIC_BROKER_CONFIG"
	case SourceDefault:
		return "DEFAULT_CONFIG"
	case SourceDynamicBrokerLogger:
		return "DYNAMIC_BROKER_LOGGER_CONFIG"
	case SourceClientMetrics:
		return "CLIENT_METRICS_CONFIG"
	case SourceGroup:
		return "GROUP_CONFIG"
	}
	return "UNKNOWN"
}

// TopicConfigs describes the configs of topics (DescribeConfigs). A topic
// whose answer is an error is in errs.
func (c *Cluster) TopicConfigs(ctx context.Context, topics []string) (configs map[string][]ConfigEntry, errs map[string]error, err error) {
	req := &kafka.DescribeConfigsRequest{}
	for _, t := range topics {
		req.Resources = append(req.Resources, kafka.DescribeConfigRequestResource{ResourceType: kafka.ResourceTypeTopic, ResourceName: t})
	}
	resp, err := c.Client.DescribeConfigs(ctx, req)
	if err != nil {
		return nil, nil, unwrapClient(err)
	}
	configs, errs = map[string][]ConfigEntry{}, map[string]error{}
	for _, r := range resp.Resources {
		if r.Error != nil {
			errs[r.ResourceName] = r.Error
			continue
		}
		for _, e := range r.ConfigEntries {
			src := ConfigSource(e.ConfigSource)
			if e.IsDefault && src == SourceUnknown { // DescribeConfigs v0 has no source
				src = SourceDefault
			}
			configs[r.ResourceName] = append(configs[r.ResourceName], ConfigEntry{
				Name: e.ConfigName, Value: e.ConfigValue, Source: src, Sensitive: e.IsSensitive, ReadOnly: e.ReadOnly,
			})
		}
	}
	return configs, errs, nil
}

// AlterTopicConfig sets and deletes (reverts to the default) configs of
// topics (IncrementalAlterConfigs), leaving the others as they are.
func (c *Cluster) AlterTopicConfig(ctx context.Context, topics []string, set [][2]string, del []string) (map[string]error, error) {
	req := &kafka.IncrementalAlterConfigsRequest{}
	for _, t := range topics {
		res := kafka.IncrementalAlterConfigsRequestResource{ResourceType: kafka.ResourceTypeTopic, ResourceName: t}
		for _, kv := range set {
			res.Configs = append(res.Configs, kafka.IncrementalAlterConfigsRequestConfig{Name: kv[0], Value: kv[1], ConfigOperation: kafka.ConfigOperationSet})
		}
		for _, k := range del {
			res.Configs = append(res.Configs, kafka.IncrementalAlterConfigsRequestConfig{Name: k, ConfigOperation: kafka.ConfigOperationDelete})
		}
		req.Resources = append(req.Resources, res)
	}
	resp, err := c.Client.IncrementalAlterConfigs(ctx, req)
	if err != nil {
		return nil, unwrapClient(err)
	}
	out := map[string]error{}
	for _, r := range resp.Resources {
		out[r.ResourceName] = r.Error
	}
	return out, nil
}

// CompileTopicRegexps compiles topic filters. Each must match a whole
// topic name, as in kafka-topics.sh --topic and rpk: "orders" is not
// "orders-eu"; write "orders.*" for both.
func CompileTopicRegexps(exprs []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, e := range exprs {
		re, err := regexp.Compile("^(?:" + e + ")$")
		if err != nil {
			return nil, fmt.Errorf("topic regex %q: %w", e, unwrapRegexp(err))
		}
		out = append(out, re)
	}
	return out, nil
}

// unwrapRegexp keeps regexp's reason without the anchored expression,
// which the user did not write.
func unwrapRegexp(err error) error {
	var se *syntax.Error
	if errors.As(err, &se) {
		return errors.New(string(se.Code))
	}
	return err
}

// MatchTopics keeps the topics any of res matches (all if res is empty);
// internal topics (__consumer_offsets, ...) only if internal is set.
func MatchTopics(topics []TopicInfo, res []*regexp.Regexp, internal bool) []TopicInfo {
	var out []TopicInfo
	for _, t := range topics {
		if t.Internal && !internal {
			continue
		}
		if len(res) == 0 {
			out = append(out, t)
			continue
		}
		for _, re := range res {
			if re.MatchString(t.Name) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}
