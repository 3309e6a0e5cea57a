package registry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Writes go to one leader: the registry inside the broker that leads
// partition 0 of the topic, found from the cluster's metadata; each broker
// announces its registry's address in its own config
// (schema.registry.listeners, read with DescribeConfigs). A registry that
// is not the leader forwards the request as it came and relays the answer,
// then waits until it has read what the leader wrote, so a client reads
// its own write on any node. When no leader registry can be reached (the
// leader has none, is down, or is being replaced) the registry writes
// itself: the conflict rule of the state (docs/registry.md, Writes) keeps
// every reader agreeing, and forwarding makes conflicts rare rather than
// impossible.

// forwardedHeader marks a forwarded request: it is never forwarded again,
// so two nodes that disagree about the leader cannot bounce a request.
const forwardedHeader = "X-Tributary-Registry-Forwarded"

// forwarded is a leader's answer, relayed as is.
type forwarded struct {
	status int
	ctype  string
	body   []byte
}

type leaderInfo struct {
	url   string // "" : write here
	until time.Time
}

// leaderOnly wraps a write handler.
func (r *Registry) leaderOnly(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, req *http.Request) (any, error) {
		if err := r.mayWrite(req); err != nil {
			return nil, err
		}
		if req.Header.Get(forwardedHeader) != "" {
			return h(w, req)
		}
		body, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
		if err != nil {
			return nil, errf(42201, "Invalid request body: %v", err)
		}
		for attempt := 0; attempt < 3; attempt++ {
			leader, err := r.leader(req.Context(), attempt > 0)
			if err != nil {
				r.log.Info("registry: cannot find the leader registry; writing here", "err", err)
				break
			}
			if leader == "" {
				break
			}
			res, err := r.forward(req, leader, body)
			if err == nil {
				r.log.Info("registry: forwarded a write to the leader", "leader", leader, "method", req.Method, "path", req.URL.Path, "status", res.status)
				return res, nil
			}
			r.log.Info("registry: forwarding a write to the leader failed", "leader", leader, "attempt", attempt+1, "err", err)
			if req.Context().Err() != nil {
				return nil, req.Context().Err()
			}
			time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		return h(w, req)
	}
}

func (r *Registry) forward(req *http.Request, leader string, body []byte) (*forwarded, error) {
	ctx, cancel := context.WithTimeout(req.Context(), r.cfg.WriteTimeout)
	defer cancel()
	u := leader + req.URL.EscapedPath()
	if req.URL.RawQuery != "" {
		u += "?" + req.URL.RawQuery
	}
	fr, err := http.NewRequestWithContext(ctx, req.Method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	fr.Header.Set("Content-Type", contentType)
	fr.Header.Set(forwardedHeader, "1")
	if a := req.Header.Get("Authorization"); a != "" {
		fr.Header.Set("Authorization", a)
	}
	resp, err := r.fwd.Do(fr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusBadGateway {
		return nil, fmt.Errorf("leader answered %d: %s", resp.StatusCode, b)
	}
	if resp.StatusCode/100 == 2 {
		// Read what the leader wrote before answering: the end offset now
		// is past its record.
		ends, err := kadm.NewClient(r.cl).ListEndOffsets(ctx, r.cfg.Topic)
		if err == nil {
			if o, ok := ends.Lookup(r.cfg.Topic, 0); ok && o.Err == nil {
				r.waitApplied(ctx, o.Offset)
			}
		}
	}
	return &forwarded{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: b}, nil
}

// leader is the URL of the leader's registry, "" when this registry is the
// leader or the leader has none; cached for a second unless refresh.
func (r *Registry) leader(ctx context.Context, refresh bool) (string, error) {
	r.leaderMu.Lock()
	defer r.leaderMu.Unlock()
	if !refresh && time.Now().Before(r.leaderCache.until) {
		return r.leaderCache.url, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	adm := kadm.NewClient(r.cl)
	md, err := adm.Metadata(ctx, r.cfg.Topic)
	if err != nil {
		return "", err
	}
	p, ok := md.Topics[r.cfg.Topic].Partitions[0]
	if !ok || p.Leader < 0 {
		return "", fmt.Errorf("%s partition 0 has no leader", r.cfg.Topic)
	}
	var u string
	if !(r.cfg.InBroker && p.Leader == r.cfg.NodeID) {
		rcs, err := adm.DescribeBrokerConfigs(ctx, p.Leader)
		if err != nil {
			return "", err
		}
		var host string
		for _, b := range md.Brokers {
			if b.NodeID == p.Leader {
				host = b.Host
			}
		}
		for _, rc := range rcs {
			if rc.Err != nil {
				return "", rc.Err
			}
			for _, c := range rc.Configs {
				if c.Key == "schema.registry.listeners" {
					u = advertisedURL(c.MaybeValue(), host)
				}
			}
		}
	}
	r.leaderCache = leaderInfo{url: u, until: time.Now().Add(time.Second)}
	return u, nil
}

// advertisedURL turns the first of a broker's schema.registry.listeners
// into a URL others can reach: a wildcard or empty host becomes the
// broker's advertised host.
func advertisedURL(listeners, brokerHost string) string {
	first, _, _ := strings.Cut(listeners, ",")
	first = strings.TrimSpace(first)
	if first == "" {
		return ""
	}
	if !strings.Contains(first, "://") {
		first = "http://" + first
	}
	pu, err := url.Parse(first)
	if err != nil {
		return ""
	}
	host, port := pu.Hostname(), pu.Port()
	if port == "" {
		return ""
	}
	if _, err := strconv.Atoi(port); err != nil {
		return ""
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = brokerHost
	}
	return pu.Scheme + "://" + net.JoinHostPort(host, port)
}
