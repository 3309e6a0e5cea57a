package config

import (
	"fmt"
	"strconv"
	"strings"
)

// defaultQueuedMaxRequestBytes is queued.max.request.bytes unless set.
const defaultQueuedMaxRequestBytes = 512 << 20

// QueuedMaxRequestBytes is the request memory pool's size, or -1 for no
// pool. Unset, it is 512 MiB, or socket.request.max.bytes if that is
// larger, so that raising the frame limit alone never refuses a start.
func (b *Broker) QueuedMaxRequestBytes() int64 {
	if b.IsSet("queued.max.request.bytes") {
		return b.Int("queued.max.request.bytes")
	}
	return max(defaultQueuedMaxRequestBytes, b.Int("socket.request.max.bytes"))
}

// ConnectionsPerIPOverrides parses max.connections.per.ip.overrides,
// Kafka's "host:count,ip:count", into counts by host or IP as written
// (the server resolves host names). An IPv6 address is the part before the
// last colon.
func (b *Broker) ConnectionsPerIPOverrides() (map[string]int, error) {
	out := map[string]int{}
	for _, e := range b.List("max.connections.per.ip.overrides") {
		i := strings.LastIndexByte(e, ':')
		if i <= 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q is not host:count", e)
		}
		host := strings.Trim(strings.TrimSpace(e[:i]), "[]")
		n, err := strconv.Atoi(strings.TrimSpace(e[i+1:]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q: the count must be a number of at least 0", e)
		}
		out[host] = n
	}
	return out, nil
}
