// Package cluster owns the cluster metadata: the brokers, the topics with
// their ids, partitions, replicas, leaders and configs, as an immutable Image
// built by applying metadata records in order (as KRaft brokers apply the
// __cluster_metadata log), and the controller that validates changes and
// appends those records.
//
// An Image is never modified after it is published: readers take the
// current one without locks and keep a consistent view for a whole request.
//
// # How a change flows
//
// A change (Controller.change) is decided under Controller.mu: built and
// validated against the newest image, the committed one with every change
// still in flight (Controller.ahead), then handed to the log in that order
// (the single node's file append, or the enqueueing of the Raft proposal).
// mu is then released: replication, the FSM's application and the
// subscribers (the replica manager creating and deleting logs on disk, the
// group coordinator loading partitions, metrics) run without it, on the
// publishing goroutine (Raft's FSM goroutine, or on a single node whoever
// drains the appended changes, in log order), while the next change is
// decided. The caller waits, without locks, until its change is applied
// here. Because each decision sees every earlier one, two changes to one
// partition never start from the same state; if a change in flight fails,
// the next decision waits until none are in flight and starts again from
// the committed image.
//
// # Locks
//
// Lock order, outermost first (a lock is only taken while holding those
// above it, never the other way):
//
//	Controller.pubOrder   single node: one drainer publishes at a time
//	  Controller.mu       decisions; held across the local log append or
//	                      the Raft enqueue, never across replication,
//	                      application or subscribers
//	  Controller.pubMu    publication: the image store and the subscribers,
//	                      which run under it and must not call back into
//	                      the controller (they take their own locks only)
//	membership.mu         the active controller's heartbeat times, a leaf
//	splitListener.mu      a listener's connections not yet routed, a leaf
//
// pubOrder is never taken under mu or pubMu, and mu never under pubMu, so
// a subscriber's disk work delays the next publication but no decision.
package cluster
