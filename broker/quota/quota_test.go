package quota

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func f(v float64) *float64 { return &v }

// TestPrecedence walks Kafka's eight levels: each row adds one less
// specific quota, and the (alice, app) client must keep the most specific.
// The table is Kafka's ClientQuotaManagerTest.testQuotaConfigPrecedence
// turned into data.
func TestPrecedence(t *testing.T) {
	alice, app := str("alice"), str("app")
	levels := []struct {
		entity Entity
		value  float64
		tags   Tags
	}{
		{UserClientEntity(alice, app), 1, Tags{"alice", "app"}},
		{UserClientEntity(alice, nil), 2, Tags{"alice", "app"}},
		{UserEntity(alice), 3, Tags{"alice", ""}},
		{UserClientEntity(nil, app), 4, Tags{"alice", "app"}},
		{UserClientEntity(nil, nil), 5, Tags{"alice", "app"}},
		{UserEntity(nil), 6, Tags{"alice", ""}},
		{ClientEntity(app), 7, Tags{"", "app"}},
		{ClientEntity(nil), 8, Tags{"", "app"}},
	}
	// With levels i..8 configured, level i wins.
	for i := range levels {
		var tb *Table
		for _, l := range levels[i:] {
			tb = tb.With(l.entity, ProducerByteRate, f(l.value))
		}
		tags, bound, ok := tb.Resolve(ProducerByteRate, "alice", "app")
		if !ok || bound != levels[i].value || tags != levels[i].tags {
			t.Errorf("levels %d-8 (%s wins): got %v %v %v, want %v %v", i+1, levels[i].entity.Path(), tags, bound, ok, levels[i].tags, levels[i].value)
		}
		// Another user and client-id only sees the defaults.
		_, bound, ok = tb.Resolve(ProducerByteRate, "bob", "other")
		want := map[int]float64{0: 5, 1: 5, 2: 5, 3: 5, 4: 5, 5: 6, 6: 8, 7: 8}[i]
		if !ok || bound != want {
			t.Errorf("levels %d-8, bob/other: bound %v %v, want %v", i+1, bound, ok, want)
		}
	}
	// Keys are independent: a consumer quota does not limit producing.
	tb := (*Table)(nil).With(UserEntity(alice), ConsumerByteRate, f(10))
	if _, _, ok := tb.Resolve(ProducerByteRate, "alice", "app"); ok {
		t.Error("consumer_byte_rate limited producing")
	}
	// Removing the last value removes the entity.
	tb = tb.With(UserEntity(alice), ConsumerByteRate, nil)
	if tb.Len() != 0 {
		t.Errorf("%d entities left after removing the only value", tb.Len())
	}
	// ANONYMOUS is a user like any other: the default user quota applies.
	tb = tb.With(UserEntity(nil), ProducerByteRate, f(100))
	if _, b, ok := tb.Resolve(ProducerByteRate, "ANONYMOUS", ""); !ok || b != 100 {
		t.Errorf("ANONYMOUS with a default user quota: %v %v", b, ok)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		parts []Part
		key   string
		value float64
		msg   string
	}{
		{nil, "", 0, "Invalid empty client quota entity"},
		{[]Part{{Type: "group", Name: str("g")}}, "", 0, "Unhandled client quota entity type: group"},
		{[]Part{{Type: User, Name: str("a")}, {Type: User, Name: str("b")}}, "", 0, "Invalid client quota entity, duplicate entity entry user"},
		{[]Part{{Type: User, Name: str("")}}, "", 0, "Empty user not supported"},
		{[]Part{{Type: IP, Name: str("1.2.3.4")}, {Type: User}}, "", 0, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"},
		{[]Part{{Type: User}}, "bogus", 1, "Invalid configuration key bogus"},
		{[]Part{{Type: User}}, ProducerByteRate, -5, "Quota producer_byte_rate must be greater than 0"},
		{[]Part{{Type: User}}, ProducerByteRate, 0, "Quota producer_byte_rate must be greater than 0"},
		{[]Part{{Type: User}}, ProducerByteRate, 1.5, "producer_byte_rate cannot be a fractional value."},
		{[]Part{{Type: User}}, ProducerByteRate, 1e30, "Proposed value for producer_byte_rate is too large for a LONG."},
		{[]Part{{Type: IP}}, ProducerByteRate, 5, "Invalid configuration key producer_byte_rate"},
		{[]Part{{Type: IP, Name: str("10.0.0.1")}}, ConnectionCreationRate, 3e9, "Proposed value for connection_creation_rate is too large for an INT."},
		{[]Part{{Type: User}}, RequestPercentage, 12.5, ""},
		{[]Part{{Type: ClientID, Name: str("x")}, {Type: User, Name: str("y")}}, ControllerMutationRate, 0.5, ""},
	} {
		e, err := ValidateEntity(c.parts)
		if err == nil && c.key != "" {
			err = ValidateValue(e, c.key, c.value)
		}
		var ie *InvalidError
		switch {
		case c.msg == "" && err != nil:
			t.Errorf("%v %s=%v: %v", c.parts, c.key, c.value, err)
		case c.msg != "" && (!errors.As(err, &ie) || ie.Msg != c.msg):
			t.Errorf("%v %s=%v: got %v, want %q", c.parts, c.key, c.value, err, c.msg)
		}
	}
}

// TestRate checks the sampled rate against Kafka's arithmetic: a new
// sensor counts at least Samples-1 windows, and the throttle brings the
// rate back to the bound.
func TestRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := rate{w: Window{Samples: 11, Size: time.Second}}
	r.record(500, t0)
	// 500 over the padded 10 s.
	if v := r.value(t0); math.Abs(v-50) > 1e-9 {
		t.Errorf("rate after one record: %v, want 50", v)
	}
	// Bound 40: (50-40)/40 × 10 s = 2.5 s.
	if d := r.throttle(40, t0); d != 2500*time.Millisecond {
		t.Errorf("throttle: %v, want 2.5s", d)
	}
	// Once every sample is older than 11 windows, nothing counts.
	if v := r.value(t0.Add(12 * time.Second)); v != 0 {
		t.Errorf("rate after the window: %v", v)
	}

	// A client recording 2× the bound every 100 ms, and waiting out each
	// throttle, averages the bound.
	m := NewManager(Window{Samples: 11, Size: time.Second}, func() *Table {
		return (*Table)(nil).With(UserEntity(str("u")), ProducerByteRate, f(1000))
	})
	now, sent := t0, 0.0
	for now.Before(t0.Add(60 * time.Second)) {
		d, _, ok := m.Record(ProducerByteRate, "u", "c", 200, now)
		if !ok {
			t.Fatal("no quota")
		}
		sent += 200
		now = now.Add(100*time.Millisecond + d)
	}
	if got := sent / now.Sub(t0).Seconds(); math.Abs(got-1000)/1000 > 0.1 {
		t.Errorf("throttled client averaged %.0f B/s, want 1000 within 10%%", got)
	}
}

func TestMutationBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	m := NewManager(Window{Samples: 2, Size: time.Second}, func() *Table {
		return (*Table)(nil).With(UserEntity(nil), ControllerMutationRate, f(5))
	})
	// Burst: 5/s × 2 s = 10 partitions, then 5 more put the bucket at -5,
	// one second of refill.
	if d, _, _ := m.MutationThrottle("u", "c", t0); d != 0 {
		t.Fatalf("a new bucket throttles: %v", d)
	}
	if d := m.RecordMutations("u", "c", 15, t0); d != time.Second {
		t.Errorf("after 15 partitions: %v, want 1s", d)
	}
	if d, _, _ := m.MutationThrottle("u", "c", t0.Add(500*time.Millisecond)); d != 500*time.Millisecond {
		t.Errorf("half a second later: %v, want 500ms", d)
	}
	if d, _, _ := m.MutationThrottle("u", "c", t0.Add(time.Second)); d != 0 {
		t.Errorf("a second later: %v, want 0", d)
	}
}

// TestSensorCap checks that a client choosing a new client id for each
// request cannot grow the sensors without bound: past the cap the newcomers
// share the overflow sensor, and are throttled together; known clients
// keep their own. Metric labels are clipped and valid UTF-8.
func TestSensorCap(t *testing.T) {
	m := NewManager(Window{Samples: 11, Size: time.Second}, func() *Table {
		return (*Table)(nil).With(ClientEntity(nil), ProducerByteRate, f(1000))
	})
	m.MaxSensors = 100
	now := time.Unix(1000, 0)
	for i := range 1000 {
		_, tags, ok := m.Record(ProducerByteRate, "", fmt.Sprintf("client-%d", i), 20, now)
		if !ok {
			t.Fatal("no quota")
		}
		if want := i < 100; (tags.ClientID != Overflow) != want {
			t.Fatalf("client %d measured as %q", i, tags.ClientID)
		}
	}
	if n := m.Sensors(); n != 101 {
		t.Errorf("%d sensors after 1000 client ids with a cap of 100, want 101", n)
	}
	// The 900 newcomers recorded 18000 B together: 1800 B/s over the
	// padded 10 s window, over the 1000 B/s quota.
	if d, _, _ := m.Record(ProducerByteRate, "", "yet-another", 10, now); d == 0 {
		t.Error("the overflow sensor is not throttled although its clients together exceed the quota")
	}
	if d, tags, _ := m.Record(ProducerByteRate, "", "client-7", 10, now); d != 0 || tags.ClientID != "client-7" {
		t.Errorf("a client known before the cap: throttle %v, tags %+v", d, tags)
	}

	user, client := Tags{User: "u", ClientID: strings.Repeat("é", 100) + "\xff"}.Labels()
	if user != "u" || len(client) > 64 || !utf8.ValidString(client) || !strings.HasPrefix(client, "éé") {
		t.Errorf("labels of a long client id: %q (%d bytes)", client, len(client))
	}
	if _, c := (Tags{ClientID: "a\xffb"}).Labels(); c != "a\uFFFDb" {
		t.Errorf("label of invalid UTF-8: %q", c)
	}
}
