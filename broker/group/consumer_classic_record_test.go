package group

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaClassicMember is a ConsumerGroupMemberMetadataValue with
// ClassicMemberMetadata as Kafka 4.4 writes it
// (MessageUtil.toVersionPrefixedByteBuffer over the generated class, run on
// the 4.4 jars: javagen/KafkaMemberRecord.java): client "c", host "/127.0.0.1", topic "t", rebalance
// timeout 30 s, no instance id, rack, regex or server assignor (null, as
// Kafka's record helpers set them for such a member), session timeout
// 10 s, protocol "range" with a v1 subscription to "t". Note the 01
// presence marker after the tagged field's size (18).
const kafkaClassicMember = "0000000002630b2f3132372e302e302e310202740000007530000100180100002710020672616e67650a0001000000010001740000"

// TestClassicMemberRecordKafkaBytes: a classic member's record is byte for
// byte Kafka's, and Kafka's reads back as a classic member (review 3).
func TestClassicMemberRecordKafkaBytes(t *testing.T) {
	kafka, _ := hex.DecodeString(kafkaClassicMember)
	sub := []byte{0, 1, 0, 0, 0, 1, 0, 1, 't'}
	own := &cMember{ClientID: "c", ClientHost: "/127.0.0.1", Topics: []string{"t"}, RebalanceTimeout: 30000,
		Classic: &classicMeta{SessionTimeout: 10 * time.Second, Protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: sub}}}}
	if got := own.metadataValue(); !bytes.Equal(got, kafka) {
		t.Fatalf("our member record:\n%x\nKafka 4.4's:\n%x", got, kafka)
	}

	gs := NewGroups(Config{Partitions: 50, Consumer: ConsumerConfig{Assignors: []string{"uniform"}}})
	if err := gs.Replay(cgKey(cgMemberKey, "g", "m1", true), kafka, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	g, _ := gs.Group("g")
	c := g.consumer.members["m1"].Classic
	if c == nil || c.SessionTimeout != 10*time.Second || len(c.Protocols) != 1 || c.Protocols[0].Name != "range" || !bytes.Equal(c.Protocols[0].Metadata, sub) {
		t.Fatalf("Kafka's record read back as %+v, want a classic member (10 s, range)", c)
	}
}
