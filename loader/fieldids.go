package loader

import (
	"encoding/json"
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
	cat, err := l.catalog(p.Catalog)
	if err != nil {
		return err
	}
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

// maxReplans bounds how often one Complete writes a run's files again
// after its commit found the table's field ids changed (each time another
// writer evolved the table between the plan and the commit).
const maxReplans = 3

// replanFieldIDs recovers a run whose commit found the table's schema
// changed since its plan chose the field ids (iceberg.ErrFieldIDsChanged:
// another writer added a column and took the id): the ids are planned
// again on the table as it is, the plan saved with them, and the units of
// every topic whose ids changed forgotten, with the files they moved into
// place (no table version names them: the commit failed), so that the
// next execution writes them again with the new ids. Without it a rerun
// resumed the same plan and failed the same way, for good.
func (l *Loader) replanFieldIDs(p *Plan) error {
	old := p.TableSchemas
	p.TableSchemas = nil
	if err := l.planFieldIDs(p); err != nil {
		p.TableSchemas = old
		return err
	}
	changed := map[string]bool{}
	for topic, s := range p.TableSchemas {
		a, _ := json.Marshal(s.Fields)
		var b []byte
		if o := old[topic]; o != nil {
			b, _ = json.Marshal(o.Fields)
		}
		changed[topic] = string(a) != string(b)
	}
	// The plan first: a crash after it re-executes with the new ids what
	// is forgotten below, and the units still done are checked again by
	// the next commit.
	if err := p.save(l); err != nil {
		return fmt.Errorf("saving the plan: %w", err)
	}
	for i, u := range p.Units {
		if !changed[u.Topic] {
			continue
		}
		if r, err := l.unitResult(p.Run, i); err == nil {
			for _, f := range r.Files {
				if err := l.FS.RemoveAll(p.finalPath(f.Path)); err != nil {
					return err
				}
			}
		}
		if err := l.FS.RemoveAll(unitDir(p.Run, i)); err != nil {
			return err
		}
	}
	return nil
}
