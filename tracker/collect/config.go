package collect

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary-io/tributary/formats/schema"
	"github.com/tributary-io/tributary/tracker/validate"
)

// Defaults of Config.
const (
	DefaultMaxEventBytes  = 32 << 10  // 32 KB per event
	DefaultMaxBatchBytes  = 500 << 10 // 500 KB per batch
	DefaultDedupWindow    = 10 * time.Minute
	DefaultDedupMax       = 1 << 20
	DefaultRetryAfter     = 5 * time.Second
	DefaultReadHeader     = 5 * time.Second
	DefaultReadTimeout    = 15 * time.Second
	DefaultWriteTimeout   = 15 * time.Second
	DefaultIdleTimeout    = 60 * time.Second
	DefaultMaxHeaderBytes = 16 << 10
)

// EventTypes are the Segment calls, in the order of the spec.
var EventTypes = []string{"track", "page", "screen", "identify", "group", "alias"}

// Source is one sender of events, identified by its write key.
type Source struct {
	// Name labels the source in metrics and logs (the write key never
	// appears there). Defaults to "source-N".
	Name     string
	WriteKey string
	// Topic receives the source's events.
	Topic string
	// Types are the calls the source may make; empty allows all.
	Types []string
	// CORSOrigins are the browser origins ("https://shop.example") allowed
	// to send with this key; "*" allows any. Empty allows no browser
	// (requests without an Origin header, from servers, always pass).
	CORSOrigins []string
	// Schema validates the enriched events; nil is schema.Activity().
	Schema *schema.Schema
	// InvalidTopic, when set, receives invalid events as they were sent
	// (conventionally Topic + ".invalid").
	InvalidTopic string
	// Registry, when set, validates each event, as the sender sent it,
	// against the JSON schema registered for it (validate.Subject names
	// the subject). Events that fail go to BadTopic with the reasons.
	Registry *validate.Checker
	// RegistryStrict refuses events whose subject has no schema; without
	// it they pass unchecked (permissive).
	RegistryStrict bool
	// BadTopic receives the events a schema refused (the source's schema
	// or the registry's), wrapped with the reasons (BadEvent); default
	// Topic + ".bad" when Registry is set.
	BadTopic string
	// TrustContextIP keeps a context.ip the sender set (a server-side
	// library reporting its user's address) instead of the socket's.
	TrustContextIP bool
}

// IPMode is what happens to the client IP in context.ip.
type IPMode string

const (
	IPAnonymize IPMode = "anonymize" // zero the last IPv4 octet, the last 80 bits of IPv6 (default)
	IPKeep      IPMode = "keep"
	IPDrop      IPMode = "drop"
)

// PrivacyAction is what honouring Do-Not-Track or Global Privacy Control
// does to an event that carries the signal.
type PrivacyAction string

const (
	PrivacyDrop  PrivacyAction = "drop"  // answered 2xx, not stored, counted (default)
	PrivacyStrip PrivacyAction = "strip" // stored without IP and user agent
)

// Config configures a Server. The zero value of each field is its default.
type Config struct {
	Sources []Source

	MaxEventBytes int // per event; default 32 KB
	MaxBatchBytes int // per /v1/batch body; default 500 KB

	// DedupDisabled turns off dropping retried duplicates; DedupWindow is
	// how long a messageId is remembered (at least, up to twice that), and
	// DedupMax bounds how many are remembered.
	DedupDisabled bool
	DedupWindow   time.Duration
	DedupMax      int

	IP IPMode
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix

	HonorDNT      bool // the DNT: 1 header
	HonorGPC      bool // the Sec-GPC: 1 header
	PrivacyAction PrivacyAction

	// RetryAfter is the Retry-After of a 503 when the Sink fails.
	RetryAfter time.Duration

	// Server timeouts and limits (see HTTPServer).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                                            int

	Logger   *slog.Logger
	Registry prometheus.Registerer // nil: metrics are not registered
	Now      func() time.Time      // nil: time.Now
}

func (c *Config) setDefaults() error {
	def := func(p *time.Duration, d time.Duration) {
		if *p <= 0 {
			*p = d
		}
	}
	if c.MaxEventBytes <= 0 {
		c.MaxEventBytes = DefaultMaxEventBytes
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.MaxBatchBytes < c.MaxEventBytes {
		return fmt.Errorf("batch limit %d is below the event limit %d", c.MaxBatchBytes, c.MaxEventBytes)
	}
	def(&c.DedupWindow, DefaultDedupWindow)
	if c.DedupMax <= 0 {
		c.DedupMax = DefaultDedupMax
	}
	switch c.IP {
	case "":
		c.IP = IPAnonymize
	case IPAnonymize, IPKeep, IPDrop:
	default:
		return fmt.Errorf("ip mode %q: want anonymize, keep or drop", c.IP)
	}
	switch c.PrivacyAction {
	case "":
		c.PrivacyAction = PrivacyDrop
	case PrivacyDrop, PrivacyStrip:
	default:
		return fmt.Errorf("privacy action %q: want drop or strip", c.PrivacyAction)
	}
	def(&c.RetryAfter, DefaultRetryAfter)
	def(&c.ReadHeaderTimeout, DefaultReadHeader)
	def(&c.ReadTimeout, DefaultReadTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if len(c.Sources) == 0 {
		return ErrNoWriteKey
	}
	keys := map[string]bool{}
	names := map[string]bool{}
	for i := range c.Sources {
		s := &c.Sources[i]
		if s.WriteKey == "" {
			return fmt.Errorf("source %d (%s): no write key", i+1, s.Name)
		}
		if keys[s.WriteKey] {
			return fmt.Errorf("source %d (%s): write key used by another source", i+1, s.Name)
		}
		keys[s.WriteKey] = true
		if s.Name == "" {
			s.Name = fmt.Sprintf("source-%d", i+1)
		}
		if names[s.Name] {
			return fmt.Errorf("source name %q used twice", s.Name)
		}
		names[s.Name] = true
		if s.Topic == "" {
			return fmt.Errorf("source %s: no topic", s.Name)
		}
		if s.Registry != nil && s.BadTopic == "" {
			s.BadTopic = s.Topic + ".bad"
		}
		for _, t := range s.Types {
			if !slices.Contains(EventTypes, t) {
				return fmt.Errorf("source %s: unknown event type %q: want one of %v", s.Name, t, EventTypes)
			}
		}
	}
	return nil
}

// ErrNoWriteKey is returned by New when no source is configured.
var ErrNoWriteKey = errors.New("no write key configured")
