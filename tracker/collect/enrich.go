package collect

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"

	"github.com/mileusna/useragent"
	"github.com/tributary-io/tributary/internal/jsonstr"
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

// uaInfo is a parsed user agent with the JSON the collector writes for
// it, made once per distinct agent.
type uaInfo struct {
	UA
	// The fields as JSON strings; nil when empty, which leaves the
	// sender's field alone.
	jBrowser, jBrowserVersion, jOS, jOSVersion, jDeviceType, jDeviceModel []byte
	// The objects context.browser, .os and .device become when the sender
	// sent none.
	browserObj, osObj, deviceObj []byte
}

func newUAInfo(u UA) *uaInfo {
	str := func(s string) []byte {
		if s == "" {
			return nil
		}
		return jsonstr.Append(nil, s)
	}
	obj := func(a, b field) []byte {
		var fs []field
		for _, f := range []field{a, b} {
			if f.val != nil {
				fs = append(fs, f)
			}
		}
		return writeObject(nil, nil, fs)
	}
	i := &uaInfo{UA: u, jBrowser: str(u.Browser), jBrowserVersion: str(u.BrowserVersion), jOS: str(u.OS),
		jOSVersion: str(u.OSVersion), jDeviceType: str(u.DeviceType), jDeviceModel: str(u.DeviceModel)}
	if u.Bot {
		i.jDeviceType = jsonBot
	}
	i.browserObj = obj(field{"name", i.jBrowser}, field{"version", i.jBrowserVersion})
	i.osObj = obj(field{"name", i.jOS}, field{"version", i.jOSVersion})
	i.deviceObj = obj(field{"type", i.jDeviceType}, field{"model", i.jDeviceModel})
	return i
}

// uaCache memoises ParseUA: a site's traffic has few distinct agents. It is
// bounded by clearing when full.
type uaCache struct {
	mu sync.Mutex
	m  map[string]*uaInfo
}

const uaCacheMax = 4096

func (c *uaCache) lookup(ua []byte) *uaInfo {
	c.mu.Lock()
	u, ok := c.m[string(ua)]
	c.mu.Unlock()
	if ok {
		return u
	}
	u = newUAInfo(ParseUA(string(ua)))
	c.mu.Lock()
	if c.m == nil || len(c.m) >= uaCacheMax {
		c.m = make(map[string]*uaInfo, 256)
	}
	c.m[string(ua)] = u
	c.mu.Unlock()
	return u
}

// appendMessageID appends a random id in the form analytics.js uses for
// its own.
func appendMessageID(dst []byte) []byte {
	var b [16]byte
	rand.Read(b[:])
	dst = append(dst, "trb-"...)
	return hex.AppendEncode(dst, b[:])
}
