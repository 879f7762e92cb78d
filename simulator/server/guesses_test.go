package server

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// fromAddr is an HTTP client whose connections come from the loopback
// address ip (all of 127.0.0.0/8 is this machine's).
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

func bearerCall(t *testing.T, c *http.Client, method, url, token string) (int, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, res.Header
}

// TestBearerGuessingIsLimited: wrong admin tokens in Authorization are
// counted per client on every admin path and /metrics, as sign-ins are:
// signInBurst of them get 401, then the client is held back (429 with
// Retry-After, on every admin path); the right token is never held back,
// nor counted, however often it is sent; another client is not held back.
func TestBearerGuessingIsLimited(t *testing.T) {
	const token = "the-right-admin-token-0123456789abcdef"
	_, c := testServer(t, nil, Config{AdminToken: token}, nil)
	one, other := fromAddr("127.0.0.1"), fromAddr("127.0.0.2")
	for i := 0; i < 5*signInBurst; i++ {
		if status, _ := bearerCall(t, one, "GET", c.Base+"/_sim/state?limit=1", token); status != http.StatusOK {
			t.Fatalf("right token %d: %d", i, status)
		}
	}
	paths := []string{"GET /_sim/state", "GET /metrics", "POST /_sim/reset", "GET /_sim/faults", "GET /_sim/journal"}
	for i := 0; i < signInBurst; i++ {
		p := strings.Fields(paths[i%len(paths)])
		if status, _ := bearerCall(t, one, p[0], c.Base+p[1], "guess-"+string(rune('a'+i))); status != http.StatusUnauthorized {
			t.Fatalf("guess %d (%s): %d, want 401", i, p, status)
		}
	}
	for _, p := range paths {
		f := strings.Fields(p)
		status, h := bearerCall(t, one, f[0], c.Base+f[1], "guess-z")
		if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
			t.Errorf("%s after %d guesses: %d %v, want 429 with Retry-After", p, signInBurst, status, h)
		}
		// The right token is never held back.
		if status, _ := bearerCall(t, one, f[0], c.Base+f[1], token); status == http.StatusTooManyRequests || status == http.StatusUnauthorized {
			t.Errorf("%s after %d guesses, the right token: %d", p, signInBurst, status)
		}
	}
	if status, _ := bearerCall(t, other, "GET", c.Base+"/_sim/state?limit=1", token); status != http.StatusOK {
		t.Errorf("another client with the right token: %d, want 200", status)
	}
}

// TestGuessLimiterBehindABalancer: behind a balancer (a reverse proxy that
// adds X-Forwarded-For, as nginx and an Ingress do), with the balancer in
// TrustedProxies, each client is counted by its own address: an attacker's
// wrong guesses hold back the attacker only, never the operator, whose
// right token is answered every time, nor a colleague whose stale token
// gets 401, not 429. A client talking to gwsim directly cannot choose its
// address with the header. Without the setting, every client shares the
// balancer's address, and still the right token is never held back.
// Real HTTP, a real reverse proxy, connections from distinct addresses.
func TestGuessLimiterBehindABalancer(t *testing.T) {
	const token = "the-right-admin-token-0123456789abcdef"
	for _, trust := range []bool{true, false} {
		cfg := Config{AdminToken: token}
		if trust {
			cfg.TrustedProxies, _ = ParseTrustedProxies("127.0.0.1")
		}
		_, c := testServer(t, nil, cfg, nil)
		target, _ := url.Parse(c.Base)
		lb := httputil.NewSingleHostReverseProxy(target)
		lb.Transport = fromAddr("127.0.0.1").Transport // the balancer's own address
		front := httptest.NewServer(lb)
		t.Cleanup(front.Close)
		attacker, operator, colleague := fromAddr("127.0.0.2"), fromAddr("127.0.0.3"), fromAddr("127.0.0.4")
		for i := 0; i < 3*signInBurst; i++ {
			bearerCall(t, attacker, "GET", front.URL+"/_sim/state?limit=1", "guess")
			if status, _ := bearerCall(t, operator, "GET", front.URL+"/_sim/state?limit=1", token); status != http.StatusOK {
				t.Fatalf("trusted %v: the operator's right token after %d wrong guesses of another: %d", trust, i+1, status)
			}
		}
		if status, _ := bearerCall(t, attacker, "GET", front.URL+"/_sim/state?limit=1", "guess"); status != http.StatusTooManyRequests {
			t.Errorf("trusted %v: the attacker after %d guesses: %d, want 429", trust, 3*signInBurst, status)
		}
		status, _ := bearerCall(t, colleague, "GET", front.URL+"/_sim/state?limit=1", "stale-token")
		if want := map[bool]int{true: http.StatusUnauthorized, false: http.StatusTooManyRequests}[trust]; status != want {
			t.Errorf("trusted %v: a colleague's stale token: %d, want %d", trust, status, want)
		}
	}
	// Straight to gwsim (not through a trusted proxy), X-Forwarded-For is
	// ignored: a new forged address each time does not escape the count.
	trustedNet, _ := ParseTrustedProxies("10.0.0.0/8")
	_, c := testServer(t, nil, Config{AdminToken: token, TrustedProxies: trustedNet}, nil)
	direct := fromAddr("127.0.0.5")
	for i := 0; i < 2*signInBurst; i++ {
		req, _ := http.NewRequest("GET", c.Base+"/_sim/state?limit=1", nil)
		req.Header.Set("Authorization", "Bearer guess")
		req.Header.Set("X-Forwarded-For", "192.0.2."+strconv.Itoa(i+1))
		req.Header.Set("Forwarded", "for=198.51.100."+strconv.Itoa(i+1))
		res, err := direct.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if i >= signInBurst && res.StatusCode != http.StatusTooManyRequests {
			t.Errorf("forged X-Forwarded-For, guess %d: %d, want 429", i+1, res.StatusCode)
		}
	}
}

func TestForwardedFor(t *testing.T) {
	list, err := ParseTrustedProxies("10.0.0.0/8, 192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseTrustedProxies("10.0.0.0/8,nope"); err == nil || !strings.Contains(err.Error(), "--trusted-proxies") {
		t.Errorf("a bad entry: %v", err)
	}
	for _, tc := range []struct {
		peer, xff, fwd, want string
	}{
		{"192.0.2.1:1", "203.0.113.9", "", "203.0.113.9"},
		{"192.0.2.1:1", "198.51.100.1, 203.0.113.9, 10.1.1.1", "", "203.0.113.9"},
		{"192.0.2.1:1", "", `for=203.0.113.7;proto=https, for="[2001:db8::1]:4711"`, "2001:db8::"},
		{"192.0.2.1:1", "203.0.113.9", "for=unknown", "192.0.2.1"},
		{"198.51.100.2:1", "203.0.113.9", "", "198.51.100.2"},
		{"192.0.2.1:1", "", "", "192.0.2.1"},
	} {
		r := &http.Request{RemoteAddr: tc.peer, Header: http.Header{}}
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if tc.fwd != "" {
			r.Header.Set("Forwarded", tc.fwd)
		}
		if got := clientFrom(r, list).String(); got != tc.want {
			t.Errorf("%s xff %q fwd %q: %s, want %s", tc.peer, tc.xff, tc.fwd, got, tc.want)
		}
	}
}
