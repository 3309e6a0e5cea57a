package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/formats/srclient"
)

// The schema registry, when the console is given one (--registry): the
// Schemas pages read it with franz-go's sr client, and the message browser
// decodes registry-framed values (Avro, Protobuf, JSON Schema) to JSON with
// formats/srclient, the decoder `tributary consume --registry` uses.

type registry struct {
	sr  *sr.Client
	dec *srclient.Decoder
	// shown is the URL without its credentials, what pages print.
	shown string
}

// newRegistry takes http(s)://[user:password@]host[:port]. Its errors
// never quote the URL: it may hold a password.
func newRegistry(raw string) (*registry, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("want the registry's URL, http(s)://[user:password@]host:port")
	}
	bare := *u
	bare.User = nil
	opts := []sr.ClientOpt{sr.URLs(bare.String())}
	if u.User != nil {
		pass, _ := u.User.Password()
		opts = append(opts, sr.BasicAuth(u.User.Username(), pass))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, errors.New("the registry client: bad URL or options")
	}
	// srclient sends the URL's credentials as basic auth, and net/http
	// masks the password in its errors.
	return &registry{sr: cl, dec: srclient.NewDecoder(srclient.New(raw)), shown: bare.String()}, nil
}

// decode replaces each framed value by its JSON, when the registry knows
// its schema; a value it cannot decode keeps its raw form, with the reason.
func (g *registry) decode(ctx context.Context, ms []message) {
	for i := range ms {
		if ms[i].framed == nil {
			continue
		}
		j, err := g.dec.JSON(ctx, ms[i].framed)
		if err != nil {
			ms[i].Value.Note = "not decoded: " + err.Error()
			continue
		}
		var out bytes.Buffer
		if json.Indent(&out, j, "", "  ") != nil {
			out.Reset()
			out.Write(j)
		}
		text := out.String()
		// Decoding can make a value of maxShown bytes much longer.
		if len(text) > maxShown {
			text, ms[i].Value.Truncated = strings.ToValidUTF8(text[:maxShown], ""), true
		}
		ms[i].Value.Text, ms[i].Value.Kind, ms[i].Value.Decoded = text, "json", true
	}
}

type subjectRow struct {
	Subject, Type, Compatibility string
	Version, ID                  int
	Err                          string
}

func (s *Server) schemas(w http.ResponseWriter, r *http.Request) {
	if s.reg == nil {
		s.render(w, r, http.StatusNotFound, "error", page{Title: "Schemas", Error: "no schema registry: start the console with --registry URL"})
		return
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	subjects, err := s.reg.sr.Subjects(ctx)
	if err != nil {
		s.fail(w, r, "schema subjects", err)
		return
	}
	sort.Strings(subjects)
	rows := make([]subjectRow, len(subjects))
	compat := map[string]string{}
	for _, c := range s.reg.sr.Compatibility(ctx, subjects...) {
		if c.Err == nil {
			compat[c.Subject] = c.Level.String()
		}
	}
	for i, sub := range subjects {
		rows[i] = subjectRow{Subject: sub, Compatibility: compat[sub]}
		ss, err := s.reg.sr.SchemaByVersion(ctx, sub, -1)
		if err != nil {
			rows[i].Err = err.Error()
			continue
		}
		rows[i].Version, rows[i].ID, rows[i].Type = ss.Version, ss.ID, ss.Type.String()
	}
	s.render(w, r, http.StatusOK, "schemas", page{Title: "Schemas", Nav: "schemas", Data: rows})
}

type versionRow struct {
	Version, ID int
	Type, Text  string
}

type subjectData struct {
	Subject, Compatibility string
	Versions               []versionRow
}

func (s *Server) subject(w http.ResponseWriter, r *http.Request) {
	if s.reg == nil {
		s.render(w, r, http.StatusNotFound, "error", page{Title: "Schemas", Error: "no schema registry: start the console with --registry URL"})
		return
	}
	sub := r.PathValue("subject")
	ctx, cancel := ctxOf(r)
	defer cancel()
	all, err := s.reg.sr.Schemas(ctx, sub)
	if err != nil {
		s.fail(w, r, "subject "+sub, err)
		return
	}
	d := subjectData{Subject: sub}
	if cs := s.reg.sr.Compatibility(ctx, sub); len(cs) == 1 && cs[0].Err == nil {
		d.Compatibility = cs[0].Level.String()
	}
	for i := len(all) - 1; i >= 0; i-- { // newest first
		ss := all[i]
		text := ss.Schema.Schema
		var out bytes.Buffer
		if json.Indent(&out, []byte(text), "", "  ") == nil {
			text = out.String()
		}
		d.Versions = append(d.Versions, versionRow{Version: ss.Version, ID: ss.ID, Type: ss.Type.String(), Text: text})
	}
	s.render(w, r, http.StatusOK, "subject", page{Title: "Subject " + sub, Nav: "schemas", Data: d})
}
