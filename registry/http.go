package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/formats/compat"
)

const contentType = "application/vnd.schemaregistry.v1+json"

// apiError is Confluent's error body; the HTTP status is the first three
// digits of the code.
type apiError struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return e.Message }

func (e *apiError) status() int {
	if e.Code >= 10000 {
		return e.Code / 100
	}
	return e.Code
}

func errf(code int, format string, args ...any) *apiError {
	return &apiError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func subjectNotFound(s string) *apiError { return errf(40401, "Subject '%s' not found.", s) }
func versionNotFound(v int) *apiError    { return errf(40402, "Version %d not found.", v) }
func schemaNotFound() *apiError          { return errf(40403, "Schema not found") }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = errf(50001, "Error in the backend data store: %v", err)
	}
	writeJSON(w, ae.status(), ae)
}

type handlerFunc func(w http.ResponseWriter, req *http.Request) (any, error)

func (r *Registry) wrap(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if !r.authorized(w, req) {
			return
		}
		select {
		case <-r.ready:
		default:
			writeErr(w, errf(50002, "The schema registry is still reading %s", r.cfg.Topic))
			return
		}
		v, err := h(w, req)
		if err != nil {
			writeErr(w, err)
			return
		}
		if f, ok := v.(*forwarded); ok {
			if f.ctype != "" {
				w.Header().Set("Content-Type", f.ctype)
			}
			w.WriteHeader(f.status)
			w.Write(f.body)
			return
		}
		if s, ok := v.(rawText); ok {
			w.Header().Set("Content-Type", contentType)
			io.WriteString(w, string(s))
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// rawText is a response sent as is (the .../schema endpoints).
type rawText string

// Handler is the registry's HTTP API.
func (r *Registry) Handler() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern string, f handlerFunc) { mux.Handle(pattern, r.wrap(f)) }
	h("GET /{$}", func(http.ResponseWriter, *http.Request) (any, error) { return map[string]any{}, nil })
	// Consoles and clients parse every answer as JSON, a 404 too.
	h("/", func(_ http.ResponseWriter, req *http.Request) (any, error) {
		return nil, errf(404, "HTTP 404 Not Found: %s %s", req.Method, req.URL.Path)
	})
	h("GET /subjects", r.getSubjects)
	h("POST /subjects/{subject}", r.lookup)
	h("POST /subjects/{subject}/{$}", r.lookup)
	h("DELETE /subjects/{subject}", r.leaderOnly(r.deleteSubject))
	h("GET /subjects/{subject}/versions", r.getVersions)
	h("POST /subjects/{subject}/versions", r.leaderOnly(r.register))
	h("GET /subjects/{subject}/versions/{version}", r.getVersion)
	h("DELETE /subjects/{subject}/versions/{version}", r.leaderOnly(r.deleteVersion))
	h("GET /subjects/{subject}/versions/{version}/schema", r.getVersionSchema)
	h("GET /subjects/{subject}/versions/{version}/referencedBy", r.referencedBy)
	h("GET /subjects/{subject}/versions/{version}/referencedby", r.referencedBy) // Confluent's spelling
	h("GET /schemas", r.getSchemas)
	h("GET /schemas/types", func(http.ResponseWriter, *http.Request) (any, error) {
		return []string{compat.JSON, compat.Protobuf, compat.Avro}, nil
	})
	h("GET /schemas/ids/{id}", r.getByID)
	h("GET /schemas/ids/{id}/schema", r.getByIDSchema)
	h("GET /schemas/ids/{id}/subjects", r.getByIDSubjects)
	h("GET /schemas/ids/{id}/versions", r.getByIDVersions)
	h("GET /config", r.getConfig)
	h("PUT /config", r.leaderOnly(r.putConfig))
	h("DELETE /config", r.leaderOnly(r.deleteConfig))
	h("GET /config/{subject}", r.getConfig)
	h("PUT /config/{subject}", r.leaderOnly(r.putConfig))
	h("DELETE /config/{subject}", r.leaderOnly(r.deleteConfig))
	h("GET /mode", r.getMode)
	h("PUT /mode", r.leaderOnly(r.putMode))
	h("DELETE /mode", r.leaderOnly(r.deleteMode))
	h("GET /mode/{subject}", r.getMode)
	h("PUT /mode/{subject}", r.leaderOnly(r.putMode))
	h("DELETE /mode/{subject}", r.leaderOnly(r.deleteMode))
	h("POST /compatibility/subjects/{subject}/versions", r.checkCompat)
	h("POST /compatibility/subjects/{subject}/versions/{version}", r.checkCompat)
	return mux
}

func boolParam(req *http.Request, name string) bool {
	b, _ := strconv.ParseBool(req.URL.Query().Get(name))
	return b
}

// parseVersion accepts "latest", -1 (latest) and 1..2^31-1; latest is 0.
func parseVersion(s string) (int, error) {
	if s == "latest" || s == "-1" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < 1 {
		return 0, errf(42202, "The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", s)
	}
	return int(v), nil
}

// version finds a version of subject; mu must be held.
func (r *Registry) version(subject, vs string, deleted bool) (*schemaValue, error) {
	v, err := parseVersion(vs)
	if err != nil {
		return nil, err
	}
	all := r.st.versions(subject, deleted)
	if len(all) == 0 {
		return nil, subjectNotFound(subject)
	}
	if v == 0 {
		return all[len(all)-1], nil
	}
	for _, sv := range all {
		if sv.Version == v {
			return sv, nil
		}
	}
	return nil, versionNotFound(v)
}

// schemaOut is a subject version as the API shows it.
type schemaOut struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
	Deleted    bool        `json:"deleted,omitempty"`
}

func out(v *schemaValue) schemaOut {
	return schemaOut{Subject: v.Subject, Version: v.Version, ID: v.ID, SchemaType: v.SchemaType, References: v.References, Schema: v.Schema, Deleted: v.Deleted}
}

func (r *Registry) getSubjects(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := r.st.subjectNames(boolParam(req, "deleted"))
	prefix := req.URL.Query().Get("subjectPrefix")
	outNames := []string{}
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			outNames = append(outNames, n)
		}
	}
	return outNames, nil
}

func (r *Registry) getVersions(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := req.PathValue("subject")
	vs := r.st.versions(s, boolParam(req, "deleted"))
	if len(vs) == 0 {
		return nil, subjectNotFound(s)
	}
	nums := make([]int, len(vs))
	for i, v := range vs {
		nums[i] = v.Version
	}
	return nums, nil
}

func (r *Registry) getVersion(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, err := r.version(req.PathValue("subject"), req.PathValue("version"), boolParam(req, "deleted"))
	if err != nil {
		return nil, err
	}
	o := out(v)
	if o.Schema, err = r.formatted(v, req.URL.Query().Get("format")); err != nil {
		return nil, err
	}
	return o, nil
}

// formatted is v's schema in the format asked for: "serialized" gives a
// Protobuf schema as a base64 FileDescriptorProto, what confluent-kafka's
// Python deserializer asks for; anything else the text as stored. mu must
// be held.
func (r *Registry) formatted(v *schemaValue, format string) (string, error) {
	if format != "serialized" || v.SchemaType != compat.Protobuf {
		return v.Schema, nil
	}
	s, err := r.st.schema(v)
	if err != nil {
		return "", err
	}
	text, err := compat.SerializedProto(s)
	if err != nil {
		return "", errf(50001, "Error in the backend data store: stored schema %d does not compile: %v", v.ID, err)
	}
	return text, nil
}

func (r *Registry) getVersionSchema(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, err := r.version(req.PathValue("subject"), req.PathValue("version"), boolParam(req, "deleted"))
	if err != nil {
		return nil, err
	}
	return rawText(v.Schema), nil
}

func (r *Registry) referencedBy(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, err := r.version(req.PathValue("subject"), req.PathValue("version"), false)
	if err != nil {
		return nil, err
	}
	ids := []int{}
	for _, o := range r.st.referrers(v.Subject, v.Version, false) {
		ids = append(ids, o.ID)
	}
	return ids, nil
}

func (r *Registry) getSchemas(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	deleted, latest := boolParam(req, "deleted"), boolParam(req, "latestOnly")
	prefix := req.URL.Query().Get("subjectPrefix")
	res := []schemaOut{}
	for _, name := range r.st.subjectNames(deleted) {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		vs := r.st.versions(name, deleted)
		if latest {
			vs = vs[len(vs)-1:]
		}
		for _, v := range vs {
			res = append(res, out(v))
		}
	}
	return res, nil
}

// byID finds the schema of id while some subject version (soft-deleted
// ones too) still uses it; mu must be held.
func (r *Registry) byID(idText string) (*schemaValue, error) {
	id, err := strconv.Atoi(idText)
	if err != nil {
		return nil, schemaNotFound()
	}
	v, ok := r.st.ids[id]
	if !ok || len(r.st.usages(id, true)) == 0 {
		return nil, errf(40403, "Schema %d not found", id)
	}
	return v, nil
}

func (r *Registry) getByID(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, err := r.byID(req.PathValue("id"))
	if err != nil {
		return nil, err
	}
	text, err := r.formatted(v, req.URL.Query().Get("format"))
	if err != nil {
		return nil, err
	}
	return struct {
		SchemaType string      `json:"schemaType,omitempty"`
		Schema     string      `json:"schema"`
		References []Reference `json:"references,omitempty"`
	}{v.SchemaType, text, v.References}, nil
}

func (r *Registry) getByIDSchema(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, err := r.byID(req.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return rawText(v.Schema), nil
}

func (r *Registry) getByIDSubjects(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, err := r.byID(req.PathValue("id"))
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, u := range r.st.usages(v.ID, boolParam(req, "deleted")) {
		if len(names) == 0 || names[len(names)-1] != u.Subject {
			names = append(names, u.Subject)
		}
	}
	return names, nil
}

func (r *Registry) getByIDVersions(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, err := r.byID(req.PathValue("id"))
	if err != nil {
		return nil, err
	}
	type sv struct {
		Subject string `json:"subject"`
		Version int    `json:"version"`
	}
	res := []sv{}
	for _, u := range r.st.usages(v.ID, boolParam(req, "deleted")) {
		res = append(res, sv{u.Subject, u.Version})
	}
	return res, nil
}

func (r *Registry) getConfig(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := req.PathValue("subject")
	l, ok := r.st.config[s]
	if !ok {
		if s != "" && !boolParam(req, "defaultToGlobal") {
			return nil, errf(40408, "Subject '%s' does not have subject-level compatibility configured", s)
		}
		l = r.st.level("")
	}
	return configValue{CompatibilityLevel: string(l)}, nil
}

func (r *Registry) getMode(_ http.ResponseWriter, req *http.Request) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := req.PathValue("subject")
	m, ok := r.st.mode[s]
	if !ok {
		if s != "" && !boolParam(req, "defaultToGlobal") {
			return nil, errf(40409, "Subject '%s' does not have subject-level mode configured", s)
		}
		m = r.st.modeOf("")
	}
	return modeValue{Mode: m}, nil
}

// decode reads a JSON request body.
func decode(req *http.Request, into any) error {
	if err := json.NewDecoder(io.LimitReader(req.Body, 16<<20)).Decode(into); err != nil {
		return errf(42201, "Invalid request body: %v", err)
	}
	return nil
}
