package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

// printHeldBack is group describe's table of the partitions whose last
// stable offset an open transaction holds below the log end. LAG counts to
// the log end, as Kafka's tool does, so a read_committed consumer (the
// loader) that is as far as it can get still shows a lag there; this says
// why, and how much of it is readable now. Nothing is printed while every
// transaction is decided.
func printHeldBack(w io.Writer, rows []kafkacli.PartitionLag) error {
	var held []kafkacli.PartitionLag
	for _, r := range rows {
		if r.Stable >= 0 && r.LogEnd >= 0 && r.Stable < r.LogEnd {
			held = append(held, r)
		}
	}
	if len(held) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Open transactions hold these partitions back; read_committed consumers stop at the last stable offset:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCURRENT-OFFSET\tLAST-STABLE-OFFSET\tLOG-END-OFFSET\tSTABLE-LAG")
	for _, r := range held {
		lag := "-"
		if r.Committed >= 0 {
			lag = strconv.FormatInt(max(r.Stable-r.Committed, 0), 10)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%s\n", r.Topic, r.Partition, offsetOrDash(r.Committed), r.Stable, r.LogEnd, lag)
	}
	return tw.Flush()
}
