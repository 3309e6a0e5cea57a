package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// printOpenListeners warns, in cluster describe, of every broker listener
// that lets anyone on the network do anything: PLAINTEXT, not on loopback,
// not a controller listener, and no authorizer (the broker's
// tributary_broker_open_listeners). Brokers whose configs the principal
// may not describe are left out.
func printOpenListeners(ctx context.Context, w io.Writer, adm *kadm.Client, brokers []int32) {
	for _, id := range brokers {
		rcs, err := adm.DescribeBrokerConfigs(ctx, id)
		if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
			continue
		}
		cfg := map[string]string{}
		for _, c := range rcs[0].Configs {
			if c.Value != nil {
				cfg[c.Key] = *c.Value
			}
		}
		if cfg["authorizer.class.name"] != "" {
			continue
		}
		for _, l := range openListeners(cfg["listeners"], cfg["listener.security.protocol.map"], cfg["controller.listener.names"]) {
			fmt.Fprintf(w, "WARNING     broker %d: listener %s accepts anyone on the network as User:ANONYMOUS, with no authorizer (docs/security.md)\n", id, l)
		}
	}
}

// openListeners are the PLAINTEXT listeners off loopback, as NAME://addr.
func openListeners(listeners, protocolMap, controllers string) []string {
	protocols := map[string]string{}
	for _, kv := range strings.Split(protocolMap, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), ":"); ok {
			protocols[strings.ToUpper(k)] = strings.ToUpper(v)
		}
	}
	ctrl := map[string]bool{}
	for _, n := range strings.Split(controllers, ",") {
		ctrl[strings.ToUpper(strings.TrimSpace(n))] = true
	}
	var out []string
	for _, l := range strings.Split(listeners, ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(l), "://")
		if !ok {
			continue
		}
		name = strings.ToUpper(name)
		proto, known := protocols[name]
		if !known {
			proto = name
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil || proto != "PLAINTEXT" || ctrl[name] || loopbackHost(host) {
			continue
		}
		out = append(out, name+"://"+addr)
	}
	return out
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
