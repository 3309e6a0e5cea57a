package share

import (
	"encoding/hex"
	"log/slog"
	"testing"
	"time"
)

// kafkaShareRecords are Kafka 4.4's own bytes for one share group's
// records (javagen/KafkaShareRecords.java, run against the 4.4 jars,
// which also read each back as kafka-dump-log --offsets-decoder does):
// group "g", member "m" (client "c", host "/127.0.0.1", no rack, topic
// "t"), epoch 3 after 2, MetadataHash 0x0102030405060708, partitions 0
// and 2 of topic id 01000000-..., initialized as topic "t".
var kafkaShareRecords = map[string][2]string{
	"member":       {"000a00016700016d", "00000002630b2f3132372e302e302e3102027400"},
	"metadata":     {"000b000167", "000000000003010203040506070800"},
	"targetmeta":   {"000c000167", "00000000000300"},
	"targetmember": {"000d00016700016d", "000002010000000000000000000000000000000300000000000000020000"},
	"current":      {"000e00016700016d", "000000000003000000020002010000000000000000000000000000000300000000000000020000"},
	"statepart":    {"000f000167", "00000102010000000000000000000000000000000274030000000000000002000100"},
	"statepart3":   {"000f000167", "0000020200000000000000000000000000000002750200000001000201000000000000000000000000000000027403000000000000000200020300000000000000000000000000000002760000"},
}

// TestShareRecordsAreKafkas: the records we write are byte for byte the
// ones Kafka 4.4 writes for the same group, so Kafka's tools
// (kafka-dump-log --offsets-decoder) and a Kafka coordinator read them;
// and Kafka's bytes replay to the same group here.
func TestShareRecordsAreKafkas(t *testing.T) {
	id := [16]byte{1}
	m := &member{id: "m", clientID: "c", clientHost: "/127.0.0.1", topics: []string{"t"}, epoch: 3, prevEpoch: 2,
		assigned: map[[16]byte][]int32{id: {2, 0}}}
	init := statePart{initialized: map[[16]byte]initTopic{id: {name: "t", parts: []int32{0, 2}}}}
	all := statePart{initializing: map[[16]byte]initTopic{{2}: {name: "u", parts: []int32{1}}},
		initialized: init.initialized, deleting: map[[16]byte]string{{3}: "v"}}
	ours := map[string][2][]byte{
		"member":       {recKey(recMember, "g", "m"), memberValue(m)},
		"metadata":     {recKey(recMetadata, "g", ""), metadataValue(3, 0x0102030405060708)},
		"targetmeta":   {recKey(recTargetMeta, "g", ""), targetMetaValue(3)},
		"targetmember": {recKey(recTargetMember, "g", "m"), targetMemberValue(m.assigned)},
		"current":      {recKey(recCurrentAssign, "g", "m"), currentValue(m)},
		"statepart":    {recKey(recStatePartMeta, "g", ""), statePartValue(init)},
		"statepart3":   {recKey(recStatePartMeta, "g", ""), statePartValue(all)},
	}
	for name, want := range kafkaShareRecords {
		got := ours[name]
		if k, v := hex.EncodeToString(got[0]), hex.EncodeToString(got[1]); k != want[0] || v != want[1] {
			t.Errorf("%s:\n ours  %s %s\n Kafka %s %s", name, k, v, want[0], want[1])
		}
	}

	var recs []Record
	for _, name := range []string{"member", "statepart", "metadata", "targetmember", "targetmeta", "current"} {
		k, _ := hex.DecodeString(kafkaShareRecords[name][0])
		v, _ := hex.DecodeString(kafkaShareRecords[name][1])
		recs = append(recs, Record{k, v})
	}
	mgr, err := NewManager(Config{}, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	mgr.now = func() time.Time { return time.Unix(1000, 0) }
	mgr.LoadShare(0, 1, recs, map[string]TopicMeta{"t": {ID: id, Partitions: 3}})
	g := mgr.groups["g"]
	if g == nil || g.epoch != 3 || g.loadedHash != 0x0102030405060708 || len(g.members) != 1 || len(g.state.initialized[id].parts) != 2 || g.state.initialized[id].name != "t" {
		t.Fatalf("Kafka's records replayed: %+v", g)
	}
	if d := readValue(mustHex(kafkaShareRecords["statepart3"][1])); true {
		if sp := readStatePart(d); d.err != nil || statePartValue(sp) == nil || hex.EncodeToString(statePartValue(sp)) != kafkaShareRecords["statepart3"][1] ||
			sp.initializing[[16]byte{2}].name != "u" || sp.deleting[[16]byte{3}] != "v" {
			t.Fatalf("Kafka's type 15 with all three lists read as %+v (%v)", sp, d.err)
		}
	}
	got := g.members["m"]
	if got.epoch != 3 || got.prevEpoch != 2 || got.clientID != "c" || got.clientHost != "/127.0.0.1" || got.rack != nil ||
		len(got.topics) != 1 || len(got.assigned[id]) != 2 || got.assigned[id][1] != 2 {
		t.Fatalf("member replayed: %+v", got)
	}
}

// TestShareRecordsBadInput: truncated or made-up records are skipped
// with an error, never a crash.
func TestShareRecordsBadInput(t *testing.T) {
	mgr, err := NewManager(Config{}, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	for _, kv := range kafkaShareRecords {
		k, _ := hex.DecodeString(kv[0])
		v, _ := hex.DecodeString(kv[1])
		for i := range v {
			recs = append(recs, Record{k, v[:i]})
		}
		for i := range k {
			recs = append(recs, Record{k[:i], v})
		}
		recs = append(recs, Record{k, append(append([]byte{}, v[:2]...), 0xff, 0xff, 0xff, 0xff, 0x0f)})
	}
	mgr.LoadShare(0, 1, recs, nil)
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}
