package console

import (
	"context"
	"time"
)

// maxBrowses bounds the browses running at once in a console (each may
// hold browseBytes); with per-user login, each person also runs one at a
// time, so one person's browse, or a client that stops reading a stream,
// holds one slot and not everyone's (review 15).
const maxBrowses = 3

// acquireBrowse takes the request's browse slots, waiting until ctx ends
// or wait fires (nil: no limit but ctx); release gives them back.
func (s *Server) acquireBrowse(ctx context.Context, wait <-chan time.Time) (release func(), ok bool) {
	var own chan struct{}
	if ss, isSession := ctx.Value(sessionKey{}).(*session); isSession {
		own = ss.browsing
	}
	if own != nil {
		select {
		case own <- struct{}{}:
		case <-wait:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
	select {
	case s.browsing <- struct{}{}:
	case <-wait:
		if own != nil {
			<-own
		}
		return nil, false
	case <-ctx.Done():
		if own != nil {
			<-own
		}
		return nil, false
	}
	return func() {
		<-s.browsing
		if own != nil {
			<-own
		}
	}, true
}
