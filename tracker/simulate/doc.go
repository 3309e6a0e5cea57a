// Package simulate makes web traffic for demos and tests: visitors with
// sessions who land on pages, search, view products, click, add to cart,
// check out and sign up, sent to a tracker's Segment-compatible HTTP API in
// batches, as the browser library or a server-side Segment library would.
//
// The traffic is deterministic for a seed, except for the times, which are
// the wall clock's: it is live traffic.
package simulate
