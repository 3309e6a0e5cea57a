package loader

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/bitutil"
	"github.com/apache/arrow/go/v15/arrow/compute"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/tributary-io/tributary/formats/iceberg"
)

// Identity partition columns (--partition-by, the job's partition_by): a
// table's spec is hour(_event_time) then identity(<column>) for each, and
// a unit writes one file per event hour and combination of the columns'
// values. The files keep their names and hour directories (the value is
// in the manifest entry's partition tuple: Iceberg's hidden partitioning,
// and the Hive-style dt=/hr= view stays as it is): a file's name says the
// offsets of its partition it may hold, not that it holds all of them
// (the others are in the files of the other values, as they already were
// in the files of other hours). Exactly once does not change: a unit's
// files are staged, moved by name and committed as a whole, however many
// there are.

// IdentityValues are a file's values of its identity partition columns, by
// column: a string, an int64 (int and long columns), a bool, or nil.
type IdentityValues map[string]any

// UnmarshalJSON keeps integers exact (JSON would make them float64).
func (v *IdentityValues) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	for k, x := range m {
		if n, ok := x.(json.Number); ok {
			i, err := n.Int64()
			if err != nil {
				return fmt.Errorf("identity value %s=%s: %w", k, n, err)
			}
			m[k] = i
		}
	}
	*v = m
	return nil
}

func (s *Settings) validatePartitionBy() error {
	if len(s.PartitionBy) == 0 {
		s.PartitionBy = nil
		return nil
	}
	if s.TableFormat != TableIceberg {
		return errors.New("--partition-by is for Iceberg tables: use it with --table-format iceberg")
	}
	seen := map[string]bool{}
	for _, c := range s.PartitionBy {
		switch {
		case c == "" || strings.ContainsAny(c, ".,() "):
			return fmt.Errorf("--partition-by %q: want the names of top-level columns, comma-separated (identity partitioning by their values)", c)
		case c == eventTimeColumn:
			return fmt.Errorf("--partition-by %s: the table is partitioned by its hour already", c)
		case c == offsetColumn:
			return fmt.Errorf("--partition-by %s: every record has its own offset, so each would be a file of one row; partition by a column with few distinct values", c)
		case c == partitionColumn:
			return fmt.Errorf("--partition-by %s: a unit reads one Kafka partition, so its files hold one value already, and readers filter on the column without a partition field", c)
		case seen[c]:
			return fmt.Errorf("--partition-by: %s is named twice", c)
		}
		seen[c] = true
	}
	return nil
}

// identityArrow says whether a column of type t can be an identity
// partition column (its Iceberg type is one formats/iceberg takes).
func identityArrow(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.INT32, arrow.INT64, arrow.BOOL:
		return true
	}
	return false
}

// checkTables checks, before a plan is saved, what its table commits will
// need: the identity partition columns are columns of every topic's
// files, and each topic's table (if there is one) is in the plan's
// catalog and partitioned by the same columns. A plan that cannot commit
// is refused here, before any data is written: its units would split the
// files by other values than its table's.
func (l *Loader) checkTables(p *Plan) error {
	if p.TableFormat != TableIceberg {
		return nil
	}
	cat, err := l.catalog(p.Catalog)
	if err != nil {
		return err
	}
	topics := map[string]bool{}
	for _, u := range p.Units {
		topics[u.Topic] = true
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, topic := range names {
		if len(p.PartitionBy) > 0 {
			schema, err := fileSchema(p, topic)
			if err != nil {
				return err
			}
			for _, c := range p.PartitionBy {
				i := schema.FieldIndices(c)
				if len(i) != 1 {
					return fmt.Errorf("--partition-by %s: topic %s has no such top-level column", c, topic)
				}
				if t := schema.Field(i[0]).Type; !identityArrow(t) {
					return fmt.Errorf("--partition-by %s: the column is %s in topic %s; identity partitioning takes %s columns", c, t, topic, iceberg.IdentityColumnTypes)
				}
			}
		}
		t, err := cat.Load(topic)
		if errors.Is(err, iceberg.ErrNoTable) {
			if err := l.checkOtherCatalog(cat, p.Catalog, topic); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("table %s: %w", topic, err)
		}
		if err := iceberg.CheckIdentity(t.Metadata, p.PartitionBy); err != nil {
			return fmt.Errorf("table %s: %w", topic, err)
		}
	}
	return nil
}

// groupWriter splits a unit's rows by event hour and identity values.
type groupWriter struct {
	hw   *hourWriters
	loc  *time.Location
	cols []string
}

// write gives each row of rec (with its offset and event time, Unix ms)
// to the file of its hour and values.
func (g *groupWriter) write(rec arrow.Record, offsets, times []int64) error {
	if len(g.cols) == 0 {
		// Rows of a partition mostly come in time order: write runs of
		// one hour as zero-copy slices.
		for i := 0; i < len(times); {
			h := hourOf(times[i], g.loc)
			j := i + 1
			for j < len(times) && hourOf(times[j], g.loc).Equal(h) {
				j++
			}
			part := rec.NewSlice(int64(i), int64(j))
			err := g.hw.write(h, nil, part, offsets[i:j])
			part.Release()
			if err != nil {
				return err
			}
			i = j
		}
		return nil
	}
	cols := make([]arrow.Array, len(g.cols))
	for k, c := range g.cols {
		i := rec.Schema().FieldIndices(c)
		if len(i) != 1 || !identityArrow(rec.Column(i[0]).DataType()) {
			return fmt.Errorf("partition column %s: not a string, int, long or boolean column of the records", c)
		}
		cols[k] = rec.Column(i[0])
	}
	type group struct {
		hour   time.Time
		values IdentityValues
		rows   []int32
	}
	var order []string
	groups := map[string]*group{}
	runs := 0
	var prev *group
	// One key buffer for every row: the map lookup by string(key) does
	// not allocate, only a new group's key does.
	var key []byte
	for r := range times {
		h := hourOf(times[r], g.loc)
		key = strconv.AppendInt(key[:0], h.UnixMilli(), 10)
		for _, col := range cols {
			key = appendIdentityKey(append(key, 0), col, r)
		}
		gr := groups[string(key)]
		if gr == nil {
			gr = &group{hour: h, values: IdentityValues{}}
			for ci, col := range cols {
				gr.values[g.cols[ci]] = identityValue(col, r)
			}
			k := string(key)
			groups[k] = gr
			order = append(order, k)
		}
		gr.rows = append(gr.rows, int32(r))
		if gr != prev {
			runs++
		}
		prev = gr
	}
	if runs != len(groups) {
		// Interleaved: one Take puts each group's rows together, in order,
		// and the groups are slices of that.
		perm := make([]int32, 0, len(times))
		for _, k := range order {
			perm = append(perm, groups[k].rows...)
		}
		sorted, err := take(rec, perm)
		if err != nil {
			return err
		}
		defer sorted.Release()
		at := int32(0)
		for _, k := range order {
			gr := groups[k]
			n := int32(len(gr.rows))
			for i := range gr.rows {
				gr.rows[i] = at + int32(i) // now rows of sorted
			}
			at += n
		}
		rec = sorted
		offsets = permute(offsets, perm)
	}
	for _, k := range order {
		gr := groups[k]
		first := int64(gr.rows[0])
		end := first + int64(len(gr.rows))
		part := rec.NewSlice(first, end)
		err := g.hw.write(gr.hour, gr.values, part, offsets[first:end])
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// permute is xs in the order of perm.
func permute(xs []int64, perm []int32) []int64 {
	out := make([]int64, len(perm))
	for i, j := range perm {
		out[i] = xs[j]
	}
	return out
}

// take copies the rows of rec at the indices, column by column (gather).
func take(rec arrow.Record, rows []int32) (arrow.Record, error) {
	b := array.NewInt32Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(rows, nil)
	idx := b.NewArray()
	defer idx.Release()
	cols := make([]arrow.Array, rec.NumCols())
	release := func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}
	for i := range cols {
		c, err := gather(rec.Column(i), rows, idx)
		if err != nil {
			release()
			return nil, fmt.Errorf("splitting rows by partition: column %s: %w", rec.ColumnName(i), err)
		}
		cols[i] = c
	}
	out := array.NewRecord(rec.Schema(), cols, int64(len(rows)))
	release()
	return out, nil
}

// gather is arr's values at rows. Arrow's Take (v15) grows a string
// column's data buffer value by value, to the exact size each time, so its
// cost grows with the square of the rows taken: strings, and structs for
// their strings, are gathered here, into buffers sized once; fixed-width
// types go to Take.
func gather(arr arrow.Array, rows []int32, idx arrow.Array) (arrow.Array, error) {
	switch a := arr.(type) {
	case *array.String:
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		total := 0
		for _, r := range rows {
			total += a.ValueLen(int(r))
		}
		b.Reserve(len(rows))
		b.ReserveData(total)
		for _, r := range rows {
			if a.IsNull(int(r)) {
				b.AppendNull()
			} else {
				b.Append(a.Value(int(r)))
			}
		}
		return b.NewArray(), nil
	case *array.Struct:
		children := make([]arrow.ArrayData, a.NumField())
		defer func() {
			for _, c := range children {
				if c != nil {
					c.Release()
				}
			}
		}()
		for f := range children {
			c, err := gather(a.Field(f), rows, idx)
			if err != nil {
				return nil, err
			}
			children[f] = c.Data()
			children[f].Retain()
			c.Release()
		}
		var valid *memory.Buffer
		nulls := 0
		if a.NullN() > 0 {
			valid = memory.NewResizableBuffer(memory.DefaultAllocator)
			valid.Resize(int(bitutil.BytesForBits(int64(len(rows)))))
			bits := valid.Bytes()
			clear(bits) // only the valid rows' bits are set below
			for i, r := range rows {
				if a.IsNull(int(r)) {
					nulls++
				} else {
					bitutil.SetBit(bits, i)
				}
			}
			defer valid.Release()
		}
		data := array.NewData(a.DataType(), len(rows), []*memory.Buffer{valid}, children, nulls, 0)
		defer data.Release()
		return array.MakeFromData(data), nil
	}
	return compute.TakeArray(context.Background(), arr, idx)
}

// appendIdentityKey appends to b a name of row r's value of col: strings
// quoted (so no value holds the columns' separator), nulls apart from
// every value.
func appendIdentityKey(b []byte, col arrow.Array, r int) []byte {
	if col.IsNull(r) {
		return append(b, 1)
	}
	b = append(b, '=')
	switch a := col.(type) {
	case *array.String:
		return strconv.AppendQuote(b, a.Value(r))
	case *array.LargeString:
		return strconv.AppendQuote(b, a.Value(r))
	case *array.Int32:
		return strconv.AppendInt(b, int64(a.Value(r)), 10)
	case *array.Int64:
		return strconv.AppendInt(b, a.Value(r), 10)
	case *array.Boolean:
		return strconv.AppendBool(b, a.Value(r))
	}
	return b
}

// identityValue is row r's value of col, as IdentityValues holds it.
func identityValue(col arrow.Array, r int) any {
	if col.IsNull(r) {
		return nil
	}
	switch a := col.(type) {
	case *array.String:
		return a.Value(r)
	case *array.LargeString:
		return a.Value(r)
	case *array.Int32:
		return int64(a.Value(r))
	case *array.Int64:
		return a.Value(r)
	case *array.Boolean:
		return a.Value(r)
	}
	return nil
}

// identityFields are a file's values as formats/iceberg takes them.
func (v IdentityValues) fields() map[string]any {
	if len(v) == 0 {
		return nil
	}
	return map[string]any(v)
}
