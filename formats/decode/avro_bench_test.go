package decode

import (
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/valyala/fastjson"

	"github.com/tributary-io/tributary/formats/schema"
)

// activityAvro is the Avro form of the generated activity events.
const activityAvro = `{"type":"record","name":"Activity","fields":[
 {"name":"type","type":"string"},
 {"name":"event","type":["null","string"]},
 {"name":"messageId","type":"string"},
 {"name":"anonymousId","type":["null","string"]},
 {"name":"userId","type":["null","string"]},
 {"name":"timestamp","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"receivedAt","type":["null",{"type":"long","logicalType":"timestamp-millis"}]},
 {"name":"context","type":["null",{"type":"record","name":"Context","fields":[
   {"name":"page","type":["null",{"type":"record","name":"Page","fields":[
     {"name":"url","type":["null","string"]},{"name":"path","type":["null","string"]},{"name":"referrer","type":["null","string"]}]}]},
   {"name":"userAgent","type":["null","string"]},{"name":"ip","type":["null","string"]},{"name":"locale","type":["null","string"]}]}]},
 {"name":"properties","type":["null","string"]}
]}`

type avroPage struct {
	URL      *string `avro:"url"`
	Path     *string `avro:"path"`
	Referrer *string `avro:"referrer"`
}

type avroContext struct {
	Page      *avroPage `avro:"page"`
	UserAgent *string   `avro:"userAgent"`
	IP        *string   `avro:"ip"`
	Locale    *string   `avro:"locale"`
}

type avroActivity struct {
	Type        string       `avro:"type"`
	Event       *string      `avro:"event"`
	MessageID   string       `avro:"messageId"`
	AnonymousID *string      `avro:"anonymousId"`
	UserID      *string      `avro:"userId"`
	Timestamp   time.Time    `avro:"timestamp"`
	ReceivedAt  *time.Time   `avro:"receivedAt"`
	Context     *avroContext `avro:"context"`
	Properties  *string      `avro:"properties"`
}

func activityAvroRecords(b testing.TB, n int) ([]Record, int64) {
	s := avro.MustParse(activityAvro)
	var p fastjson.Parser
	str := func(v *fastjson.Value, k ...string) *string {
		x := string(v.GetStringBytes(k...))
		return &x
	}
	recs := make([]Record, n)
	var size int64
	for i := range recs {
		v, err := p.ParseBytes(ActivityEvent(nil, i))
		if err != nil {
			b.Fatal(err)
		}
		ts, _ := time.Parse(time.RFC3339, string(v.GetStringBytes("timestamp")))
		rcv := time.UnixMilli(v.GetInt64("receivedAt")).UTC()
		props := v.Get("properties").String()
		a := avroActivity{
			Type: string(v.GetStringBytes("type")), Event: str(v, "event"), MessageID: string(v.GetStringBytes("messageId")),
			AnonymousID: str(v, "anonymousId"), UserID: str(v, "userId"), Timestamp: ts.UTC(), ReceivedAt: &rcv,
			Context: &avroContext{
				Page:      &avroPage{URL: str(v, "context", "page", "url"), Path: str(v, "context", "page", "path"), Referrer: str(v, "context", "page", "referrer")},
				UserAgent: str(v, "context", "userAgent"), IP: str(v, "context", "ip"), Locale: str(v, "context", "locale"),
			},
			Properties: &props,
		}
		body, err := avro.Marshal(s, a)
		if err != nil {
			b.Fatal(err)
		}
		recs[i] = Record{Offset: int64(i), Value: body}
		size += int64(len(body))
	}
	return recs, size
}

// BenchmarkDecodeActivityAvro decodes 200,000 Avro activity events per
// iteration into schema.Activity(), in batches of 10,000.
func BenchmarkDecodeActivityAvro(b *testing.B) {
	const n, batch = 200_000, 10_000
	recs, size := activityAvroRecords(b, n)
	d, err := NewAvro(schema.Activity(), activityAvro, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Release()
	b.SetBytes(size)
	b.ResetTimer()
	start := cpuTime()
	for range b.N {
		for i := 0; i < n; i += batch {
			if errs := d.Decode(recs[i : i+batch]); errs != nil {
				b.Fatal(errs[0])
			}
			d.Flush().Release()
		}
	}
	b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "events/s")
	if cpu := cpuTime() - start; cpu > 0 {
		b.ReportMetric(float64(b.N)*n/cpu.Seconds(), "events/cpu-s")
	}
}

// TestAvroMatchesJSON decodes the same events as JSON and as Avro into
// schema.Activity(): the rows must be identical.
func TestAvroMatchesJSON(t *testing.T) {
	const n = 500
	arecs, _ := activityAvroRecords(t, n)
	jrecs := make([]Record, n)
	for i := range jrecs {
		jrecs[i] = Record{Offset: int64(i), Value: ActivityEvent(nil, i)}
	}
	jd, err := NewJSON(schema.Activity(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer jd.Release()
	ad, err := NewAvro(schema.Activity(), activityAvro, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ad.Release()
	if errs := jd.Decode(jrecs); errs != nil {
		t.Fatal(errs)
	}
	if errs := ad.Decode(arecs); errs != nil {
		t.Fatal(errs)
	}
	jr, ar := jd.Flush(), ad.Flush()
	defer jr.Release()
	defer ar.Release()
	if err := validateRecord(ar); err != nil {
		t.Fatal(err)
	}
	jrows, arows := rowsJSON(t, jr), rowsJSON(t, ar)
	for i := range jrows {
		if jrows[i] != arows[i] {
			t.Fatalf("event %d:\njson %s\navro %s", i, jrows[i], arows[i])
		}
	}
}
