package record

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestValidateCorruption(t *testing.T) {
	for _, c := range allCodecs {
		b := mustBuild(t, sampleOptions(c), sampleRecords())
		for name, edit := range map[string]func(Batch){
			"crc":     func(b Batch) { b[offCRC] ^= 0x01 },
			"records": func(b Batch) { b[len(b)-1] ^= 0x80 },
			"header":  func(b Batch) { b[offMaxTimestamp] ^= 0x01 },
		} {
			bad := append(Batch(nil), b...)
			edit(bad)
			err := Validate(bad, FromReplica, Limits{})
			if !errors.Is(err, kerr.CorruptMessage) {
				t.Errorf("%s/%s: %v", c, name, err)
			}
		}
		// The base offset and leader epoch are outside the CRC: the
		// broker rewrites them in place.
		b.SetBaseOffset(99)
		b.SetPartitionLeaderEpoch(7)
		if err := Validate(b, FromClient, Limits{}); err != nil {
			t.Errorf("%s: after rewriting the offset: %v", c, err)
		}
	}
}

func TestValidateCodes(t *testing.T) {
	good := func() Batch { return mustBuild(t, sampleOptions(CodecNone), sampleRecords()) }
	control := sampleOptions(CodecNone)
	control.Control = true
	gap := sampleOptions(CodecNone)
	gap.LastOffsetDelta = 20

	cases := []struct {
		name   string
		b      Batch
		origin Origin
		lim    Limits
		code   *kerr.Error
	}{
		{"too large", good(), FromClient, Limits{MaxBytes: len(good()) - 1}, kerr.MessageTooLarge},
		{"control from client", mustBuild(t, control, sampleRecords()), FromClient, Limits{}, kerr.InvalidRecord},
		{"no records from client", mustBuild(t, sampleOptions(CodecNone), nil), FromClient, Limits{}, kerr.InvalidRecord},
		{"offset gap from client", mustBuild(t, gap, sampleRecords()), FromClient, Limits{}, kerr.InvalidRecord},
		{"codec 5", good().withCodec(5), FromClient, Limits{}, kerr.UnsupportedCompressionType},
		{"codec 7", good().withCodec(7), FromReplica, Limits{}, kerr.UnsupportedCompressionType},
		{"magic 1", reseal(func() Batch { b := good(); b[offMagic] = 1; return b }()), FromClient, Limits{}, kerr.UnsupportedForMessageFormat},
		{"magic 3", reseal(func() Batch { b := good(); b[offMagic] = 3; return b }()), FromClient, Limits{}, kerr.CorruptMessage},
		{"length field", good()[:len(good())-1], FromClient, Limits{}, kerr.CorruptMessage},
		{"short", good()[:HeaderSize-1], FromClient, Limits{}, kerr.CorruptMessage},
		{"record count", withRecords(good(), 5, good().Records()), FromReplica, Limits{}, kerr.CorruptMessage},
	}
	for _, tc := range cases {
		err := Validate(tc.b, tc.origin, tc.lim)
		wantCode(t, err, tc.code)
		if KafkaCode(err) != tc.code {
			t.Errorf("%s: KafkaCode %v", tc.name, KafkaCode(err))
		}
	}
	// A follower copies what the leader took, whatever its size, and
	// control batches and offset gaps come with it.
	for _, b := range []Batch{good(), mustBuild(t, control, sampleRecords()), mustBuild(t, gap, sampleRecords())} {
		if err := Validate(b, FromReplica, Limits{MaxBytes: 10}); err != nil {
			t.Errorf("from replica: %v", err)
		}
	}
	if KafkaCode(errors.New("other")) != kerr.UnknownServerError {
		t.Error("KafkaCode of a foreign error")
	}
}
