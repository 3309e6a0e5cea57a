// Package server owns the broker's network side: listeners, connections,
// the Kafka wire protocol framing, and one handler per API, each in a file
// named by its API key (00_produce.go, 01_fetch.go, ...). The handler table
// in apis.go is the single list of what the broker implements; ApiVersions is
// built from it, so what is advertised is exactly what is served.
//
// Concurrency: one goroutine per connection reads a request, runs its
// handler and writes the response before reading the next, so responses go
// out in request order, as clients that pipeline requests require (Kafka
// mutes a connection the same way while a request is in flight). Handlers
// run concurrently across connections and share the partitions, the
// controller and the log dirs, which are safe for concurrent use.
//
// What clients may cost is bounded before it is spent: a request frame
// takes its bytes from the request pool (mempool.go) before it is read,
// connections are counted against max.connections at accept
// (connlimit.go), a failing accept is retried (accept.go), and a handler's
// panic closes only its connection (conn.go).
package server
