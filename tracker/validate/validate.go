// Package validate checks tracker events against the JSON schemas
// registered for them in a Confluent-compatible schema registry
// (Tributary's own, docs/registry.md, or any other).
//
// Each event has a subject (Subject: "<topic>-<event>-value" for a track
// call, "<topic>-<type>-value" for the others), and the latest version
// registered under it is the event's schema. A Checker caches each
// subject's answer, schema or "none registered", for its TTL, so that a
// new version reaches the tracker within that time and an event costs a
// map lookup and a validation, not a request to the registry. A
// Checker is safe for concurrent use.
//
// Event names come from the tracker's senders, who hold only a public
// write key: a Checker must not let them grow its memory or make it flood
// the registry with a new name per event. So it lists the registry's
// subjects once per TTL and asks for the latest version only of subjects
// in that list (others are "none registered" at no cost), ignores
// subjects longer than MaxSubjectLen, and keeps at most maxEntries
// subjects.
package validate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/tributary-io/tributary/formats/compat"
	"github.com/tributary-io/tributary/formats/srclient"
)

// DefaultTTL is how long a subject's latest version (or its absence) is
// trusted before the registry is asked again.
const DefaultTTL = 30 * time.Second

// Subject is the registry subject of an event of topic: the event's name
// for a track call, its type for the others ("page", "identify", ...),
// between the topic and "-value" as in Confluent's TopicNameStrategy.
// The name is used as sent, spaces and case included.
func Subject(topic, typ, event string) string {
	if typ == "track" {
		return topic + "-" + event + "-value"
	}
	return topic + "-" + typ + "-value"
}

// Violation is one way an event fails its schema: where (the path of the
// value in the event, dotted: "properties.revenue"; empty for the event
// itself) and why.
type Violation struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Verdict is what Check found.
type Verdict struct {
	// Found says a schema is registered under the subject; when false the
	// event was not checked.
	Found       bool
	ID, Version int
	// Violations is empty for a valid event; at most maxViolations.
	Violations []Violation
}

const maxViolations = 10

// MaxSubjectLen bounds the subjects a Checker looks up: longer ones (an
// event name of more than about 256 bytes) are never registered as far
// as it is concerned, and the event is not checked.
const MaxSubjectLen = 512

// maxEntries bounds the subjects cached; past it, entries are dropped at
// random (each costs one request to fetch again).
const maxEntries = 10_000

// Checker validates events against a registry's schemas.
type Checker struct {
	c   *srclient.Client
	ttl time.Duration
	now func() time.Time

	// The registry's answers, through c unless a test sets them.
	latestFn func(ctx context.Context, subject string) (srclient.Schema, error)
	listFn   func(ctx context.Context) ([]string, error)

	mu       sync.Mutex
	subjects map[string]*entry
	list     *listing // the registry's subjects as last listed; mu must be held
}

// listing is the registry's subject list, fetched once per TTL; done is
// closed once the fetch ended.
type listing struct {
	done  chan struct{}
	at    time.Time // zero: the fetch failed
	names map[string]bool
	err   error
}

// entry is a subject's latest schema as last fetched. done is closed once
// the fetch ended, so that concurrent requests for one subject ask the
// registry once.
type entry struct {
	done    chan struct{}
	at      time.Time
	sch     *jsonschema.Schema // nil: none registered, or err
	id, ver int
	err     error
}

// New returns a Checker asking the registry of c; ttl <= 0 is DefaultTTL.
func New(c *srclient.Client, ttl time.Duration) *Checker {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	ck := &Checker{c: c, ttl: ttl, now: time.Now, subjects: map[string]*entry{}}
	if c != nil {
		ck.latestFn, ck.listFn = c.Latest, c.Subjects
	}
	return ck
}

// ErrRegistry wraps a failure to ask the registry (unreachable, a 5xx): the
// event could not be judged.
var ErrRegistry = errors.New("tracker/validate: schema registry unavailable")

// Check validates event (one JSON object, as the sender sent it) against
// the latest schema of subject. A subject whose latest version is not a
// JSON schema, or does not compile, is reported as a violation: the
// event cannot be valid until the registry holds a JSON schema for it.
// An error (ErrRegistry) means the registry could not be asked.
func (c *Checker) Check(ctx context.Context, subject string, event []byte) (Verdict, error) {
	if len(subject) > MaxSubjectLen {
		return Verdict{}, nil
	}
	if ok, err := c.registered(ctx, subject); err != nil || !ok {
		return Verdict{}, err
	}
	e, err := c.latest(ctx, subject)
	if err != nil {
		return Verdict{}, err
	}
	v := Verdict{Found: e.sch != nil || e.err != nil, ID: e.id, Version: e.ver}
	if e.err != nil {
		v.Violations = []Violation{{Reason: e.err.Error()}}
		return v, nil
	}
	if e.sch == nil {
		return v, nil
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(event))
	if err != nil {
		v.Violations = []Violation{{Reason: "not JSON: " + err.Error()}}
		return v, nil
	}
	err = e.sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		v.Violations = violations(ve, v.Violations)
		if len(v.Violations) == 0 {
			v.Violations = []Violation{{Reason: ve.Error()}}
		}
	} else if err != nil {
		v.Violations = []Violation{{Reason: err.Error()}}
	}
	return v, nil
}

// violations appends the leaves of the error tree (the errors that have
// no causes: "missing property 'currency'" rather than "validation
// failed" of the $ref above it), depth first, so in schema order.
func violations(e *jsonschema.ValidationError, out []Violation) []Violation {
	if len(out) >= maxViolations {
		return out
	}
	if len(e.Causes) == 0 {
		return append(out, Violation{Path: strings.Join(e.InstanceLocation, "."), Reason: e.ErrorKind.LocalizedString(english)})
	}
	for _, c := range e.Causes {
		out = violations(c, out)
	}
	return out
}

var english = message.NewPrinter(language.English)

// registered says whether subject is in the registry's subject list,
// listing the subjects again when the list is older than the TTL (one
// request at a time; a failed listing is not kept).
func (c *Checker) registered(ctx context.Context, subject string) (bool, error) {
	now := c.now()
	c.mu.Lock()
	l := c.list
	fetch := false
	if l == nil {
		fetch = true
	} else {
		select {
		case <-l.done:
			fetch = l.at.IsZero() || now.Sub(l.at) >= c.ttl
		default:
		}
	}
	if fetch {
		l = &listing{done: make(chan struct{})}
		c.list = l
	}
	c.mu.Unlock()
	if fetch {
		names, err := c.listFn(ctx)
		if err != nil {
			l.err = fmt.Errorf("%w: listing subjects: %v", ErrRegistry, err)
		} else {
			l.names = make(map[string]bool, len(names))
			for _, n := range names {
				l.names[n] = true
			}
			l.at = now
		}
		close(l.done)
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		return false, fmt.Errorf("%w: %v", ErrRegistry, ctx.Err())
	}
	if l.at.IsZero() {
		if l.err == nil {
			return false, fmt.Errorf("%w: listing subjects", ErrRegistry)
		}
		return false, l.err
	}
	return l.names[subject], nil
}

// latest returns the subject's entry, fetching it when absent or older
// than the TTL. An entry whose fetch failed is not kept.
func (c *Checker) latest(ctx context.Context, subject string) (*entry, error) {
	now := c.now()
	c.mu.Lock()
	e := c.subjects[subject]
	if e != nil {
		select {
		case <-e.done:
			if now.Sub(e.at) < c.ttl {
				c.mu.Unlock()
				return e, nil
			}
		default: // a fetch in flight: wait for it
			c.mu.Unlock()
			select {
			case <-e.done:
			case <-ctx.Done():
				return nil, fmt.Errorf("%w: %v", ErrRegistry, ctx.Err())
			}
			if e.at.IsZero() {
				return nil, fmt.Errorf("%w: subject %s", ErrRegistry, subject)
			}
			return e, nil
		}
	}
	if len(c.subjects) >= maxEntries {
		for s, old := range c.subjects {
			if len(c.subjects) < maxEntries {
				break
			}
			select {
			case <-old.done:
				delete(c.subjects, s)
			default:
			}
		}
	}
	e = &entry{done: make(chan struct{})}
	c.subjects[subject] = e
	c.mu.Unlock()

	ok := false
	defer func() {
		if !ok {
			c.mu.Lock()
			if c.subjects[subject] == e {
				delete(c.subjects, subject)
			}
			c.mu.Unlock()
		}
		close(e.done)
	}()
	s, err := c.latestFn(ctx, subject)
	var se *srclient.Error
	switch {
	case errors.As(err, &se) && (se.Code == 40401 || se.Code == 40402):
		// None registered (or every version deleted): remembered too.
	case err != nil:
		return nil, fmt.Errorf("%w: subject %s: %v", ErrRegistry, subject, err)
	case s.Type != compat.JSON:
		e.id, e.ver = s.ID, s.Version
		e.err = fmt.Errorf("subject %s version %d is a %s schema: the tracker validates against JSON schemas", subject, s.Version, s.Type)
	default:
		e.id, e.ver = s.ID, s.Version
		if e.sch, err = compile(subject, s.Schema); err != nil {
			e.err = fmt.Errorf("subject %s version %d: the schema does not compile: %v", subject, s.Version, err)
		}
	}
	e.at, ok = now, true
	return e, nil
}

// compile builds a validator from a registered JSON schema and its
// references, each reference a resource under its name, so that a $ref
// "money.json#/definitions/M" finds it. Without a $schema, draft-07, as
// Confluent's serializers assume; nothing is fetched from the network.
func compile(subject string, s compat.Schema) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.UseLoader(noLoader{})
	const base = "tributary-registry:///"
	add := func(name, text string) error {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			return err
		}
		return c.AddResource(base+name, doc)
	}
	for _, r := range s.Refs {
		if err := add(r.Name, r.Text); err != nil {
			return nil, fmt.Errorf("reference %s: %w", r.Name, err)
		}
	}
	main := url.PathEscape(subject) + ".json"
	if err := add(main, s.Text); err != nil {
		return nil, err
	}
	return c.Compile(base + main)
}

// noLoader refuses every URL that is not a registered reference: a schema
// must not make the tracker fetch from the network or read local files.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s is not a reference of the schema", u)
}
