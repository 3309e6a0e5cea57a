package tail

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// Producer delivers records. WriteMessages returns nil only once the broker
// acknowledged every record (a kafka.Writer with RequiredAcks: RequireAll,
// as NewWriter makes); on an error, kafka.WriteErrors says which records
// failed.
type Producer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Tailer follows the files of its inputs; see the package doc.
type Tailer struct {
	cfg    Config
	p      Producer
	pos    *positions
	found  bool // the positions file existed: not the very first start
	inputs []*input
	m      *metrics
	buf    []byte

	// known are the positions file's entries for live content, until the
	// first scan matched them to files; ghosts are content that left its
	// inode (truncated, rewritten, or not found after a restart), kept so a
	// copy of it continues where it was.
	known  []position
	ghosts []position

	dirty    bool // positions changed since the last save
	lastScan time.Time
	scanned  bool
	rr       int  // rotates the reading order
	warned   bool // a produce failure was logged; the next success says so
}

// input is an Input with its followed files.
type input struct {
	Input
	files map[string]*file // by fileKey
	order []*file          // files in discovery order, for fair reading
	// held are the new files the last scan held back as possibly a copy
	// still being made (see open).
	held map[string]bool
	// read and sent are the input's counters, looked up once: they are
	// counted per line.
	read, sent prometheus.Counter
}

// New checks cfg, locks and reads the positions file. The tailer does
// nothing until Run.
func New(cfg Config, p Producer) (*Tailer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.fill()
	pos, entries, found, err := openPositions(cfg.PositionsFile)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		pos.close()
		return nil, err
	}
	t := &Tailer{cfg: cfg, p: p, pos: pos, found: found, m: m, buf: make([]byte, 256<<10)}
	for _, in := range cfg.Inputs {
		t.inputs = append(t.inputs, &input{Input: in, files: map[string]*file{}, held: map[string]bool{},
			read: m.read.WithLabelValues(in.Name), sent: m.sent.WithLabelValues(in.Name)})
	}
	for _, e := range entries {
		if t.input(e.Input) == nil {
			continue // an input no longer configured: its positions are dropped
		}
		if e.Orphaned != 0 {
			t.ghosts = append(t.ghosts, e)
		} else {
			t.known = append(t.known, e)
		}
	}
	return t, nil
}

func (t *Tailer) input(name string) *input {
	for _, in := range t.inputs {
		if in.Name == name {
			return in
		}
	}
	return nil
}

// Run follows the files until ctx ends, then closes them and releases the
// positions file. It returns ctx's error. Run is called once.
//
// When ctx ends, the produce call in flight may still finish, for up to
// stopGrace, and its positions are saved: a clean stop resends nothing.
func (t *Tailer) Run(ctx context.Context) error {
	defer t.close()
	sendCtx, cancelSend := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSend()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(stopGrace, cancelSend) })()
	for {
		if !t.scanned || time.Since(t.lastScan) >= t.cfg.ScanInterval {
			t.scan()
		}
		b := t.fill()
		if len(b.msgs) > 0 {
			if err := t.send(ctx, sendCtx, b.msgs); err != nil {
				return err
			}
		}
		t.commit(b)
		t.reap()
		t.save()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !b.full {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(t.cfg.PollInterval):
			}
		}
	}
}

// stopGrace is how long a stopping tailer waits for the broker to
// acknowledge the batch in flight.
const stopGrace = 10 * time.Second

func (t *Tailer) close() {
	for _, in := range t.inputs {
		for _, f := range in.order {
			f.f.Close()
		}
	}
	t.pos.close()
}

// save writes the positions file if anything changed; a failure is
// retried after the next batch (the positions on disk are older, which
// means duplicates after a crash, never loss).
func (t *Tailer) save() {
	if !t.dirty {
		return
	}
	var entries []position
	for _, in := range t.inputs {
		for _, f := range in.order {
			entries = append(entries, f.position())
		}
	}
	entries = append(entries, t.known...)
	entries = append(entries, t.ghosts...)
	if err := t.pos.save(entries); err != nil {
		t.m.errors.WithLabelValues("", ReasonCheckpoint).Inc()
		t.cfg.Logger.Error("tracker/tail: writing the positions file", "file", t.cfg.PositionsFile, "err", err)
		return
	}
	t.dirty = false
}

func (t *Tailer) logf(in *input, msg string, args ...any) {
	t.cfg.Logger.Info(fmt.Sprintf("tracker/tail: "+msg, args...), "input", in.Name)
}
