package loader

import (
	"errors"
	"fmt"
	"sort"

	"github.com/tributary-io/tributary/formats/iceberg"
)

// planFieldIDs records in an Iceberg plan the table schema each topic's
// files are written with, so that the files carry the table's field ids
// (docs/iceberg.md, "Field ids"): the table's current schema evolved by
// the run's columns, as the run's commit will evolve it. Doing it at plan
// time gives every unit and worker, and a rerun after a crash, the same
// ids; and a schema the table cannot take stops the run before it loads
// anything. A commit that finds the table evolved otherwise since (another
// loader added the same column first) refuses the files rather than
// commit wrong ids (iceberg.Evolve).
func (l *Loader) planFieldIDs(p *Plan) error {
	if p.TableFormat != TableIceberg {
		return nil
	}
	var topics []string
	seen := map[string]bool{}
	for _, u := range p.Units {
		if !seen[u.Topic] {
			seen[u.Topic] = true
			topics = append(topics, u.Topic)
		}
	}
	sort.Strings(topics)
	cat := &iceberg.Catalog{FS: l.FS}
	for _, topic := range topics {
		schema, err := fileSchema(p, topic)
		if err != nil {
			return err
		}
		var md *iceberg.Metadata
		t, err := cat.Load(topic)
		switch {
		case errors.Is(err, iceberg.ErrNoTable):
		case err != nil:
			return fmt.Errorf("table %s: %w", topic, err)
		default:
			md = t.Metadata
		}
		next, _, _, err := iceberg.EvolveTable(schema, md)
		if err != nil {
			return fmt.Errorf("table %s: %w", topic, err)
		}
		if p.TableSchemas == nil {
			p.TableSchemas = map[string]*iceberg.Schema{}
		}
		p.TableSchemas[topic] = next
	}
	return nil
}
