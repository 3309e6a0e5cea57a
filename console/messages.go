package console

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Browsing reads with a consumer of its own, assigned to the partitions it
// reads (no group, nothing committed), from the offsets the query names up
// to the end offsets listed when the browse began: records produced during
// the browse are the next browse's. It stops at the first of: every
// partition read to its end, Limit matches (reading forward), browseScan
// records read, browseTime spent, or a second with nothing fetched (the
// tail of a partition may hold only transaction markers, which a consumer
// never sees, so "offset end-1 arrived" cannot be the only end).

// browseQuery is what the messages page asks for.
type browseQuery struct {
	Partition int32  // -1: every partition
	Mode      string // newest, oldest, offset, time
	Offset    int64
	Time      string // a datetime-local value or RFC 3339, UTC
	Search    string
	Limit     int
}

// message is one record as a page shows it.
type message struct {
	Partition int32
	Offset    int64
	Timestamp int64
	Key       shown
	Value     shown
	Headers   []header
	Size      int
	framed    []byte // the raw value, when it has the registry's framing
}

type header struct{ Key, Value string }

// shown is a key or value made fit to print.
type shown struct {
	Text string
	Null bool
	// Kind is "json" (pretty-printed), "text", "binary" (hex) or "".
	Kind string
	// SchemaID is set for the schema registry's wire format (magic 0 and
	// a 4-byte schema id before the payload).
	SchemaID  int32
	HasSchema bool
	Decoded   bool   // decoded through the registry
	Note      string // why it was not
	Truncated bool
}

type browseResult struct {
	Query      browseQuery
	Partitions []int32
	Messages   []message
	// Count is how many messages the browse found: len(Messages), or,
	// streamed, how many went to emit.
	Count   int
	Scanned int
	Stopped string
	Took    time.Duration
	// emit, when set, gets each match as it is read (a forward browse
	// streamed to the page) instead of Messages keeping it.
	emit func(message)
}

// What one browse may hold: each key and value shown up to maxShown
// (binary as a hex dump of maxShown/4 bytes, about maxShown of text), a
// framed value kept for decoding only up to maxShown, each header value up
// to maxHeaderShown and maxHeaders headers a record; and browseBytes for
// every message kept together, whatever Limit asks. A browse is a GET, so
// any page can make a browser send one (an <img>): it must stay cheap.
const (
	maxShown       = 64 << 10
	maxHeaderShown = 4 << 10
	maxHeaders     = 64
	browseBytes    = 32 << 20
)

func show(b []byte, isKey bool) shown {
	if b == nil {
		return shown{Null: true}
	}
	var sh shown
	if !isKey && len(b) >= 5 && b[0] == 0 {
		// The registry's framing: decode what follows as on its own.
		id := int32(binary.BigEndian.Uint32(b[1:5]))
		if id > 0 {
			sh.SchemaID, sh.HasSchema = id, true
			b = b[5:]
		}
	}
	if len(b) > maxShown {
		b, sh.Truncated = b[:maxShown], true
	}
	switch {
	case !sh.Truncated && json.Valid(b) && (bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) || bytes.HasPrefix(bytes.TrimSpace(b), []byte("["))):
		var out bytes.Buffer
		json.Indent(&out, b, "", "  ")
		sh.Text, sh.Kind = out.String(), "json"
	case utf8.Valid(b):
		sh.Text, sh.Kind = string(b), "text"
	default:
		// A hex dump is about 4.4 times its input.
		if len(b) > maxShown/4 {
			b, sh.Truncated = b[:maxShown/4], true
		}
		sh.Text, sh.Kind = hex.Dump(b), "binary"
	}
	return sh
}

func parseBrowse(q url.Values) (browseQuery, error) {
	b := browseQuery{Partition: -1, Mode: q.Get("mode"), Time: q.Get("time"), Search: q.Get("q"), Limit: DefaultBrowse}
	if b.Mode == "" {
		b.Mode = "newest"
	}
	switch b.Mode {
	case "newest", "oldest", "offset", "time":
	default:
		return b, badInput("mode %q: want newest, oldest, offset or time", b.Mode)
	}
	if v := q.Get("partition"); v != "" && v != "all" {
		p, err := strconv.ParseInt(v, 10, 32)
		if err != nil || p < 0 {
			return b, badInput("partition %q", v)
		}
		b.Partition = int32(p)
	}
	if v := q.Get("offset"); v != "" {
		o, err := strconv.ParseInt(v, 10, 64)
		if err != nil || o < 0 {
			return b, badInput("offset %q", v)
		}
		b.Offset = o
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return b, badInput("limit %q", v)
		}
		b.Limit = min(n, MaxBrowse)
	}
	if b.Mode == "time" {
		if _, err := parseTime(b.Time); err != nil {
			return b, err
		}
	}
	return b, nil
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, strings.TrimSpace(s), time.UTC); err == nil {
			return t, nil
		}
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	return time.Time{}, badInput("time %q: want 2006-01-02T15:04 (UTC), RFC 3339 or Unix milliseconds", s)
}

type messagesData struct {
	Topic      string
	Partitions []int32
	Result     *browseResult
	Browsed    bool
	Streaming  bool // rows and summary are written after the page's head
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	q, err := parseBrowse(r.URL.Query())
	if err != nil {
		s.fail(w, r, "messages of "+topic, err)
		return
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	// A few browses at a time per console, one per person: each may hold
	// browseBytes (browseslots.go).
	release, ok := s.acquireBrowse(ctx, nil)
	if !ok {
		s.refuse(w, r, http.StatusServiceUnavailable, "other browses of this console are still running: try again")
		return
	}
	defer release()
	if q.Mode != "newest" {
		s.streamMessages(ctx, w, r, topic, q)
		return
	}
	res, err := s.browse(ctx, topic, q)
	if err != nil {
		s.fail(w, r, "messages of "+topic, err)
		return
	}
	s.render(w, r, http.StatusOK, "messages", page{Title: "Messages of " + topic, Nav: "topics",
		Data: messagesData{Topic: topic, Partitions: res.Partitions, Result: res}})
}

// The markers a streamed page is cut at: its rows go in place of the
// first, its summary in place of the second.
const (
	rowsMarker    = `<tr hidden id="rows-marker"></tr>`
	summaryMarker = `<p hidden id="summary-marker"></p>`
)

// streamMessages answers a forward browse (oldest, an offset, a time) as
// it reads: the page up to the table's body first, then each matching
// record's row as it arrives (decoded through the registry one by one),
// then the summary and the rest of the page. A browse that reads for
// seconds shows its first rows at once, and stops at its limit as before.
// Newest first cannot stream: it sorts by time after reading.
func (s *Server) streamMessages(ctx context.Context, w http.ResponseWriter, r *http.Request, topic string, q browseQuery) {
	began := time.Now()
	res, from, to, err := s.plan(ctx, topic, q)
	if err != nil {
		s.fail(w, r, "messages of "+topic, err)
		return
	}
	t := s.pages["messages"]
	full, err := s.execute(w, r, "messages", page{Title: "Messages of " + topic, Nav: "topics",
		Data: messagesData{Topic: topic, Partitions: res.Partitions, Result: res, Streaming: true}})
	if err != nil {
		http.Error(w, "template error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	head, rest, ok1 := bytes.Cut(full, []byte(rowsMarker))
	middle, tail, ok2 := bytes.Cut(rest, []byte(summaryMarker))
	if !ok1 || !ok2 {
		http.Error(w, "template error: no stream markers", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // a proxy in front must not hold the rows back
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// A reader that stops reading must not hold the one browse slot:
	// the whole answer has its page's time and a little more.
	rc.SetWriteDeadline(time.Now().Add(requestTimeout + 5*time.Second))
	w.Write(head)
	rc.Flush()
	var row bytes.Buffer
	res.emit = func(m message) {
		if s.reg != nil {
			one := []message{m}
			s.reg.decode(ctx, one)
			m = one[0]
		}
		row.Reset()
		if err := t.ExecuteTemplate(&row, "row", m); err != nil {
			s.log.Error("console: template", "page", "messages", "err", err)
			return
		}
		w.Write(row.Bytes())
		rc.Flush()
	}
	if err := s.read(ctx, topic, q, from, to, res); err != nil {
		res.Stopped = "an error: " + err.Error()
		row.Reset()
		t.ExecuteTemplate(&row, "rowerror", err.Error())
		w.Write(row.Bytes())
	} else if res.Count == 0 {
		io.WriteString(w, `<tr><td colspan="6">No messages.</td></tr>`)
	}
	w.Write(middle)
	res.Took = time.Since(began).Round(time.Millisecond)
	row.Reset()
	t.ExecuteTemplate(&row, "summary", res)
	w.Write(row.Bytes())
	w.Write(tail)
}

func (s *Server) browse(ctx context.Context, topic string, q browseQuery) (*browseResult, error) {
	began := time.Now()
	res, from, to, err := s.plan(ctx, topic, q)
	if err != nil {
		return nil, err
	}
	if err := s.read(ctx, topic, q, from, to, res); err != nil {
		return nil, err
	}
	if q.Mode == "newest" {
		sort.SliceStable(res.Messages, func(i, j int) bool {
			a, b := res.Messages[i], res.Messages[j]
			if a.Timestamp != b.Timestamp {
				return a.Timestamp > b.Timestamp
			}
			if a.Partition != b.Partition {
				return a.Partition < b.Partition
			}
			return a.Offset > b.Offset
		})
		if len(res.Messages) > q.Limit {
			res.Messages = res.Messages[:q.Limit]
		}
	} else {
		sort.SliceStable(res.Messages, func(i, j int) bool {
			a, b := res.Messages[i], res.Messages[j]
			if a.Timestamp != b.Timestamp {
				return a.Timestamp < b.Timestamp
			}
			if a.Partition != b.Partition {
				return a.Partition < b.Partition
			}
			return a.Offset < b.Offset
		})
	}
	res.Count = len(res.Messages)
	if s.reg != nil {
		s.reg.decode(ctx, res.Messages)
	}
	res.Took = time.Since(began).Round(time.Millisecond)
	return res, nil
}

// plan finds where each partition's read begins and ends.
func (s *Server) plan(ctx context.Context, topic string, q browseQuery) (*browseResult, map[int32]int64, map[int32]int64, error) {
	res := &browseResult{Query: q}
	md, err := s.admin(ctx).Metadata(ctx, topic)
	if err != nil {
		return nil, nil, nil, err
	}
	t, ok := md.Topics[topic]
	if !ok || t.Err != nil {
		if t.Err != nil {
			return nil, nil, nil, t.Err
		}
		return nil, nil, nil, errors.New("no such topic")
	}
	res.Partitions = t.Partitions.Numbers()
	var parts []int32
	for _, p := range res.Partitions {
		if q.Partition < 0 || q.Partition == p {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil, nil, nil, badInput("topic %s has no partition %d", topic, q.Partition)
	}
	starts, err := s.admin(ctx).ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, nil, nil, err
	}
	ends, err := s.admin(ctx).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, nil, nil, err
	}
	var byTime kadm.ListedOffsets
	if q.Mode == "time" {
		at, _ := parseTime(q.Time)
		if byTime, err = s.admin(ctx).ListOffsetsAfterMilli(ctx, at.UnixMilli(), topic); err != nil {
			return nil, nil, nil, err
		}
	}
	// Where each partition's read begins and ends.
	from, to := map[int32]int64{}, map[int32]int64{}
	for _, p := range parts {
		so, ok1 := starts.Lookup(topic, p)
		eo, ok2 := ends.Lookup(topic, p)
		if !ok1 || !ok2 || so.Err != nil || eo.Err != nil {
			continue // a partition without a leader now: nothing to read
		}
		start, end := so.Offset, eo.Offset
		var at int64
		switch q.Mode {
		case "oldest":
			at = start
		case "offset":
			at = max(q.Offset, start)
		case "time":
			at = end
			if o, ok := byTime.Lookup(topic, p); ok && o.Err == nil && o.Offset >= 0 {
				at = o.Offset
			}
		case "newest":
			back := int64(q.Limit)
			if q.Search != "" {
				back = int64(browseScan / len(parts))
			}
			at = max(start, end-back)
		}
		if at < end {
			from[p], to[p] = at, end
		}
	}
	return res, from, to, nil
}

// read consumes [from[p], to[p]) of each partition into res.
func (s *Server) read(ctx context.Context, topic string, q browseQuery, from, to map[int32]int64, res *browseResult) error {
	if len(from) == 0 {
		res.Stopped = "nothing to read: no records from there"
		return nil
	}
	assign := map[int32]kgo.Offset{}
	for p, o := range from {
		assign[p] = kgo.NewOffset().At(o)
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(s.cfg.Seeds...),
		kgo.ClientID("tributary-console"),
		kgo.DialTimeout(5 * time.Second),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}),
		kgo.FetchMaxWait(250 * time.Millisecond),
		kgo.FetchMaxBytes(8 << 20),
	}, s.browseOpts(ctx)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	// Newest first keeps the Limit newest matches in a heap while reading,
	// not every match until the end.
	var newest *newestHeap
	if q.Mode == "newest" {
		newest = &newestHeap{}
		defer func() { res.Messages = newest.ms }()
	}
	kept := 0 // bytes of the messages kept
	needle := []byte(strings.ToLower(q.Search))
	match := func(r *kgo.Record) bool {
		if len(needle) == 0 {
			return true
		}
		if containsFold(r.Key, needle) || containsFold(r.Value, needle) {
			return true
		}
		for _, h := range r.Headers {
			if containsFold([]byte(h.Key), needle) || containsFold(h.Value, needle) {
				return true
			}
		}
		return false
	}
	left := len(from)
	done := map[int32]bool{}
	deadline := time.Now().Add(browseTime)
	forward := q.Mode != "newest"
	for left > 0 {
		if time.Now().After(deadline) {
			res.Stopped = fmt.Sprintf("the time limit (%s)", browseTime)
			return nil
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollRecords(pctx, 1000)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var fatal error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && fatal == nil {
				fatal = err
			}
		})
		if fatal != nil {
			return fatal
		}
		if fs.NumRecords() == 0 {
			res.Stopped = "the end: nothing more arrived within a second"
			return nil
		}
		for _, r := range fs.Records() {
			p := r.Partition
			if done[p] || r.Offset >= to[p] {
				continue
			}
			res.Scanned++
			if match(r) {
				m := toMessage(r)
				kept += m.cost()
				if newest == nil {
					res.Count++
					if res.emit != nil {
						res.emit(m)
					} else {
						res.Messages = append(res.Messages, m)
					}
				} else {
					heap.Push(newest, m)
					for newest.Len() > q.Limit || kept > browseBytes && newest.Len() > 1 {
						kept -= heap.Pop(newest).(message).cost()
					}
				}
			}
			if newest == nil && kept > browseBytes {
				res.Stopped = fmt.Sprintf("the size limit (%s of messages)", humanBytes(browseBytes))
				return nil
			}
			if r.Offset+1 >= to[p] {
				done[p] = true
				left--
			}
			if forward && res.Count >= q.Limit {
				res.Stopped = fmt.Sprintf("the limit of %d messages", q.Limit)
				return nil
			}
			if res.Scanned >= browseScan {
				res.Stopped = fmt.Sprintf("the scan limit (%d records read)", browseScan)
				return nil
			}
		}
	}
	res.Stopped = "the end of every partition"
	return nil
}

func containsFold(b, lowerNeedle []byte) bool {
	if len(b) < len(lowerNeedle) {
		return false
	}
	return bytes.Contains(bytes.ToLower(b), lowerNeedle)
}

func toMessage(r *kgo.Record) message {
	m := message{Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(),
		Key: show(r.Key, true), Value: show(r.Value, false), Size: len(r.Key) + len(r.Value)}
	if m.Value.HasSchema {
		if len(r.Value) <= maxShown {
			m.framed = r.Value
		} else {
			m.Value.Note = fmt.Sprintf("not decoded: over %s", humanBytes(maxShown))
		}
	}
	for i, h := range r.Headers {
		m.Size += len(h.Key) + len(h.Value)
		if i == maxHeaders {
			m.Headers = append(m.Headers, header{Key: "…", Value: fmt.Sprintf("%d more headers not shown", len(r.Headers)-maxHeaders)})
		}
		if i >= maxHeaders {
			continue
		}
		k, v := h.Key, h.Value
		if len(k) > maxHeaderShown {
			k = strings.ToValidUTF8(k[:maxHeaderShown], "") + "…"
		}
		cut := len(v) > maxHeaderShown
		if cut {
			v = v[:maxHeaderShown]
		}
		text := show(v, true).Text
		if cut {
			text += "… (truncated)"
		}
		m.Headers = append(m.Headers, header{Key: k, Value: text})
	}
	return m
}

// cost is about the bytes a message holds.
func (m message) cost() int {
	n := len(m.Key.Text) + len(m.Value.Text) + len(m.framed) + 64
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// newestHeap holds the newest messages, the oldest on top, to drop it.
type newestHeap struct{ ms []message }

func (h *newestHeap) Len() int { return len(h.ms) }
func (h *newestHeap) Less(i, j int) bool {
	a, b := h.ms[i], h.ms[j]
	if a.Timestamp != b.Timestamp {
		return a.Timestamp < b.Timestamp
	}
	if a.Partition != b.Partition {
		return a.Partition > b.Partition
	}
	return a.Offset < b.Offset
}
func (h *newestHeap) Swap(i, j int) { h.ms[i], h.ms[j] = h.ms[j], h.ms[i] }
func (h *newestHeap) Push(x any)    { h.ms = append(h.ms, x.(message)) }
func (h *newestHeap) Pop() any {
	m := h.ms[len(h.ms)-1]
	h.ms = h.ms[:len(h.ms)-1]
	return m
}

// manualPartition marks a record whose Partition the user chose.
type manualPartition struct{}

// choosePartitioner sends a record to the partition the user chose, and
// any other by Kafka's default rule (murmur2 of the key; sticky without
// one), as a Java producer would.
type choosePartitioner struct{}

func (choosePartitioner) ForTopic(t string) kgo.TopicPartitioner {
	return choosing{kgo.StickyKeyPartitioner(nil).ForTopic(t)}
}

type choosing struct{ kgo.TopicPartitioner }

func (c choosing) RequiresConsistency(r *kgo.Record) bool {
	return r.Context != nil && r.Context.Value(manualPartition{}) != nil || c.TopicPartitioner.RequiresConsistency(r)
}

func (c choosing) Partition(r *kgo.Record, n int) int {
	if r.Context != nil && r.Context.Value(manualPartition{}) != nil {
		return int(r.Partition)
	}
	return c.TopicPartitioner.Partition(r, n)
}

func (c choosing) OnNewBatch() {
	if o, ok := c.TopicPartitioner.(kgo.TopicPartitionerOnNewBatch); ok {
		o.OnNewBatch()
	}
}

// parseHeaders reads "key: value" (or key=value) lines.
func parseHeaders(text string) ([]kgo.RecordHeader, error) {
	var hs []kgo.RecordHeader
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		i := strings.IndexAny(line, ":=")
		if i <= 0 || strings.TrimSpace(line[:i]) == "" {
			return nil, badInput("header line %d: %q is not key: value", n+1, line)
		}
		k, v := line[:i], line[i+1:]
		hs = append(hs, kgo.RecordHeader{Key: strings.TrimSpace(k), Value: []byte(strings.TrimSpace(v))})
	}
	return hs, nil
}

func (s *Server) produce(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	rec := &kgo.Record{Topic: topic, Value: []byte(r.PostForm.Get("value"))}
	if k := r.PostForm.Get("key"); k != "" {
		rec.Key = []byte(k)
	}
	hs, err := parseHeaders(r.PostForm.Get("headers"))
	if err != nil {
		s.fail(w, r, "produce", err)
		return
	}
	rec.Headers = hs
	ctx, cancel := ctxOf(r)
	defer cancel()
	if v := strings.TrimSpace(r.PostForm.Get("partition")); v != "" && v != "any" {
		p, err := strconv.ParseInt(v, 10, 32)
		if err != nil || p < 0 {
			s.fail(w, r, "produce", badInput("partition %q", v))
			return
		}
		rec.Partition = int32(p)
		rec.Context = context.WithValue(ctx, manualPartition{}, true)
		md, err := s.admin(ctx).Metadata(ctx, topic)
		if err != nil {
			s.fail(w, r, "produce", err)
			return
		}
		if t, ok := md.Topics[topic]; !ok || int(p) >= len(t.Partitions) {
			s.fail(w, r, "produce", badInput("topic %s has no partition %d", topic, p))
			return
		}
	}
	if err := s.client(ctx).ProduceSync(ctx, rec).FirstErr(); err != nil {
		s.fail(w, r, "produce to "+topic, err)
		return
	}
	s.log.Info("console: produced a message", "topic", topic, "partition", rec.Partition, "offset", rec.Offset)
	note := fmt.Sprintf("produced to partition %d at offset %d", rec.Partition, rec.Offset)
	http.Redirect(w, r, fmt.Sprintf("/topics/%s/messages?partition=%d&mode=offset&offset=%d&%s", topic, rec.Partition, rec.Offset, s.noteQuery(note)), http.StatusSeeOther)
}
