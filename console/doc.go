// Package console is Tributary's web console: server-rendered pages over a
// Kafka client, for the cluster, its topics, their messages and the
// consumer groups, and, when given their URLs, the schema registry's
// subjects and the jobs scheduler's load jobs (docs/console.md).
//
// The console is a Kafka client like any other: everything it shows and
// does goes through the Kafka protocol (franz-go's kgo and kadm), with the
// client properties it was started with, so it runs with the rights of
// that principal and no more.
//
// A Server is an http.Handler and is safe for concurrent use: it holds one
// kgo.Client (safe for concurrent use) for admin requests and producing,
// the registry and jobs HTTP clients (safe for concurrent use; the
// registry decoder caches schemas by id under its own lock), immutable
// configuration, and the key that signs CSRF tokens. A message browse opens
// a consumer client of its own for the request's lifetime.
//
// Safety by default (each refusal is a 403 that says why):
//   - with Config.ReadOnly every POST is refused before it is parsed;
//   - every POST needs a CSRF token derived from a cookie (double submit,
//     HMAC-signed, SameSite=Strict), and a cross-origin Origin is refused;
//   - with Config.LoopbackOnly a Host header that is not a loopback name is
//     refused, so a DNS-rebinding page cannot reach a console on 127.0.0.1;
//   - request bodies are limited (MaxBodyBytes), browsing stops at a
//     record limit and a time limit, and sensitive configs are never shown.
package console
