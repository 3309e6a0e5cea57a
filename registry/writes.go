package registry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/formats/compat"
)

// schemaRequest is the body of register, lookup and compatibility checks.
type schemaRequest struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType"`
	References []Reference `json:"references"`
	ID         int         `json:"id"`
	Version    int         `json:"version"`
	normalize  bool        // the normalize query parameter
}

// readSchemaRequest reads the body of a request. It runs before any lock
// is taken: a client that stalls mid-body (until the server's ReadTimeout)
// must hold up no other request and not the tail.
func readSchemaRequest(req *http.Request) (*schemaRequest, error) {
	var b schemaRequest
	if err := decode(req, &b); err != nil {
		return nil, err
	}
	b.normalize = boolParam(req, "normalize")
	return &b, nil
}

// prepare validates the schema of a request and returns it in the form
// stored and compared; mu must be held (references are checked).
func (r *Registry) prepare(in *schemaRequest) (*schemaRequest, error) {
	b := *in
	b.SchemaType = strings.ToUpper(b.SchemaType)
	if b.SchemaType == compat.Avro {
		b.SchemaType = ""
	}
	if len(b.References) == 0 {
		b.References = nil
	}
	for _, ref := range b.References {
		if _, err := r.version(ref.Subject, itoa(ref.Version), false); err != nil {
			return nil, errf(42201, "Invalid schema: reference %s to %s version %d: %v", ref.Name, ref.Subject, ref.Version, err)
		}
	}
	refs, err := r.st.resolve(b.References)
	if err != nil {
		return nil, err
	}
	canon := compat.Canonical
	if b.normalize {
		canon = compat.Normalize
	}
	c, err := canon(compat.Schema{Type: b.SchemaType, Text: b.Schema, Refs: refs})
	if errors.Is(err, compat.ErrTooDeep) {
		return nil, errf(42201, "Invalid schema: %v", err) // not echoed: it may be large
	}
	if err != nil {
		return nil, errf(42201, "Invalid schema %s: %v", b.Schema, err)
	}
	b.Schema = c
	return &b, nil
}

func itoa(v int) string {
	if v == -1 {
		return "latest"
	}
	return strconv.Itoa(v)
}

// incompatible checks b against previous at level, every schema with its
// references resolved; mu must be held.
func (r *Registry) incompatible(level compat.Level, b *schemaRequest, previous []*schemaValue) ([]string, error) {
	refs, err := r.st.resolve(b.References)
	if err != nil {
		return nil, err
	}
	prev := make([]compat.Schema, 0, len(previous))
	for _, p := range previous {
		s, err := r.st.schema(p)
		if err != nil {
			continue // a reference permanently deleted under it: nothing to check against
		}
		prev = append(prev, s)
	}
	msgs, err := compat.Check(level, compat.Schema{Type: b.SchemaType, Text: b.Schema, Refs: refs}, prev)
	if err != nil {
		return nil, errf(42201, "Invalid schema: %v", err)
	}
	return msgs, nil
}

// writable refuses writes to a subject in a read-only mode; mu must be held.
func (r *Registry) writable(subject string) error {
	switch m := r.st.modeOf(subject); m {
	case "READONLY", "READONLY_OVERRIDE":
		return errf(42205, "Subject %s is in read-only mode", subject)
	}
	return nil
}

func (r *Registry) register(_ http.ResponseWriter, req *http.Request) (any, error) {
	body, err := readSchemaRequest(req)
	if err != nil {
		return nil, err
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	subject := req.PathValue("subject")
	r.mu.Lock()
	b, err := r.prepare(body)
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	ck := contentKey(b.SchemaType, b.Schema, b.References)
	// Once a record is written, the check that it won and the repair if it
	// lost must run even when the client goes away: an unrepaired loser
	// would come back after compaction. produce bounds each step by
	// WriteTimeout.
	wctx := context.WithoutCancel(req.Context())
	// A lost race with another node is retried against the state that
	// beat us; a handful of rounds is plenty for human-paced registrations.
	for attempt := 0; ; attempt++ {
		r.mu.Lock()
		if err := r.writable(subject); err != nil {
			r.mu.Unlock()
			return nil, err
		}
		importing := r.st.modeOf(subject) == "IMPORT"
		if b.ID > 0 && !importing {
			r.mu.Unlock()
			return nil, errf(42205, "Subject %s is not in import mode; an id may only be given in IMPORT mode", subject)
		}
		for _, v := range r.st.versions(subject, false) {
			if v.contentKey() == ck && (b.ID <= 0 || b.ID == v.ID) {
				r.mu.Unlock()
				return out(v), nil
			}
		}
		id, version := r.st.content[ck], r.st.nextVersion(subject)
		if importing {
			if b.ID <= 0 {
				r.mu.Unlock()
				return nil, errf(42205, "Subject %s is in import mode: give the schema's id", subject)
			}
			if old, ok := r.st.ids[b.ID]; (ok && old.contentKey() != ck) || (id != 0 && id != b.ID) {
				r.mu.Unlock()
				return nil, errf(42205, "Overwrite new schema with id %d is not permitted: the id or the schema is registered already", b.ID)
			}
			id = b.ID
			if b.Version > 0 {
				if r.st.subjects[subject][b.Version] != nil {
					r.mu.Unlock()
					return nil, errf(42205, "Version %d of subject %s exists already", b.Version, subject)
				}
				version = b.Version
			}
		} else {
			msgs, err := r.incompatible(r.st.level(subject), b, r.st.versions(subject, false))
			if err != nil {
				r.mu.Unlock()
				return nil, err
			}
			if len(msgs) > 0 {
				r.mu.Unlock()
				return nil, errf(409, "Schema being registered is incompatible with an earlier schema for subject \"%s\", details: [%s]", subject, strings.Join(msgs, ", "))
			}
			if id == 0 {
				id = r.st.maxID + 1
			}
		}
		r.mu.Unlock()

		v := schemaValue{Subject: subject, Version: version, ID: id, SchemaType: b.SchemaType, Schema: b.Schema, References: b.References}
		val, _ := json.Marshal(v)
		key := schemaKey(subject, version)
		if err := r.produce(wctx, key, val); err != nil {
			return nil, errf(50001, "Error while registering schema: %v", err)
		}
		r.mu.Lock()
		got := r.st.subjects[subject][version]
		won := got != nil && got.ID == id && got.contentKey() == ck
		var repair []byte
		if !won && got != nil {
			repair, _ = json.Marshal(got)
		}
		r.mu.Unlock()
		if won {
			return out(&v), nil
		}
		r.log.Info("registry: lost a write race to another registry; retrying", "subject", subject, "version", version, "id", id, "attempt", attempt+1)
		// We lost: put the key back to what every reader decided, so that
		// compaction keeping the last record of the key keeps the winner.
		if err := r.produce(wctx, key, repair); err != nil {
			return nil, errf(50001, "Error while registering schema: %v", err)
		}
		if attempt == 9 {
			return nil, errf(50001, "Error while registering schema: lost %d races with other writers", attempt+1)
		}
	}
}

func (r *Registry) lookup(_ http.ResponseWriter, req *http.Request) (any, error) {
	body, err := readSchemaRequest(req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	subject := req.PathValue("subject")
	deleted := boolParam(req, "deleted")
	vs := r.st.versions(subject, deleted)
	if len(vs) == 0 {
		return nil, subjectNotFound(subject)
	}
	b, err := r.prepare(body)
	if err != nil {
		return nil, err
	}
	ck := contentKey(b.SchemaType, b.Schema, b.References)
	for _, v := range vs {
		if v.contentKey() == ck {
			return out(v), nil
		}
	}
	return nil, schemaNotFound()
}

func (r *Registry) checkCompat(_ http.ResponseWriter, req *http.Request) (any, error) {
	body, err := readSchemaRequest(req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	subject := req.PathValue("subject")
	b, err := r.prepare(body)
	if err != nil {
		return nil, err
	}
	level := r.st.level(subject)
	prev := r.st.versions(subject, false)
	if vs := req.PathValue("version"); vs != "" {
		v, err := r.version(subject, vs, false)
		if err != nil {
			return nil, err
		}
		// One version given: the level's direction against it alone.
		level = compat.Level(strings.TrimSuffix(string(level), "_TRANSITIVE"))
		prev = []*schemaValue{v}
	}
	msgs, err := r.incompatible(level, b, prev)
	if err != nil {
		return nil, err
	}
	res := map[string]any{"is_compatible": len(msgs) == 0}
	if boolParam(req, "verbose") || len(msgs) > 0 {
		if msgs == nil {
			msgs = []string{}
		}
		res["messages"] = msgs
	}
	return res, nil
}

// produceAll writes records in order; a nil value is a tombstone. A client
// that goes away does not stop it halfway (a subject half soft-deleted).
func (r *Registry) produceAll(ctx context.Context, recs [][2][]byte) error {
	ctx = context.WithoutCancel(ctx)
	for _, kv := range recs {
		if err := r.produce(ctx, kv[0], kv[1]); err != nil {
			return errf(50001, "Error in the backend data store: %v", err)
		}
	}
	return nil
}

func (r *Registry) deleteSubject(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	subject := req.PathValue("subject")
	permanent := boolParam(req, "permanent")
	r.mu.Lock()
	if err := r.writable(subject); err != nil {
		r.mu.Unlock()
		return nil, err
	}
	all, live := r.st.versions(subject, true), r.st.versions(subject, false)
	var recs [][2][]byte
	nums := []int{}
	doomed := live
	if permanent {
		doomed = all
	}
	for _, v := range doomed {
		if err := r.referenced(v, permanent, subject); err != nil {
			r.mu.Unlock()
			return nil, err
		}
	}
	switch {
	case len(all) == 0:
		r.mu.Unlock()
		return nil, subjectNotFound(subject)
	case !permanent && len(live) == 0:
		r.mu.Unlock()
		return nil, errf(40404, "Subject '%s' was soft deleted.Set permanent=true to delete permanently", subject)
	case permanent && len(live) > 0:
		r.mu.Unlock()
		return nil, errf(40405, "Subject '%s' was not deleted first before being permanently deleted", subject)
	case permanent:
		for _, v := range all {
			nums = append(nums, v.Version)
			recs = append(recs, [2][]byte{schemaKey(subject, v.Version), nil})
		}
		if _, ok := r.st.config[subject]; ok {
			recs = append(recs, [2][]byte{subjectKey(keyConfig, subject), nil})
		}
		if _, ok := r.st.mode[subject]; ok {
			recs = append(recs, [2][]byte{subjectKey(keyMode, subject), nil})
		}
	default:
		for _, v := range live {
			nums = append(nums, v.Version)
			d := *v
			d.Deleted = true
			val, _ := json.Marshal(d)
			recs = append(recs, [2][]byte{schemaKey(subject, v.Version), val})
		}
	}
	r.mu.Unlock()
	return nums, r.produceAll(req.Context(), recs)
}

func (r *Registry) deleteVersion(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	subject := req.PathValue("subject")
	r.mu.Lock()
	if err := r.writable(subject); err != nil {
		r.mu.Unlock()
		return nil, err
	}
	permanent := boolParam(req, "permanent")
	// "latest" means the latest live version, even for a permanent delete.
	v, err := r.version(subject, req.PathValue("version"), permanent && req.PathValue("version") != "latest")
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	var val []byte
	switch {
	case r.referenced(v, permanent, "") != nil:
		err = r.referenced(v, permanent, "")
	case !permanent && v.Deleted:
		err = errf(40406, "Subject '%s' Version %d was soft deleted.Set permanent=true to delete permanently", subject, v.Version)
	case permanent && !v.Deleted:
		err = errf(40407, "Subject '%s' Version %d was not deleted first before being permanently deleted", subject, v.Version)
	case !permanent:
		d := *v
		d.Deleted = true
		val, _ = json.Marshal(d)
	}
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return v.Version, r.produceAll(req.Context(), [][2][]byte{{schemaKey(subject, v.Version), val}})
}

// referenced refuses to delete v while another schema references it (a
// live one for a soft delete; any, soft-deleted too, for a permanent one,
// which would leave it unreadable), as Confluent's 42206 does; referrers
// in subject except (being deleted with it) do not count. mu must be held.
func (r *Registry) referenced(v *schemaValue, permanent bool, except string) error {
	for _, o := range r.st.referrers(v.Subject, v.Version, permanent) {
		if o.Subject != except || except == "" {
			return errf(42206, "One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=%s,version=%d}.", v.Subject, v.Version)
		}
	}
	return nil
}

func (r *Registry) putConfig(_ http.ResponseWriter, req *http.Request) (any, error) {
	var b struct {
		Compatibility string `json:"compatibility"`
	}
	if err := decode(req, &b); err != nil {
		return nil, err
	}
	l, ok := compat.ParseLevel(b.Compatibility)
	if !ok {
		return nil, errf(42203, "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive")
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	val, _ := json.Marshal(configValue{CompatibilityLevel: string(l)})
	if err := r.produceAll(req.Context(), [][2][]byte{{subjectKey(keyConfig, req.PathValue("subject")), val}}); err != nil {
		return nil, err
	}
	return map[string]string{"compatibility": string(l)}, nil
}

func (r *Registry) deleteConfig(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	s := req.PathValue("subject")
	r.mu.Lock()
	l, ok := r.st.config[s]
	if !ok && s != "" {
		exists := len(r.st.versions(s, true)) > 0
		r.mu.Unlock()
		if !exists {
			return nil, subjectNotFound(s)
		}
		return nil, errf(40408, "Subject '%s' does not have subject-level compatibility configured", s)
	}
	if !ok {
		l = r.st.level("")
	}
	r.mu.Unlock()
	return configValue{CompatibilityLevel: string(l)}, r.produceAll(req.Context(), [][2][]byte{{subjectKey(keyConfig, s), nil}})
}

func (r *Registry) putMode(_ http.ResponseWriter, req *http.Request) (any, error) {
	var b modeValue
	if err := decode(req, &b); err != nil {
		return nil, err
	}
	if !validMode(b.Mode) {
		return nil, errf(42204, "Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE, IMPORT.")
	}
	m := strings.ToUpper(b.Mode)
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	s := req.PathValue("subject")
	r.mu.Lock()
	nonEmpty := len(r.st.subjectNames(false)) > 0
	if s != "" {
		nonEmpty = len(r.st.versions(s, false)) > 0
	}
	r.mu.Unlock()
	if m == "IMPORT" && nonEmpty && !boolParam(req, "force") {
		return nil, errf(42205, "Cannot import since found existing subjects")
	}
	val, _ := json.Marshal(modeValue{Mode: m})
	if err := r.produceAll(req.Context(), [][2][]byte{{subjectKey(keyMode, s), val}}); err != nil {
		return nil, err
	}
	return modeValue{Mode: m}, nil
}

func (r *Registry) deleteMode(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	s := req.PathValue("subject")
	r.mu.Lock()
	m, ok := r.st.mode[s]
	if !ok {
		m = r.st.modeOf("")
		if s != "" {
			r.mu.Unlock()
			return nil, errf(40409, "Subject '%s' does not have subject-level mode configured", s)
		}
	}
	r.mu.Unlock()
	return modeValue{Mode: m}, r.produceAll(req.Context(), [][2][]byte{{subjectKey(keyMode, s), nil}})
}
