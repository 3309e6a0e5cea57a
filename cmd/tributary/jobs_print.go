package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tributary-io/tributary/jobs"
)

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printJobs(w io.Writer, o *jobs.Overview) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSCHEDULE\tSTATE\tNEXT\tLAST RUN\tOUTCOME\tRECORDS\tLAG")
	for _, j := range o.Jobs {
		state := j.State
		if j.Paused != "" {
			state += " (paused: " + j.Paused + ")"
		}
		last, outcome, records := "-", "-", "-"
		if r := j.Last; r != nil {
			last = r.Started.Local().Format("2006-01-02 15:04:05")
			outcome, records = r.Outcome, fmt.Sprint(r.Records)
		}
		if j.Current != nil {
			outcome = j.Current.Outcome
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.Name, orDash(j.Schedule), state, when(j.Next), last, outcome, records, lagText(j.Lag))
	}
	tw.Flush()
	if o.FileErr != "" {
		fmt.Fprintf(w, "\nthe jobs file's latest version was not applied (every job keeps its schedule):\n  %s\n", o.FileErr)
	}
	if len(o.Problems) > 0 {
		fmt.Fprintln(w, "\nrejected definitions (the jobs keep their previous ones):")
		for _, p := range o.Problems {
			fmt.Fprintf(w, "  %s\n", p.Error())
		}
	}
	for _, j := range o.Jobs {
		if j.Skipped != "" {
			fmt.Fprintf(w, "%s: last scheduled time skipped: %s\n", j.Name, j.Skipped)
		}
	}
}

func printRuns(w io.Writer, r *jobs.RunsResponse) {
	if r.Error != "" {
		fmt.Fprintf(w, "warning: %s\n", r.Error)
	}
	if len(r.Runs) == 0 {
		fmt.Fprintf(w, "job %s has no runs yet\n", r.Job)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tTRIGGER\tSTARTED\tDURATION\tOUTCOME\tATTEMPTS\tRECORDS\tFILES\tBYTES\tBAD\tRANGES")
	for _, run := range r.Runs {
		dur := "-"
		if !run.Ended.IsZero() {
			dur = run.Ended.Sub(run.Started).Round(100 * time.Millisecond).String()
		} else {
			dur = time.Since(run.Started).Round(time.Second).String() + "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%d\t%s\n", run.ID, run.Trigger, run.Started.Local().Format("2006-01-02 15:04:05"),
			dur, run.Outcome, len(run.Attempts), run.Records, run.Files, humanBytes(run.Bytes), run.Bad, rangesText(run))
	}
	tw.Flush()
	for _, run := range r.Runs {
		if run.Error != "" {
			fmt.Fprintf(w, "%s: %s\n", run.ID, run.Error)
		}
		for _, a := range run.Attempts {
			for _, app := range a.Applications {
				fmt.Fprintf(w, "%s: YARN %s\n", run.ID, applicationText(app))
			}
		}
		for _, m := range run.Maintenance {
			fmt.Fprintf(w, "%s: table %s: compacted %d files into %d, expired %d snapshots (%d files deleted), removed %d orphans\n",
				run.ID, m.Table, m.Compacted, m.Written, m.Expired, m.DeletedFiles, m.Orphans)
		}
	}
}

// applicationText is one line about a YARN application of a run.
func applicationText(app jobs.Application) string {
	s := fmt.Sprintf("%s %s", app.ID, app.State)
	if app.FinalStatus != "" {
		s += "/" + app.FinalStatus
	}
	s += fmt.Sprintf(", %d worker containers", app.Containers)
	if !app.FirstContainer.IsZero() {
		s += fmt.Sprintf(" (first running %s after submission)", app.FirstContainer.Sub(app.Submitted).Round(100*time.Millisecond))
	}
	if len(app.ContainerIDs) > 0 {
		s += ": " + strings.Join(app.ContainerIDs, " ")
	}
	if app.Logs != "" {
		s += "; logs: " + app.Logs
	}
	if len(app.ContainerLogs) > 0 {
		s += "; container logs: " + strings.Join(app.ContainerLogs, " ")
	}
	return s
}

// rangesText is a run's offsets per topic: "events 0-4: 1200 records".
func rangesText(r *jobs.Record) string {
	type agg struct {
		parts   map[int32]bool
		records int64
	}
	by := map[string]*agg{}
	for _, l := range r.Loads {
		for _, rg := range l.Ranges {
			a := by[rg.Topic]
			if a == nil {
				a = &agg{parts: map[int32]bool{}}
				by[rg.Topic] = a
			}
			a.parts[rg.Partition] = true
			a.records += rg.To - rg.From
		}
	}
	if len(by) == 0 {
		if len(r.Maintenance) > 0 {
			return "maintenance (below)"
		}
		if r.Outcome == jobs.Succeeded {
			return "nothing new"
		}
		return "-"
	}
	var out []string
	for t, a := range by {
		out = append(out, fmt.Sprintf("%s (%d partitions, %d offsets)", t, len(a.parts), a.records))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func lagText(lag map[string]int64) string {
	if len(lag) == 0 {
		return "-"
	}
	var out []string
	for t, n := range lag {
		out = append(out, fmt.Sprintf("%s=%d", t, n))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func when(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	d := time.Until(*t).Round(time.Second)
	if d < 0 {
		return "now"
	}
	return t.Local().Format("15:04:05") + " (in " + d.String() + ")"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
