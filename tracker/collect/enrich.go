package collect

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/mileusna/useragent"
)

// ClientIP is the address of the client that sent r: the socket's peer,
// or, when that peer is a trusted proxy, the right-most address of
// X-Forwarded-For that is not itself a trusted proxy. A forwarded address
// that does not parse stops the walk at the last trusted hop.
func ClientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := remoteAddr(r.RemoteAddr)
	if !peer.IsValid() || !isTrusted(peer, trusted) {
		return peer
	}
	hops := r.Header.Values("X-Forwarded-For")
	var all []string
	for _, h := range hops {
		all = append(all, strings.Split(h, ",")...)
	}
	ip := peer
	for i := len(all) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(all[i]))
		if err != nil {
			return ip
		}
		ip = a.Unmap()
		if !isTrusted(ip, trusted) {
			return ip
		}
	}
	return ip
}

func remoteAddr(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// AnonymizeIP zeroes the last octet of an IPv4 address and the last 80 bits
// (keeping the /48) of an IPv6 address.
func AnonymizeIP(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is4() {
		b := a.As4()
		b[3] = 0
		return netip.AddrFrom4(b)
	}
	if a.Is6() {
		b := a.As16()
		for i := 6; i < 16; i++ {
			b[i] = 0
		}
		return netip.AddrFrom16(b)
	}
	return a
}

// UA is what the tracker learns from a User-Agent string.
type UA struct {
	Browser, BrowserVersion string
	OS, OSVersion           string
	// DeviceType is desktop, mobile, tablet, bot or other.
	DeviceType, DeviceModel string
	Bot                     bool
}

// ParseUA parses a User-Agent string with github.com/mileusna/useragent.
func ParseUA(s string) UA {
	p := useragent.Parse(s)
	u := UA{Browser: p.Name, BrowserVersion: p.Version, OS: p.OS, OSVersion: p.OSVersion, DeviceModel: p.Device, Bot: p.Bot}
	switch {
	case p.Bot:
		u.DeviceType = "bot"
	case p.Tablet:
		u.DeviceType = "tablet"
	case p.Mobile:
		u.DeviceType = "mobile"
	case p.Desktop:
		u.DeviceType = "desktop"
	default:
		u.DeviceType = "other"
	}
	return u
}

// uaCache memoises ParseUA: a site's traffic has few distinct agents. It is
// bounded by clearing when full.
type uaCache struct {
	mu sync.Mutex
	m  map[string]UA
}

const uaCacheMax = 4096

func (c *uaCache) parse(s string) UA {
	c.mu.Lock()
	u, ok := c.m[s]
	c.mu.Unlock()
	if ok {
		return u
	}
	u = ParseUA(s)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= uaCacheMax {
		c.m = make(map[string]UA, 256)
	}
	c.m[s] = u
	c.mu.Unlock()
	return u
}

// dedup remembers recent messageIds in two generations: an id is a
// duplicate while it is in either. The current generation becomes the
// previous one every window, or sooner when it holds max/2 ids, so an id
// is remembered for at least one window unless memory runs out first, and
// memory is bounded by max ids.
type dedup struct {
	mu        sync.Mutex
	cur, prev map[string]struct{}
	started   time.Time
	window    time.Duration
	max       int
}

func newDedup(window time.Duration, max int) *dedup {
	return &dedup{cur: map[string]struct{}{}, prev: map[string]struct{}{}, window: window, max: max}
}

func (d *dedup) rotate(now time.Time) {
	if d.started.IsZero() {
		d.started = now
	}
	if now.Sub(d.started) >= 2*d.window {
		d.prev, d.cur, d.started = map[string]struct{}{}, map[string]struct{}{}, now
	} else if now.Sub(d.started) >= d.window || len(d.cur) >= d.max/2 {
		d.prev, d.cur, d.started = d.cur, map[string]struct{}{}, now
	}
}

// seen reports whether id was marked within the window.
func (d *dedup) seen(id string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rotate(now)
	if _, ok := d.cur[id]; ok {
		return true
	}
	_, ok := d.prev[id]
	return ok
}

// mark remembers ids, once they are durable.
func (d *dedup) mark(ids []string, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		d.rotate(now)
		d.cur[id] = struct{}{}
	}
}

// newMessageID is a random id in the form analytics.js uses for its own.
func newMessageID() string {
	var b [16]byte
	rand.Read(b[:])
	return "trb-" + hex.EncodeToString(b[:])
}

// parseTime reads a timestamp as the schema does: RFC 3339 or Unix ms.
func parseTime(v any) (time.Time, bool) {
	switch t := v.(type) {
	case string:
		ts, err := time.Parse(time.RFC3339Nano, t)
		return ts, err == nil
	case json.Number:
		ms, err := t.Int64()
		if err != nil {
			return time.Time{}, false
		}
		return time.UnixMilli(ms), true
	}
	return time.Time{}, false
}

func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// object returns m[k] as an object, creating it when absent or null; ok is
// false when m[k] holds something else (the schema check will say so).
func object(m map[string]any, k string) (map[string]any, bool) {
	switch v := m[k].(type) {
	case map[string]any:
		return v, true
	case nil:
		o := map[string]any{}
		m[k] = o
		return o, true
	}
	return nil, false
}

// setIfAbsent sets m[k] = v unless the sender gave a non-null value.
func setIfAbsent(m map[string]any, k, v string) {
	if v == "" {
		return
	}
	if old, ok := m[k]; !ok || old == nil {
		m[k] = v
	}
}

// stringField returns m[k] when it is a non-empty string.
func stringField(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}
