package registry

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/formats/compat"
)

// state is what the records of `_schemas` say, applied in offset order. It
// does no I/O: tail feeds it records, handlers read it.
//
// Conflicts: two nodes may register at once and write records that
// disagree (the same subject version with two schemas, or one id for two
// schemas). The rule, applied identically by every reader: the record
// at the lower offset wins, a later one that contradicts it is ignored.
// The writer of the ignored record sees that it lost and writes a repair
// record (registry.go) so that compaction, which keeps the last record of
// a key, cannot bring the loser back.
type state struct {
	subjects map[string]map[int]*schemaValue // subject → version → its record
	ids      map[int]*schemaValue            // id → one record with that id (its schema)
	content  map[string]int                  // contentKey → id
	config   map[string]compat.Level         // subject ("" global) → level
	mode     map[string]string               // subject ("" global) → mode
	maxID    int
}

func newState() *state {
	return &state{
		subjects: map[string]map[int]*schemaValue{},
		ids:      map[int]*schemaValue{},
		content:  map[string]int{},
		config:   map[string]compat.Level{},
		mode:     map[string]string{},
	}
}

// contentKey identifies a schema for id assignment: identical schemas (type,
// canonical text and references) get one id, whatever the subject.
func contentKey(typ, schema string, refs []Reference) string {
	if typ == "" {
		typ = compat.Avro
	}
	b, _ := json.Marshal(refs)
	return typ + "\x00" + schema + "\x00" + string(b)
}

func (v *schemaValue) contentKey() string { return contentKey(v.SchemaType, v.Schema, v.References) }

// apply applies one record; it reports false when the record was ignored
// (malformed, unknown, or losing a conflict).
func (s *state) apply(key, value []byte) bool {
	var k recordKey
	if err := json.Unmarshal(key, &k); err != nil {
		return false
	}
	subject := ""
	if k.Subject != nil {
		subject = *k.Subject
	}
	switch k.KeyType {
	case keySchema:
		if value == nil {
			if vs := s.subjects[subject]; vs != nil {
				old := vs[k.Version]
				delete(vs, k.Version)
				if len(vs) == 0 {
					delete(s.subjects, subject)
				}
				if old != nil {
					s.forget(old)
				}
			}
			return true
		}
		var v schemaValue
		if json.Unmarshal(value, &v) != nil || v.Subject != subject || v.Version != k.Version || v.ID <= 0 {
			return false
		}
		if v.SchemaType == compat.Avro {
			v.SchemaType = ""
		}
		ck := v.contentKey()
		if id, ok := s.content[ck]; ok && id != v.ID {
			return false
		}
		if old, ok := s.ids[v.ID]; ok && old.contentKey() != ck {
			return false
		}
		if old := s.subjects[subject][k.Version]; old != nil && old.ID != v.ID {
			return false
		}
		if s.subjects[subject] == nil {
			s.subjects[subject] = map[int]*schemaValue{}
		}
		s.subjects[subject][k.Version] = &v
		s.ids[v.ID] = &v
		s.content[ck] = v.ID
		s.maxID = max(s.maxID, v.ID)
		return true
	case keyConfig:
		if value == nil {
			delete(s.config, subject)
			return true
		}
		var c configValue
		if json.Unmarshal(value, &c) != nil {
			return false
		}
		l, ok := compat.ParseLevel(c.CompatibilityLevel)
		if !ok {
			return false
		}
		s.config[subject] = l
		return true
	case keyMode:
		if value == nil {
			delete(s.mode, subject)
			return true
		}
		var m modeValue
		if json.Unmarshal(value, &m) != nil || !validMode(m.Mode) {
			return false
		}
		s.mode[subject] = strings.ToUpper(m.Mode)
		return true
	case keyDeleteSubject:
		var d deleteSubjectValue
		if value == nil || json.Unmarshal(value, &d) != nil {
			return false
		}
		for ver, v := range s.subjects[subject] {
			if ver <= d.Version {
				c := *v
				c.Deleted = true
				s.subjects[subject][ver] = &c
			}
		}
		return true
	}
	return false
}

// forget drops what a permanently deleted version alone held: its id and
// content when no other version uses them, and maxID with them. A registry
// started after compaction, which removes the version's records and in
// time the tombstone, never saw them: every reader's state must depend only
// on what the compacted topic keeps, or a restarted registry would hand out
// an id that the running ones consider taken (docs/registry.md, Ids).
func (s *state) forget(old *schemaValue) {
	s.maxID = 0
	var user *schemaValue
	for _, vs := range s.subjects {
		for _, v := range vs {
			s.maxID = max(s.maxID, v.ID)
			// The first by subject and version: every reader picks the same.
			if v.ID == old.ID && (user == nil || v.Subject < user.Subject ||
				v.Subject == user.Subject && v.Version < user.Version) {
				user = v
			}
		}
	}
	if user != nil {
		s.ids[old.ID] = user
		return
	}
	delete(s.ids, old.ID)
	delete(s.content, old.contentKey())
}

func validMode(m string) bool {
	switch strings.ToUpper(m) {
	case "READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT":
		return true
	}
	return false
}

// versions returns the subject's versions in order, soft-deleted ones only
// when deleted is set.
func (s *state) versions(subject string, deleted bool) []*schemaValue {
	var out []*schemaValue
	for _, v := range s.subjects[subject] {
		if deleted || !v.Deleted {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}

func (s *state) subjectNames(deleted bool) []string {
	var out []string
	for name := range s.subjects {
		if len(s.versions(name, deleted)) > 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// nextVersion counts soft-deleted versions too, as Confluent does: a
// version number is never reused while its record exists.
func (s *state) nextVersion(subject string) int {
	n := 0
	for v := range s.subjects[subject] {
		n = max(n, v)
	}
	return n + 1
}

// usages lists the subject versions (soft-deleted ones when deleted) that
// use id, by subject then version.
func (s *state) usages(id int, deleted bool) []*schemaValue {
	var out []*schemaValue
	for _, name := range s.subjectNames(deleted) {
		for _, v := range s.versions(name, deleted) {
			if v.ID == id {
				out = append(out, v)
			}
		}
	}
	return out
}

func (s *state) level(subject string) compat.Level {
	if l, ok := s.config[subject]; ok {
		return l
	}
	if l, ok := s.config[""]; ok {
		return l
	}
	return compat.Backward
}

func (s *state) modeOf(subject string) string {
	if m, ok := s.mode[subject]; ok {
		return m
	}
	if m, ok := s.mode[""]; ok {
		return m
	}
	return "READWRITE"
}

// maxRefs bounds the schemas one schema may reference, transitively.
const maxRefs = 1000

// resolve returns the schemas refs name, transitively, each one's own
// references before it (compat.Schema.Refs), soft-deleted versions
// included: a stored schema stays readable while its references' records
// exist. A reference to version -1 means the latest.
func (s *state) resolve(refs []Reference) ([]compat.Ref, error) {
	var out []compat.Ref
	seen := map[[2]string]bool{}
	var visit func(refs []Reference, depth int) error
	visit = func(refs []Reference, depth int) error {
		if depth > 64 || len(out) > maxRefs {
			return errf(42201, "Invalid schema: references nested too deep or too many")
		}
		for _, ref := range refs {
			v := s.refTarget(ref)
			if v == nil {
				return errf(42201, "Invalid schema: reference %s to subject %s version %d not found", ref.Name, ref.Subject, ref.Version)
			}
			k := [2]string{v.Subject, strconv.Itoa(v.Version)}
			if seen[k] {
				continue
			}
			seen[k] = true
			if err := visit(v.References, depth+1); err != nil {
				return err
			}
			out = append(out, compat.Ref{Name: ref.Name, Text: v.Schema})
		}
		return nil
	}
	return out, visit(refs, 0)
}

func (s *state) refTarget(ref Reference) *schemaValue {
	if ref.Version == -1 {
		vs := s.versions(ref.Subject, false)
		if len(vs) == 0 {
			return nil
		}
		return vs[len(vs)-1]
	}
	return s.subjects[ref.Subject][ref.Version]
}

// schema is v with its references resolved, for the checks.
func (s *state) schema(v *schemaValue) (compat.Schema, error) {
	refs, err := s.resolve(v.References)
	return compat.Schema{Type: v.SchemaType, Text: v.Schema, Refs: refs}, err
}

// referrers lists the versions that reference subject version ver, live
// ones only unless deleted.
func (s *state) referrers(subject string, ver int, deleted bool) []*schemaValue {
	var out []*schemaValue
	for _, name := range s.subjectNames(deleted) {
		for _, o := range s.versions(name, deleted) {
			for _, ref := range o.References {
				if ref.Subject == subject && (ref.Version == ver ||
					ref.Version == -1 && s.refTarget(ref) != nil && s.refTarget(ref).Version == ver) {
					out = append(out, o)
					break
				}
			}
		}
	}
	return out
}
