package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/tributary-io/tributary/loader"
)

func printManifest(w io.Writer, target string, m *loader.Manifest) {
	if m.Superseded != "" {
		fmt.Fprintf(w, "run %s (%s): 0 records: its ranges were already committed by run %s; closed with nothing loaded\n", m.Run, m.Kind, m.Superseded)
		return
	}
	fmt.Fprintf(w, "run %s (%s): %d records, %d rows in %d files (%s), %d bad records, committed %s\n",
		m.Run, m.Kind, m.Records, m.Rows, len(m.Files), humanBytes(m.Bytes), m.Bad, m.Committed.Format(time.RFC3339))
	for _, e := range m.Errors {
		fmt.Fprintf(w, "  bad records: %s/%s (%d)\n", target, e.Path, e.Records)
	}
	for _, g := range m.Gaps {
		fmt.Fprintf(w, "  gap: %s/%d offsets %d to %d: %s\n", g.Topic, g.Partition, g.From, g.To-1, g.Reason)
	}
	if len(m.Completed) > 0 {
		fmt.Fprintf(w, "  complete hours: %d (_SUCCESS written)\n", len(m.Completed))
	}
	if m.BrokerCommit != "" {
		fmt.Fprintf(w, "  warning: offsets not committed to the broker (retried next run): %s\n", m.BrokerCommit)
	}
}

func printStatus(w io.Writer, st *loader.Status) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "TOPIC\tPARTITION\tCOMMITTED\tHIGH-WATERMARK\tLAG\tLAST-STABLE-OFFSET\n")
	for _, p := range st.Partitions {
		if p.Err != nil {
			fmt.Fprintf(tw, "%s\t%d\t%d\t-\t-\t(%v)\n", p.Topic, p.Partition, p.Committed, p.Err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", p.Topic, p.Partition, p.Committed, p.HighWatermark, p.Lag, offsetOrDash(p.LastStable))
	}
	tw.Flush()
	if len(st.Partitions) == 0 {
		fmt.Fprintf(w, "job %q has loaded nothing yet\n", st.Job)
	}
	if st.Last != nil {
		fmt.Fprintf(w, "last run: %s (%s) committed %s: %d rows, %d files, %d bad records\n",
			st.Last.Run, st.Last.Kind, st.Last.Committed.Format(time.RFC3339), st.Last.Rows, len(st.Last.Files), st.Last.Bad)
	}
	if st.Open != nil {
		fmt.Fprintf(w, "open run: %s, %d units (resumed by the next `tributary load run`)\n", st.Open.Run, len(st.Open.Units))
	}
	fmt.Fprintf(w, "incomplete hours (no _SUCCESS yet; watermark %s): %d\n", st.State.Watermark.Format(time.RFC3339), len(st.OpenHours))
	for _, h := range st.OpenHours {
		fmt.Fprintf(w, "  %s (ends %s)\n", h.Dir, h.End.Format(time.RFC3339))
	}
}

// showProgress prints a progress line on a terminal until the returned
// function is called; elsewhere it logs progress every 10 seconds.
func showProgress(w io.Writer, p *loader.Progress) func() {
	tty := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	every := 10 * time.Second
	if tty {
		every = 500 * time.Millisecond
	}
	stop := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				if tty {
					fmt.Fprintln(w)
				}
				return
			case <-t.C:
			}
			n, b, total := p.Records.Load(), p.Bytes.Load(), p.Total.Load()
			secs := time.Since(start).Seconds()
			rate, mbs := float64(n)/secs, float64(b)/secs/1e6
			eta := "-"
			if rate > 0 && total > n {
				eta = (time.Duration(float64(total-n)/rate) * time.Second).Round(time.Second).String()
			}
			if tty {
				fmt.Fprintf(w, "\r%d/%d records, %.0f records/s, %.1f MB/s, ETA %s   ", n, total, rate, mbs, eta)
			} else {
				slog.Info("load progress", "records", n, "planned", total, "records_per_sec", int64(rate), "mb_per_sec", mbs, "eta", eta)
			}
		}
	}()
	return func() { close(stop); <-finished }
}
