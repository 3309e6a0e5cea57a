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
