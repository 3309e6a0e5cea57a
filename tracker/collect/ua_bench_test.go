package collect

import (
	"fmt"
	"strings"
	"testing"
)

func BenchmarkParseUA(b *testing.B) {
	for b.Loop() {
		ParseUA(ua)
	}
}

func BenchmarkTrackRequest(b *testing.B) {
	benchTrack(b)
}

func benchTrack(b *testing.B) {
	sink := &memSink{}
	s, err := New(Config{Sources: []Source{{Name: "s", WriteKey: key, Topic: "events"}}, DedupDisabled: true}, sink)
	if err != nil {
		b.Fatal(err)
	}
	body := `{"userId":"u","event":"Clicked","properties":{"a":1,"b":"two"},"context":{"page":{"url":"https://x.example/a"}}}`
	for b.Loop() {
		req := httptestRequest(body)
		s.ServeHTTP(discard{}, req)
		sink.events = sink.events[:0]
	}
}

// BenchmarkBatch100 is one /v1/batch of 100 events, in process (no
// network, in-memory Sink); ns/op / 100 is the collector's cost per event.
func BenchmarkBatch100(b *testing.B) {
	sink := &memSink{}
	s, err := New(Config{Sources: []Source{{Name: "s", WriteKey: key, Topic: "events"}}, DedupDisabled: true}, sink)
	if err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	sb.WriteString(`{"batch":[`)
	for i := range 100 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"type":"track","userId":"u%d","event":"Clicked","properties":{"a":%d,"b":"two"},"context":{"page":{"url":"https://x.example/a"}}}`, i, i)
	}
	sb.WriteString(`]}`)
	body := sb.String()
	for b.Loop() {
		r := httptestRequest(body)
		r.URL.Path = "/v1/batch"
		s.ServeHTTP(discard{}, r)
		sink.events = sink.events[:0]
	}
}
