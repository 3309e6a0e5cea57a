package console

import (
	"fmt"
	"math"
	"net"
	"sync"
	"time"
)

// Sign-in limits (review 5). The broker's own delay after a failed
// authentication and any address-based defence see only the console's
// address, so the console counts failures itself: per user name (a
// password guessed slowly from many addresses) and per remote address
// (many names from one). Each is a token bucket that only failures drain.
// The price: a stranger can keep one user name locked by failing on it;
// signing in as someone else, or from elsewhere, still works.
const (
	failuresPerUser   = 5
	userRefill        = 12 * time.Second // 5 a minute
	failuresPerAddr   = 20
	addrRefill        = 3 * time.Second // 20 a minute
	limiterMaxEntries = 10_000
	// loginQueue is how long a sign-in waits for a free check before a 503.
	loginQueue = 2 * time.Second
	// logNameBytes clips user names in log lines: a stranger chooses them.
	logNameBytes = 100
)

type bucket struct {
	tokens float64
	at     time.Time
}

// limiter is token buckets by key, bounded in memory.
type limiter struct {
	mu     sync.Mutex
	burst  float64
	refill time.Duration
	m      map[string]*bucket
}

func newLimiter(burst int, refill time.Duration) *limiter {
	return &limiter{burst: float64(burst), refill: refill, m: map[string]*bucket{}}
}

func (l *limiter) level(key string, now time.Time) *bucket {
	b := l.m[key]
	if b == nil {
		if len(l.m) >= limiterMaxEntries {
			// Full buckets carry nothing; drop them, then anything.
			for k, o := range l.m {
				if o.tokens+now.Sub(o.at).Seconds()/l.refill.Seconds() >= l.burst {
					delete(l.m, k)
				}
			}
			for k := range l.m {
				if len(l.m) < limiterMaxEntries {
					break
				}
				delete(l.m, k)
			}
		}
		b = &bucket{tokens: l.burst, at: now}
		l.m[key] = b
		return b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.at).Seconds()/l.refill.Seconds())
	b.at = now
	return b
}

// wait is how long key must wait before its next attempt; 0 to go on.
func (l *limiter) wait(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.level(key, time.Now())
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(l.refill))
}

// fail takes a token from key.
func (l *limiter) fail(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.level(key, time.Now())
	b.tokens = math.Max(0, b.tokens-1)
}

type loginLimits struct {
	user, addr *limiter
}

func newLoginLimits() *loginLimits {
	return &loginLimits{user: newLimiter(failuresPerUser, userRefill), addr: newLimiter(failuresPerAddr, addrRefill)}
}

// refusal says why a sign-in must wait, "" when it may go on.
func (ll *loginLimits) refusal(user, addr string) string {
	if d := ll.addr.wait(addr); d > 0 {
		return fmt.Sprintf("too many failed sign-ins from your address: try again in %s", d.Round(time.Second)+time.Second)
	}
	if d := ll.user.wait(user); d > 0 {
		return fmt.Sprintf("too many failed sign-ins for this user name: try again in %s", d.Round(time.Second)+time.Second)
	}
	return ""
}

func (ll *loginLimits) failed(user, addr string) {
	ll.user.fail(user)
	ll.addr.fail(addr)
}

// remoteHost is the address part of RemoteAddr: the console trusts no
// forwarding header, so behind a proxy every sign-in shares one address.
func remoteHost(remote string) string {
	if h, _, err := net.SplitHostPort(remote); err == nil {
		return h
	}
	return remote
}
