package tail

import (
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
)

// batch is the lines of one produce call.
type batch struct {
	msgs  []kafka.Message
	lines int
	bytes int
	full  bool
	// next is, per file with lines in the batch, the offset after its last
	// one: its acknowledged position once the batch is acknowledged.
	next map[*file]int64
}

// fill reads new lines from every file, in turn, into a batch of at most
// BatchLines lines or BatchBytes bytes.
func (t *Tailer) fill() *batch {
	b := &batch{next: map[*file]int64{}}
	now := time.Now()
	for _, f := range t.readOrder() {
		if b.full {
			break
		}
		t.poll(f, now)
		t.read(f, b, now)
		if f.gone.IsZero() || !f.atEnd() || !t.due(f, now) {
			continue
		}
		// Rotated away, read to its end and quiet for RotateWait: its
		// partial last line will never get a newline, so it is sent as it
		// is rather than lost.
		f.sp.flush(func(l *line) bool { return t.emit(f, l, b, now) })
	}
	t.rr++
	return b
}

// readOrder is the files in the order fill reads them: rotated-away files
// first, their lines being older than the new files', then the others
// starting one further each round, so that no file starves when the batch
// fills before the last one.
func (t *Tailer) readOrder() []*file {
	var gone, live []*file
	for _, in := range t.inputs {
		for _, f := range in.order {
			if f.gone.IsZero() {
				live = append(live, f)
			} else {
				gone = append(gone, f)
			}
		}
	}
	if len(live) > 0 {
		k := t.rr % len(live)
		live = append(live[k:], live[:k]...)
	}
	return append(gone, live...)
}

// read feeds the file's new bytes to its splitter until the batch is full
// or the file's end.
func (t *Tailer) read(f *file, b *batch, now time.Time) {
	emit := func(l *line) bool { return t.emit(f, l, b, now) }
	for !b.full && f.sp.pos < f.size {
		n, err := f.f.ReadAt(t.buf[:min(int64(len(t.buf)), f.size-f.sp.pos)], f.sp.pos)
		if n == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				t.m.errors.WithLabelValues(f.in.Name, ReasonRead).Inc()
				t.cfg.Logger.Warn("tracker/tail: reading", "file", f.path, "err", err)
			}
			return
		}
		f.sp.feed(t.buf[:n], emit)
	}
}

// emit turns a line into a record of the batch and says whether the batch
// has room for another line.
func (t *Tailer) emit(f *file, l *line, b *batch, now time.Time) bool {
	in := f.in
	in.read.Inc()
	if l.cut {
		t.m.errors.WithLabelValues(in.Name, ReasonLineTooLong).Inc()
	}
	p := in.parse(l.data, now)
	topic := in.Topic
	if p.reason != "" {
		t.m.errors.WithLabelValues(in.Name, p.reason).Inc()
		topic = in.Topic + ".invalid"
	}
	if !p.skip && (p.reason == "" || in.SendInvalid) {
		hs := []kafka.Header{
			{Key: HeaderFile, Value: []byte(f.path)},
			{Key: HeaderOffset, Value: strconv.AppendInt(nil, l.offset, 10)},
		}
		if l.cut {
			hs = append(hs, kafka.Header{Key: HeaderCut, Value: []byte("true")})
		}
		if p.reason != "" {
			hs = append(hs, kafka.Header{Key: HeaderError, Value: []byte(p.reason)})
		}
		b.msgs = append(b.msgs, kafka.Message{Topic: topic, Key: p.key, Value: p.value, Time: p.time, Headers: hs, WriterData: in})
	}
	b.next[f] = l.next
	b.lines++
	b.bytes += len(l.data)
	b.full = b.lines >= t.cfg.BatchLines || b.bytes >= t.cfg.BatchBytes
	return !b.full
}

// commit moves each file's acknowledged position past its lines of the
// acknowledged batch, and refreshes the position and lag gauges.
func (t *Tailer) commit(b *batch) {
	for f, next := range b.next {
		f.acked = next
		t.dirty = true
	}
	for _, in := range t.inputs {
		for _, f := range in.order {
			t.m.position.WithLabelValues(in.Name, f.path).Set(float64(f.acked))
			t.m.lag.WithLabelValues(in.Name, f.path).Set(float64(max(f.size-f.acked, 0)))
		}
		t.m.files.WithLabelValues(in.Name).Set(float64(len(in.order)))
	}
}
