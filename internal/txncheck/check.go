// Package txncheck checks what read_committed consumers read against the
// transactions producers ran, Jepsen style: every value a transaction
// wrote is unique, each transaction's outcome is committed, aborted or
// unknown (the client could not tell), and a read is the values a
// consumer got, with where. The anomalies are Jepsen's for Kafka
// transactions (the 2022 Redpanda and 2024 Bufstream analyses):
//
//   - lost: a value of a committed transaction that nobody read;
//   - aborted read: a value of an aborted transaction that was read;
//   - duplicate: a value read at two different offsets;
//   - torn: a transaction some of whose values were read and some not
//     (committed or unknown alike: a transaction is all or nothing);
//   - unknown value: a value no transaction wrote;
//   - past the LSO: a record a read_committed consumer got at or past the
//     last stable offset of its fetch (Workload's live consumer).
//
// Workload (workload.go) runs the producers and the live consumer that
// make a history to check.
//
// A transaction of unknown outcome may be read whole or not at all.
// Reading the same offset twice (two consumers) is not a duplicate.
package txncheck

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Outcome is what the producer knows of a transaction's end.
type Outcome int

const (
	Committed Outcome = iota
	Aborted
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case Committed:
		return "committed"
	case Aborted:
		return "aborted"
	}
	return "outcome unknown"
}

// Txn is one transaction: its values and its outcome.
type Txn struct {
	ID       string
	Producer int // Workload's producer index
	Values   []string
	Outcome  Outcome
	End      time.Time // when the producer learnt the outcome (Workload)
}

// Read is one value a read_committed consumer got.
type Read struct {
	Value     string
	Partition int32
	Offset    int64
}

// Result counts the anomalies, with examples.
type Result struct {
	Lost, AbortedReads, Duplicates, Torn, UnknownValues int
	// PastLSO counts records a read_committed consumer got at or past
	// the last stable offset of the fetch that returned them
	// (Workload.Check; Check alone does not know offsets' LSOs).
	PastLSO            int
	Examples           []string // at most 10
	Read, Transactions int
}

// Ok says there is no anomaly.
func (r Result) Ok() bool {
	return r.Lost+r.AbortedReads+r.Duplicates+r.Torn+r.UnknownValues+r.PastLSO == 0
}

func (r Result) String() string {
	s := fmt.Sprintf("%d transactions, %d reads: lost %d, aborted reads %d, duplicates %d, torn %d, unknown values %d, past the LSO %d",
		r.Transactions, r.Read, r.Lost, r.AbortedReads, r.Duplicates, r.Torn, r.UnknownValues, r.PastLSO)
	if len(r.Examples) > 0 {
		s += "\n  " + strings.Join(r.Examples, "\n  ")
	}
	return s
}

// Check compares the reads with the transactions.
func Check(txns []Txn, reads []Read) Result {
	res := Result{Read: len(reads), Transactions: len(txns)}
	example := func(format string, args ...any) {
		if len(res.Examples) < 10 {
			res.Examples = append(res.Examples, fmt.Sprintf(format, args...))
		}
	}
	owner := map[string]int{}
	for i, t := range txns {
		for _, v := range t.Values {
			owner[v] = i
		}
	}
	type pos struct {
		p int32
		o int64
	}
	seen := map[string]map[pos]bool{}
	for _, r := range reads {
		i, ok := owner[r.Value]
		if !ok {
			res.UnknownValues++
			example("unknown value %q at %d@%d", r.Value, r.Partition, r.Offset)
			continue
		}
		if txns[i].Outcome == Aborted && len(seen[r.Value]) == 0 {
			res.AbortedReads++
			example("aborted read: %q of transaction %s at %d@%d", r.Value, txns[i].ID, r.Partition, r.Offset)
		}
		if seen[r.Value] == nil {
			seen[r.Value] = map[pos]bool{}
		}
		seen[r.Value][pos{r.Partition, r.Offset}] = true
	}
	var dups []string
	for v, ps := range seen {
		if len(ps) > 1 {
			dups = append(dups, v)
		}
	}
	sort.Strings(dups)
	for _, v := range dups {
		res.Duplicates++
		example("duplicate: %q read at %d offsets", v, len(seen[v]))
	}
	for _, t := range txns {
		n := 0
		for _, v := range t.Values {
			if len(seen[v]) > 0 {
				n++
			}
		}
		switch {
		case t.Outcome == Committed && n < len(t.Values):
			res.Lost += len(t.Values) - n
			if n > 0 {
				res.Torn++
			}
			example("committed transaction %s: %d of %d values read", t.ID, n, len(t.Values))
		case t.Outcome == Unknown && n > 0 && n < len(t.Values):
			res.Torn++
			example("torn transaction %s (outcome unknown): %d of %d values read", t.ID, n, len(t.Values))
		}
	}
	return res
}
