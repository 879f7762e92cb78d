package server

import (
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// GuessCounter counts a client's failed attempts at the admin token in an
// Authorization header, where every replica counts: Failed records one and
// says whether the client is still within its allowance (a burst of
// signInBurst, then one every signInEvery), and else how long until it is.
type GuessCounter interface {
	Failed(client netip.Addr) (ok bool, wait time.Duration, derr *device.Error)
}

// memGuesses is the in-process GuessCounter: a token bucket per client,
// as the sign-in limiter's.
type memGuesses struct{ l *rateLimiter }

func (m memGuesses) Failed(client netip.Addr) (bool, time.Duration, *device.Error) {
	ok, wait := m.l.allow(client)
	return ok, wait, nil
}

// maxHeld bounds how many clients a BearerLimiter remembers as held back.
const maxHeld = 4096

// BearerLimiter slows the guessing of the admin token through the
// Authorization header, on every admin path and /metrics, as the sign-in
// form is slowed: failed attempts are counted per client (GuessCounter,
// shared by the replicas; behind a balancer, the client its trusted
// Forwarded header names), and a client over its allowance is held back,
// every admin request of it without the right token answered 429 with
// Retry-After. A request with the right token is never held back, however
// many wrong ones came from its address (a stale token in a script, other
// users behind the same balancer), and costs nothing more: it is never
// counted. What keeps guessing hopeless is the token's strength, checked
// at start-up (CheckAdminToken: 32 characters or more).
type BearerLimiter struct {
	counter GuessCounter
	now     func() time.Time
	mu      sync.Mutex
	until   map[netip.Addr]time.Time
	trusted []netip.Prefix
}

// Behind makes b count clients by the Forwarded or X-Forwarded-For of
// the trusted proxies in list (clientFrom); it returns b.
func (b *BearerLimiter) Behind(list []netip.Prefix) *BearerLimiter {
	b.trusted = list
	return b
}

// NewBearerLimiter counts failed attempts with c (in this process's memory
// when nil).
func NewBearerLimiter(c GuessCounter, now func() time.Time) *BearerLimiter {
	if now == nil {
		now = time.Now
	}
	if c == nil {
		c = memGuesses{newSignInLimiter(now)}
	}
	return &BearerLimiter{counter: c, now: now, until: map[netip.Addr]time.Time{}}
}

// Held answers 429 and returns true when r's client is held back.
func (b *BearerLimiter) Held(w http.ResponseWriter, r *http.Request) bool {
	c := clientFrom(r, b.trusted)
	b.mu.Lock()
	until, held := b.until[c]
	if held && !b.now().Before(until) {
		delete(b.until, c)
		held = false
	}
	b.mu.Unlock()
	if held {
		tooManyGuesses(w, until.Sub(b.now()))
	}
	return held
}

// Failed counts a failed attempt of r's client. Over the allowance it
// holds the client back, answers 429 and returns true; else the caller
// answers the failure itself.
func (b *BearerLimiter) Failed(w http.ResponseWriter, r *http.Request) bool {
	c := clientFrom(r, b.trusted)
	ok, wait, derr := b.counter.Failed(c)
	if derr != nil {
		adminError(w, derr)
		return true
	}
	if ok {
		return false
	}
	now := b.now()
	b.mu.Lock()
	if len(b.until) >= maxHeld {
		for k, t := range b.until {
			if !now.Before(t) {
				delete(b.until, k)
			}
		}
	}
	if len(b.until) < maxHeld {
		b.until[c] = now.Add(wait)
	}
	b.mu.Unlock()
	tooManyGuesses(w, wait)
	return true
}

func tooManyGuesses(w http.ResponseWriter, wait time.Duration) {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	refuse(w, http.StatusTooManyRequests, device.CodeRateLimited, "Authorization",
		"too many wrong admin tokens from this client; retry after "+strconv.Itoa(secs)+" s")
}
