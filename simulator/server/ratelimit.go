package server

import (
	"hash/maphash"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// DefaultRateLimitClients bounds how many clients the rate limiter keeps a
// bucket for; at about 100 bytes each, 65,536 is some 6 MB.
const DefaultRateLimitClients = 1 << 16

const rateShards = 64

// rateLimiter is a token bucket per client IP (an IPv6 client per /64,
// what one host usually has): rate tokens a second, at most burst, one per
// request. Memory is bounded: a bucket that has filled up again is the
// same as a new one and is dropped when its shard is full; clients beyond
// the bound while every bucket is in use share one overflow bucket per
// shard, so they are still limited.
type rateLimiter struct {
	rate, burst float64
	perShard    int
	// full is how long an empty bucket takes to fill up.
	full  time.Duration
	now   func() time.Time
	start time.Time
	seed  maphash.Seed
	sh    [rateShards]rateShard
}

type tokenBucket struct {
	tokens float64
	last   time.Duration // since start
}

type rateShard struct {
	mu        sync.Mutex
	clients   map[netip.Addr]tokenBucket
	overflow  tokenBucket
	lastSweep time.Duration
}

func newRateLimiter(perSecond int, clients int, now func() time.Time) *rateLimiter {
	if now == nil {
		now = time.Now
	}
	l := &rateLimiter{rate: float64(perSecond), burst: float64(perSecond), perShard: max(1, clients/rateShards),
		now: now, start: now(), seed: maphash.MakeSeed()}
	l.full = time.Duration(float64(time.Second) * l.burst / l.rate)
	for i := range l.sh {
		l.sh[i].clients = map[netip.Addr]tokenBucket{}
		l.sh[i].overflow = tokenBucket{tokens: l.burst}
	}
	return l
}

// clientOf is the client a request counts against: its IP address, an
// IPv6 one cut to its /64. Forwarding headers are not trusted.
func clientOf(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	ip := ap.Addr().Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			ip = p.Addr()
		}
	}
	return ip
}

// allow takes a token of the client's bucket; when there is none it says
// how long until there is.
func (l *rateLimiter) allow(ip netip.Addr) (bool, time.Duration) {
	t := l.now().Sub(l.start)
	sh := &l.sh[maphash.Comparable(l.seed, ip)%rateShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b, known := sh.clients[ip]
	overflow := false
	if !known {
		if len(sh.clients) >= l.perShard && t-sh.lastSweep >= l.full {
			sh.sweep(l, t)
		}
		if len(sh.clients) >= l.perShard {
			b, overflow = sh.overflow, true
		} else {
			b = tokenBucket{tokens: l.burst, last: t}
		}
	}
	if t > b.last {
		b.tokens = math.Min(l.burst, b.tokens+(t-b.last).Seconds()*l.rate)
		b.last = t
	}
	ok := b.tokens >= 1
	if ok {
		b.tokens--
	}
	if overflow {
		sh.overflow = b
	} else {
		sh.clients[ip] = b
	}
	if ok {
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// sweep drops the buckets that have filled up again.
func (sh *rateShard) sweep(l *rateLimiter, t time.Duration) {
	sh.lastSweep = t
	for ip, b := range sh.clients {
		if b.tokens+(t-b.last).Seconds()*l.rate >= l.burst {
			delete(sh.clients, ip)
		}
	}
}

// size is the number of client buckets, for tests.
func (l *rateLimiter) size() int {
	n := 0
	for i := range l.sh {
		l.sh[i].mu.Lock()
		n += len(l.sh[i].clients)
		l.sh[i].mu.Unlock()
	}
	return n
}

// limited answers 429 rate_limited, in the request's format with a
// Retry-After, when the client has no token left; it reports whether it
// did.
func (s *Server) limited(op device.Operation, w http.ResponseWriter, r *http.Request, start time.Time) bool {
	if s.cfg.RateLimit <= 0 {
		return false
	}
	ok, wait, derr := s.rates.Allow(clientFrom(r, s.cfg.TrustedProxies), s.cfg.RateLimit)
	if derr != nil {
		f := formatOf(r)
		s.fail(w, orJSON(f), derr)
		s.record(r, op, start, f, StatusOf(derr.Code), derr, nil, s.exchangeID(w))
		return true
	}
	if ok {
		return false
	}
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	e := device.Errorf(device.CodeRateLimited, "", "more than %d requests a second from this client; retry after %d s",
		s.cfg.RateLimit, secs)
	f := formatOf(r)
	s.fail(w, orJSON(f), e)
	s.record(r, op, start, f, http.StatusTooManyRequests, e, nil, s.exchangeID(w))
	return true
}
