package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	brokercfg "github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/registry"
)

// startRegistry runs the schema registry in-process when
// schema.registry.listeners is set; it speaks to this broker through its
// first client listener, like any client (nil, nil when off).
func startRegistry(ctx context.Context, cfg *brokercfg.Broker) (*registry.Registry, error) {
	ls := cfg.List("schema.registry.listeners")
	if len(ls) == 0 {
		return nil, nil
	}
	listen := strings.TrimPrefix(strings.TrimPrefix(ls[0], "http://"), "HTTP://")
	bls, err := cfg.AdvertisedListeners()
	if err != nil || len(bls) == 0 {
		return nil, fmt.Errorf("schema.registry.listeners: no client listener to reach the broker: %v", err)
	}
	host := bls[0].Host
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return registry.Start(ctx, registry.Config{
		Brokers: []string{net.JoinHostPort(host, fmt.Sprint(bls[0].Port))},
		Listen:  listen,
		Logger:  slog.Default(),
	})
}
