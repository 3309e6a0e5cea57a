package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary-io/tributary/tracker"
	"github.com/tributary-io/tributary/tracker/deliver"
	"github.com/tributary-io/tributary/tracker/spool"
)

// trackerSinkOptions is what the tracker command knows about delivery.
type trackerSinkOptions struct {
	Bootstrap     []string
	SpoolDir      string
	SpoolMaxBytes int64
	Ack           tracker.AckMode
	Registerer    prometheus.Registerer
}

// newTrackerSink is where the collector meets delivery: tracker/deliver's
// spool + kafka-go Sink. ready reports a spool too full to take a batch
// (the /readyz of the admin endpoint).
func newTrackerSink(o trackerSinkOptions, logger *slog.Logger) (sink tracker.Sink, ready func() error, err error) {
	s, err := deliver.New(deliver.Config{
		Brokers:    o.Bootstrap,
		Ack:        o.Ack,
		SpoolDir:   o.SpoolDir,
		Spool:      spool.Options{MaxBytes: o.SpoolMaxBytes},
		Registerer: o.Registerer,
		Logger:     logger,
	})
	if err != nil {
		return nil, nil, err
	}
	ready = func() error {
		if o.Ack == tracker.AckBroker || o.SpoolMaxBytes <= 0 {
			return nil
		}
		// Room for at least one full batch (500 KB by default).
		if st := s.Spool().Stats(); st.Bytes+(1<<20) > o.SpoolMaxBytes {
			return fmt.Errorf("spool full: %d of %d bytes", st.Bytes, o.SpoolMaxBytes)
		}
		return nil
	}
	return s, ready, nil
}

var errNoBootstrap = errors.New("--bootstrap is empty")

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
