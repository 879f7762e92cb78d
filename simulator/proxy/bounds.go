package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strings"
	"sync"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// DefaultMaxInFlight bounds the bytes of bodies (requests and answers)
// the proxy holds at once, across every request in flight.
const DefaultMaxInFlight = 64 << 20

// errOverBudget: taking a body would pass the proxy's memory bound.
var errOverBudget = errors.New("the proxy holds as many bodies in flight as its memory bound allows")

// memBudget counts the body bytes held by the requests in flight.
type memBudget struct {
	mu        sync.Mutex
	used, max int64
}

// lease is one request's share of the budget, given back when it ends.
type lease struct {
	b *memBudget
	n int64
}

func (l *lease) take(n int64) bool {
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	if l.b.used+n > l.b.max {
		return false
	}
	l.b.used += n
	l.n += n
	return true
}

func (l *lease) release() {
	l.b.mu.Lock()
	l.b.used -= l.n
	l.n = 0
	l.b.mu.Unlock()
}

// heldPerByte is what a body byte read costs in memory while a request
// is in flight (the buffer io.ReadAll grows by doubling, the copies the
// judging makes), measured with 1 MiB bodies: the bound counts that.
const heldPerByte = 3

// leaseReader takes from the lease what every byte it reads costs.
type leaseReader struct {
	r io.Reader
	l *lease
}

func (lr leaseReader) Read(p []byte) (int, error) {
	n, err := lr.r.Read(p)
	if n > 0 && !lr.l.take(heldPerByte*int64(n)) {
		return 0, errOverBudget
	}
	return n, err
}

type leaseKey struct{}

// bounded gives each request a lease of the memory budget, read by
// bodyOf and forward, and gives it back when the request is answered.
func (p *Proxy) bounded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := &lease{b: p.mem}
		defer l.release()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), leaseKey{}, l)))
	})
}

// limited is rd read within the request's lease (as it is when no lease
// was given: tests calling a handler directly).
func limited(ctx context.Context, rd io.Reader) io.Reader {
	if l, ok := ctx.Value(leaseKey{}).(*lease); ok {
		return leaseReader{rd, l}
	}
	return rd
}

// overBudget answers 503 with Retry-After when a body would pass the
// memory bound, and says whether it did.
func (p *Proxy) overBudget(w http.ResponseWriter, f device.Format, err error) bool {
	if !errors.Is(err, errOverBudget) {
		return false
	}
	p.log.Warn("request refused: the proxy's bodies in flight are at their memory bound", "max_bytes", p.mem.max)
	w.Header().Set("Retry-After", "1")
	p.fail(w, f, http.StatusServiceUnavailable, device.Errorf("proxy_busy", "",
		"%s (%d MiB): retry in a moment", errOverBudget.Error(), p.mem.max>>20))
	return true
}

// relayedHeaders are the upstream's answer headers an API answer needs;
// every other header stays with the upstream: those that act on the
// proxy's whole origin (Set-Cookie, Clear-Site-Data, Refresh, Link,
// Service-Worker-Allowed, Access-Control-*, Alt-Svc, …) never reach the
// app or the operator's browser.
var relayedHeaders = map[string]bool{}

func init() {
	for _, h := range []string{"Content-Type", "Allow", "Content-Encoding", "Content-Language", "Retry-After", "Date",
		"Cache-Control", "Expires", "Age", "ETag", "Last-Modified", "Vary", "X-Request-Id", "X-Correlation-Id",
		"RateLimit", "RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset",
		"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Server"} {
		relayedHeaders[textproto.CanonicalMIMEHeaderKey(h)] = true
	}
}

// ownPathSpelled says whether a path spells one of the proxy's own
// (/_sim/…, /metrics) in another case or with parameters (";x") in a
// segment: an upstream that routes case-insensitively or drops
// parameters would read it as its admin API. Such a path is refused
// before anything is relayed.
func ownPathSpelled(p string) bool {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		s, _, _ = strings.Cut(s, ";")
		segs[i] = strings.ToLower(s)
	}
	norm := strings.Join(segs, "/")
	if norm == p {
		return false
	}
	return norm == "/_sim" || strings.HasPrefix(norm, "/_sim/") || norm == "/metrics" || strings.HasPrefix(norm, "/metrics/")
}

// ownPathProblem is pathProblem's word on such a path.
func ownPathProblem(p string) string {
	if ownPathSpelled(p) {
		return fmt.Sprintf("the path spells the proxy's own /_sim/ or /metrics in another case or with parameters (%q)", p)
	}
	return ""
}
