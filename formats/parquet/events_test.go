package parquet

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// event is an activity event as the benchmarks write it: the Segment
// fields of the standard schema with the context flattened into columns.
// As the JSON a tracker receives (jsonSize: nested context, ISO
// timestamps) it is about 400 bytes.
type event struct {
	Type           string   `json:"type"`
	Event          string   `json:"event"`
	MessageID      string   `json:"messageId"`
	AnonymousID    string   `json:"anonymousId"`
	UserID         *string  `json:"userId"`
	Timestamp      int64    `json:"timestamp"`
	SentAt         int64    `json:"sentAt"`
	ReceivedAt     int64    `json:"receivedAt"`
	IP             string   `json:"context_ip"`
	Locale         string   `json:"context_locale"`
	UserAgent      string   `json:"context_userAgent"`
	PageURL        string   `json:"context_page_url"`
	PagePath       string   `json:"context_page_path"`
	PageReferrer   string   `json:"context_page_referrer"`
	PageTitle      string   `json:"context_page_title"`
	LibraryName    string   `json:"context_library_name"`
	LibraryVersion string   `json:"context_library_version"`
	Properties     string   `json:"properties"`
	Revenue        *float64 `json:"revenue"`
	Count          int32    `json:"count"`
}

var eventSchema = arrow.NewSchema([]arrow.Field{
	{Name: "type", Type: arrow.BinaryTypes.String},
	{Name: "event", Type: arrow.BinaryTypes.String},
	{Name: "messageId", Type: arrow.BinaryTypes.String},
	{Name: "anonymousId", Type: arrow.BinaryTypes.String},
	{Name: "userId", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	{Name: "sentAt", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	{Name: "receivedAt", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	{Name: "context_ip", Type: arrow.BinaryTypes.String},
	{Name: "context_locale", Type: arrow.BinaryTypes.String},
	{Name: "context_userAgent", Type: arrow.BinaryTypes.String},
	{Name: "context_page_url", Type: arrow.BinaryTypes.String},
	{Name: "context_page_path", Type: arrow.BinaryTypes.String},
	{Name: "context_page_referrer", Type: arrow.BinaryTypes.String},
	{Name: "context_page_title", Type: arrow.BinaryTypes.String},
	{Name: "context_library_name", Type: arrow.BinaryTypes.String},
	{Name: "context_library_version", Type: arrow.BinaryTypes.String},
	{Name: "properties", Type: arrow.BinaryTypes.String},
	{Name: "revenue", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "count", Type: arrow.PrimitiveTypes.Int32},
}, nil)

var (
	eventNames = []string{"Page Viewed", "Product Viewed", "Product Added", "Checkout Started", "Order Completed",
		"Signed Up", "Signed In", "Search Performed", "Video Played", "Link Clicked"}
	locales    = []string{"en-US", "en-GB", "de-DE", "fr-FR", "ja-JP", "pt-BR", "es-ES"}
	userAgents = []string{
		"Mozilla/5.0 (Windows NT 10.0) Chrome/120.0",
		"Mozilla/5.0 (Macintosh) Safari/605.1.15",
		"Mozilla/5.0 (iPhone) Mobile/15E148",
		"Mozilla/5.0 (X11; Linux) Firefox/121.0",
		"Mozilla/5.0 (Android 14) Chrome/120.0",
	}
	paths = []string{"/", "/pricing", "/docs/getting-started", "/blog/2024/streaming", "/products/widget", "/cart", "/checkout", "/search"}
)

// eventGen generates deterministic events: the same seed, the same events.
type eventGen struct {
	r  *rand.Rand
	n  int64
	ts int64
}

func newEventGen(seed uint64) *eventGen {
	return &eventGen{r: rand.New(rand.NewPCG(seed, 0x7472696275746172)), ts: 1700000000000}
}

func (g *eventGen) uuid() string {
	a, b := g.r.Uint64(), g.r.Uint64()
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, a>>16&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
}

func (g *eventGen) next() event {
	g.n++
	g.ts += int64(g.r.IntN(20))
	r := g.r
	anon := fmt.Sprintf("a%016x", uint64(r.IntN(100000))*0x9e3779b97f4a7c15)
	var user *string
	if r.IntN(10) < 7 {
		u := "user-" + strconv.Itoa(r.IntN(50000))
		user = &u
	}
	var revenue *float64
	name := eventNames[r.IntN(len(eventNames))]
	if name == "Order Completed" {
		v := float64(r.IntN(100000)) / 100
		revenue = &v
	}
	path := paths[r.IntN(len(paths))]
	q := ""
	if path == "/search" {
		q = "?q=term" + strconv.Itoa(r.IntN(1000))
	}
	typ := "track"
	if name == "Page Viewed" {
		typ = "page"
	}
	return event{
		Type: typ, Event: name, MessageID: g.uuid(), AnonymousID: anon, UserID: user,
		Timestamp: g.ts, SentAt: g.ts + int64(r.IntN(50)), ReceivedAt: g.ts + 50 + int64(r.IntN(200)),
		IP:     fmt.Sprintf("203.0.%d.%d", r.IntN(256), r.IntN(256)),
		Locale: locales[r.IntN(len(locales))], UserAgent: userAgents[r.IntN(len(userAgents))],
		PageURL: "https://ex.com" + path + q, PagePath: path,
		PageReferrer: "https://google.com/?q=" + strconv.Itoa(r.IntN(5000)),
		PageTitle:    path[1:], LibraryName: "analytics.js", LibraryVersion: "4.1." + strconv.Itoa(r.IntN(3)),
		Properties: fmt.Sprintf(`{"sku":"S%05d","price":%d.%02d}`, r.IntN(20000), r.IntN(500), r.IntN(100)),
		Revenue:    revenue, Count: int32(r.IntN(10)),
	}
}

// eventBatch builds one Arrow record of events.
func eventBatch(mem memory.Allocator, evs []event) arrow.Record {
	b := array.NewRecordBuilder(mem, eventSchema)
	defer b.Release()
	str := func(i int) *array.StringBuilder { return b.Field(i).(*array.StringBuilder) }
	ts := func(i int) *array.TimestampBuilder { return b.Field(i).(*array.TimestampBuilder) }
	for i := range b.Fields() {
		b.Field(i).Reserve(len(evs))
	}
	for _, e := range evs {
		str(0).Append(e.Type)
		str(1).Append(e.Event)
		str(2).Append(e.MessageID)
		str(3).Append(e.AnonymousID)
		if e.UserID != nil {
			str(4).Append(*e.UserID)
		} else {
			str(4).AppendNull()
		}
		ts(5).Append(arrow.Timestamp(e.Timestamp))
		ts(6).Append(arrow.Timestamp(e.SentAt))
		ts(7).Append(arrow.Timestamp(e.ReceivedAt))
		str(8).Append(e.IP)
		str(9).Append(e.Locale)
		str(10).Append(e.UserAgent)
		str(11).Append(e.PageURL)
		str(12).Append(e.PagePath)
		str(13).Append(e.PageReferrer)
		str(14).Append(e.PageTitle)
		str(15).Append(e.LibraryName)
		str(16).Append(e.LibraryVersion)
		str(17).Append(e.Properties)
		if e.Revenue != nil {
			b.Field(18).(*array.Float64Builder).Append(*e.Revenue)
		} else {
			b.Field(18).AppendNull()
		}
		b.Field(19).(*array.Int32Builder).Append(e.Count)
	}
	return b.NewRecord()
}
