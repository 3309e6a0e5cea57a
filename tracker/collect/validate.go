package collect

import (
	"sync"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/formats/schema"
)

// validators checks enriched events against a source's schema with the
// decoder the loader uses (formats/decode), so that what the collector
// accepts the loader can load. A decoder is not safe for concurrent use:
// each request borrows one from the pool.
type validators struct {
	pool sync.Pool // *validator
}

// validator is a schema decoder used only to check events; the rows it
// builds are released every flushRows.
type validator struct {
	d    *decode.JSON
	rows int
}

const flushRows = 256

// init readies the pool for s, which NewJSON accepts (New checked it).
func (v *validators) init(s *schema.Schema) {
	v.pool.New = func() any {
		d, err := decode.NewJSON(s, &recycler{})
		if err != nil {
			panic(err) // checked by New
		}
		return &validator{d: d}
	}
}

// check validates recs, whose Offset is their index in recs, and returns
// those that fail.
func (v *validators) check(recs []decode.Record) []decode.RecordError {
	d := v.pool.Get().(*validator)
	defer v.pool.Put(d)
	errs := d.d.Decode(recs)
	if d.rows += len(recs) - len(errs); d.rows >= flushRows {
		if rec := d.d.Flush(); rec != nil {
			rec.Release()
		}
		d.rows = 0
	}
	return errs
}

// validate checks one enriched event.
func (v *validators) validate(value []byte) (path, reason string) {
	errs := v.check([]decode.Record{{Value: value}})
	if len(errs) > 0 {
		return errs[0].Path, errs[0].Reason
	}
	return "", ""
}
