package registry

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

func val(subject string, version, id int, schema string) []byte {
	b, _ := json.Marshal(schemaValue{Subject: subject, Version: version, ID: id, Schema: schema})
	return b
}

// Two registries raced: every reader keeps the record at the lower offset,
// and the loser's repair record leaves the state (and, after compaction,
// the topic) as the winner wrote it.
func TestStateConflicts(t *testing.T) {
	t.Parallel()
	s := newState()
	steps := []struct {
		key, value []byte
		applied    bool
	}{
		{schemaKey("a", 1), val("a", 1, 1, `"int"`), true},
		// Node B also wrote a version 1, with its own next id.
		{schemaKey("a", 1), val("a", 1, 2, `"long"`), false},
		// Node C gave id 1 to another schema in another subject.
		{schemaKey("b", 1), val("b", 1, 1, `"string"`), false},
		// Node D gave "int" a new id: identical schemas share one.
		{schemaKey("c", 1), val("c", 1, 3, `"int"`), false},
		// B's repair: the winner's value again under the key.
		{schemaKey("a", 1), val("a", 1, 1, `"int"`), true},
		// C's repair: a tombstone of its own key, a no-op here.
		{schemaKey("b", 1), nil, true},
		{schemaKey("c", 1), val("c", 1, 1, `"int"`), true},
		// A soft delete keeps the id.
		{schemaKey("a", 1), func() []byte {
			b, _ := json.Marshal(schemaValue{Subject: "a", Version: 1, ID: 1, Schema: `"int"`, Deleted: true})
			return b
		}(), true},
	}
	for i, st := range steps {
		if got := s.apply(st.key, st.value); got != st.applied {
			t.Fatalf("step %d (%s): applied %v, want %v", i, st.key, got, st.applied)
		}
	}
	if v := s.subjects["a"][1]; v == nil || v.ID != 1 || !v.Deleted {
		t.Fatalf("a/1: %+v", v)
	}
	if _, ok := s.subjects["b"]; ok {
		t.Fatal("subject b exists")
	}
	if got := s.subjectNames(false); len(got) != 1 || got[0] != "c" {
		t.Fatalf("live subjects %v, want [c]", got)
	}
	if s.maxID != 1 || s.nextVersion("a") != 2 {
		t.Fatalf("maxID %d, next version of a %d", s.maxID, s.nextVersion("a"))
	}
	// Malformed and unknown records are skipped, never fatal.
	for _, k := range []string{`{`, `{"keytype":"NOOP","magic":0}`} {
		if s.apply([]byte(k), []byte(`{}`)) {
			t.Fatalf("%s applied", k)
		}
	}
}

// The API answers in JSON even for a path it does not know.
func TestUnknownPathIsJSON(t *testing.T) {
	t.Parallel()
	r := &Registry{st: newState(), ready: make(chan struct{})}
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/subjects", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), "50002") {
		t.Fatalf("before the topic is read: %d %s", rec.Code, rec.Body)
	}
	close(r.ready)
	rec = httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/nope/nope", nil))
	var e apiError
	if rec.Code != 404 || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != 404 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/subjects/a/versions/0", nil))
	if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != 42202 || rec.Code != 422 {
		t.Fatalf("version 0: %d %s", rec.Code, rec.Body)
	}
}

// FuzzApply: whatever another writer (or a corrupt record) put in
// `_schemas`, applying it never panics and never leaves a version without
// its id.
func FuzzApply(f *testing.F) {
	f.Add(schemaKey("a", 1), val("a", 1, 1, `"int"`))
	f.Add(subjectKey(keyConfig, ""), []byte(`{"compatibilityLevel":"FULL"}`))
	f.Add(subjectKey(keyMode, "a"), []byte(`{"mode":"IMPORT"}`))
	f.Add([]byte(`{"keytype":"DELETE_SUBJECT","subject":"a","magic":0}`), []byte(`{"subject":"a","version":9}`))
	f.Add([]byte(`{"keytype":"SCHEMA","subject":null,"version":-1}`), []byte(`{"id":-5}`))
	f.Add([]byte(`{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}`), []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		s := newState()
		s.apply(schemaKey("a", 1), val("a", 1, 1, `"int"`))
		s.apply(key, value)
		s.apply(key, nil)
		for name, vs := range s.subjects {
			for ver, v := range vs {
				if v.ID <= 0 || v.Subject != name || v.Version != ver || s.ids[v.ID] == nil {
					t.Fatalf("%s/%d: %+v", name, ver, v)
				}
			}
		}
	})
}

// A permanent delete leaves the state a registry started after compaction
// would build: compaction keeps each key's last record and in time drops
// tombstones, so an id held only by the deleted version is forgotten by
// both, and both give the same next id.
func TestTombstoneLikeCompaction(t *testing.T) {
	t.Parallel()
	soft := func(subject string, version, id int, schema string) []byte {
		b, _ := json.Marshal(schemaValue{Subject: subject, Version: version, ID: id, Schema: schema, Deleted: true})
		return b
	}
	log := [][2][]byte{
		{schemaKey("a", 1), val("a", 1, 1, `"int"`)},
		{schemaKey("b", 1), val("b", 1, 1, `"int"`)},
		{schemaKey("a", 2), val("a", 2, 2, `"long"`)},
		{schemaKey("c", 1), val("c", 1, 3, `"string"`)},
		{schemaKey("a", 1), soft("a", 1, 1, `"int"`)},
		{schemaKey("a", 1), nil},
		{schemaKey("c", 1), soft("c", 1, 3, `"string"`)},
		{schemaKey("c", 1), nil}, // id 3, the highest, held by c/1 alone
	}
	live := newState()
	for _, kv := range log {
		live.apply(kv[0], kv[1])
	}
	last := map[string][]byte{}
	var order []string
	for _, kv := range log {
		if _, ok := last[string(kv[0])]; !ok {
			order = append(order, string(kv[0]))
		}
		last[string(kv[0])] = kv[1]
	}
	restarted := newState()
	for _, k := range order {
		if last[k] != nil { // the tombstone itself compacted away
			restarted.apply([]byte(k), last[k])
		}
	}
	if live.maxID != restarted.maxID || live.maxID != 2 {
		t.Fatalf("maxID live %d, after compaction %d; want 2 for both", live.maxID, restarted.maxID)
	}
	if len(live.ids) != len(restarted.ids) || len(live.content) != len(restarted.content) {
		t.Fatalf("ids %v / %v, content %v / %v", live.ids, restarted.ids, live.content, restarted.content)
	}
	for id, v := range restarted.ids {
		if lv := live.ids[id]; lv == nil || lv.contentKey() != v.contentKey() || lv.Subject != v.Subject {
			t.Fatalf("id %d: live %+v, after compaction %+v", id, lv, v)
		}
	}
	// Id 3 given to a new schema now: both registries accept it.
	next := val("d", 1, restarted.maxID+1, `"bytes"`)
	if !live.apply(schemaKey("d", 1), next) || !restarted.apply(schemaKey("d", 1), next) {
		t.Fatal("the next id is refused by one of them")
	}
}

// The basic-auth cache key tells apart every user and password pair, a
// NUL in the user name included (review finding 11).
func TestCredKey(t *testing.T) {
	if credKey("a\x00b", "c") == credKey("a", "b\x00c") {
		t.Fatal(`credKey("a\x00b", "c") == credKey("a", "b\x00c")`)
	}
}
