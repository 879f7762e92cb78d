package server

import (
	"hash/maphash"
	"log/slog"
	"math"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// The admin API's guard against other web pages, in the manner of Jupyter
// and the Vite dev server. gwsim listens on a developer's laptop without
// an admin token by default, where any page the browser opens can send it
// requests:
//
//   - DNS rebinding: a page on attacker.example whose name is made to
//     resolve to 127.0.0.1 reads and changes /_sim/ as if it were the same
//     origin. Its requests carry Host: attacker.example, so /_sim/ answers
//     only a Host that is an IP address, localhost (or a name under
//     .localhost), the name gwsim listens on, or one of
//     Config.AllowedHosts (--allowed-hosts); anything else gets 421.
//   - Cross-site requests: a form on another origin can POST to /_sim/reset
//     (a "simple" request, no CORS pre-flight). An admin change (any method
//     but GET, HEAD and OPTIONS) whose Origin is not this server's, or
//     whose Sec-Fetch-Site is anything but same-origin or none (typed by
//     the user), gets 403, and its body must be application/json, which no
//     form can send: anything else gets 415. Another site's page loading
//     /_sim/ as a resource (an image, a script, an event stream) gets 403
//     too; following a link to the dashboard does not.
//
// curl and other programs send no Origin and no Sec-Fetch-Site, and a
// Host of the address they were given: they pass as before.

// Guard is those checks, for gwsim serve and gwsim proxy alike.
type Guard struct {
	// AllowedHosts: see Config.AllowedHosts.
	AllowedHosts []string
	// ListenHost is the host part of the address listened on, which is
	// allowed too (set it before serving).
	ListenHost string
	Log        *slog.Logger
}

// Wrap wraps the handler of every /_sim/ path with the checks above; other
// paths (the operations) pass straight through.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/_sim/") {
			next.ServeHTTP(w, r)
			return
		}
		if !HostAllowed(r.Host, g.ListenHost, g.AllowedHosts) {
			g.Log.Warn("admin call refused: Host not allowed (DNS rebinding?)", "host", truncate(r.Host, 100), "remote", r.RemoteAddr)
			refuse(w, http.StatusMisdirectedRequest, "misdirected_request", "Host",
				"this gwsim does not answer for host "+strconv.Quote(truncate(r.Host, 100))+
					"; it answers for IP addresses, localhost and the names given with --allowed-hosts")
			return
		}
		if crossSiteLoad(r) {
			// Another site's page loading /_sim/ as a resource (an image,
			// a script, an event stream): no use, and it would hold
			// streams open. Following a link to the dashboard still works.
			refuse(w, http.StatusForbidden, "cross_site_request", "Sec-Fetch-Site", "gwsim's admin calls are not resources for other sites' pages")
			return
		}
		if unsafeMethod(r.Method) {
			if why := crossSite(r); why != "" {
				g.Log.Warn("admin change refused: cross-site", "path", r.URL.Path, "why", why, "remote", r.RemoteAddr)
				refuse(w, http.StatusForbidden, "cross_site_request", "Origin", "an admin change must come from gwsim's own pages or from a program, not from another site ("+why+")")
				return
			}
			if why := notJSON(r); why != "" {
				refuse(w, http.StatusUnsupportedMediaType, device.CodeUnsupportedMediaType, "Content-Type", why)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func unsafeMethod(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

// refuse writes an admin error with its own status.
func refuse(w http.ResponseWriter, status int, code, field, msg string) {
	writeJSON(w, status, map[string]any{"status": "error",
		"error": map[string]string{"code": code, "field": field, "message": msg}})
}

// HostAllowed says whether a Host header names this server: empty (an
// HTTP/1.0 request), an IP address, localhost or a name under .localhost,
// listen (the name the server was told to listen on), or an entry of
// allowed: a name, ".example.com" for that name and every name under it,
// or "*" for any. Letter case, the port and a final dot do not matter.
func HostAllowed(hostport, listen string, allowed []string) bool {
	if hostport == "" {
		return true
	}
	h := hostport
	if host, port, err := net.SplitHostPort(hostport); err == nil {
		if strings.Trim(port, "0123456789") != "" {
			return false
		}
		h = host
	}
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	if l := strings.TrimSuffix(strings.ToLower(listen), "."); l != "" && h == l {
		return true
	}
	for _, a := range allowed {
		a = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(a)), ".")
		switch {
		case a == "*":
			return true
		case strings.HasPrefix(a, "."):
			if h == a[1:] || strings.HasSuffix(h, a) {
				return true
			}
		case a != "" && h == a:
			return true
		}
	}
	return false
}

// crossSite says why r comes from another site, or "" when it does not:
// Sec-Fetch-Site other than same-origin or none, or an Origin that is not
// this server's scheme-less host:port.
func crossSite(r *http.Request) string {
	if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" && sfs != "none" {
		return "Sec-Fetch-Site: " + truncate(sfs, 40)
	}
	if o, ok := r.Header["Origin"]; ok && !originIsHost(strings.Join(o, ","), r.Host) {
		return "Origin: " + truncate(strings.Join(o, ","), 100)
	}
	return ""
}

// crossSiteLoad says whether r is another site's page loading a resource
// (Sec-Fetch-Site other than same-origin or none, and Sec-Fetch-Mode
// other than navigate).
func crossSiteLoad(r *http.Request) bool {
	sfs := r.Header.Get("Sec-Fetch-Site")
	return sfs != "" && sfs != "same-origin" && sfs != "none" && r.Header.Get("Sec-Fetch-Mode") != "navigate"
}

// SameOrigin says whether r's Origin header names the server r was sent
// to (http or https, the same host and port): what a change made with a
// session cookie must carry.
func SameOrigin(r *http.Request) bool { return sameOrigin(r) }

// originIsHost says whether an Origin header names host (the request's
// Host): http or https, the same host and port.
func originIsHost(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

// notJSON says why the body of an admin change is refused, or "": a body
// must be sent as application/json (a form cannot); an empty body with no
// Content-Type is fine (curl -X POST .../_sim/reset).
func notJSON(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		return ""
	}
	if ct == "" {
		return "an admin call's body must be sent with Content-Type: application/json"
	}
	return "an admin call's body must be application/json, not " + strconv.Quote(truncate(ct, 60))
}

// Sign-in attempts a client may make: a burst of signInBurst, then one
// every signInEvery.
const (
	signInBurst = 10
	signInEvery = 6 * time.Second
)

// newSignInLimiter is a token bucket per client IP for POST /_sim/session:
// guessing the admin token is slowed to signInBurst tries and then one
// every signInEvery.
func newSignInLimiter(now func() time.Time) *rateLimiter {
	if now == nil {
		now = time.Now
	}
	l := &rateLimiter{rate: float64(time.Second) / float64(signInEvery), burst: signInBurst,
		perShard: max(1, 4096/rateShards), now: now, start: now(), seed: maphash.MakeSeed()}
	l.full = time.Duration(float64(time.Second) * l.burst / l.rate)
	for i := range l.sh {
		l.sh[i].clients = map[netip.Addr]tokenBucket{}
		l.sh[i].overflow = tokenBucket{tokens: l.burst}
	}
	return l
}

// SignInLimiter slows the guessing of an admin token: Allow says whether
// a client may try to sign in now, and else how long until it may.
type SignInLimiter struct {
	l       *rateLimiter
	trusted []netip.Prefix
}

// Behind makes sl count clients by the Forwarded or X-Forwarded-For of
// the trusted proxies in list (clientFrom); it returns sl.
func (sl *SignInLimiter) Behind(list []netip.Prefix) *SignInLimiter {
	sl.trusted = list
	return sl
}

// NewSignInLimiter returns a limiter of signInBurst attempts per client,
// then one every signInEvery.
func NewSignInLimiter() *SignInLimiter { return &SignInLimiter{l: newSignInLimiter(nil)} }

// Allow takes one attempt of r's client; when refused, it has answered
// 429 with Retry-After.
func (sl *SignInLimiter) Allow(w http.ResponseWriter, r *http.Request) bool {
	ok, wait := sl.l.allow(clientFrom(r, sl.trusted))
	if ok {
		return true
	}
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	refuse(w, http.StatusTooManyRequests, device.CodeRateLimited, "token",
		"too many sign-in attempts from this client; retry after "+strconv.Itoa(secs)+" s")
	return false
}
