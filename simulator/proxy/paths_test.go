package proxy_test

import (
	"bufio"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/proxy"
)

// rawRequest sends target as it is written (as curl --path-as-is does) and
// returns the answer's status.
func rawRequest(t *testing.T, base, method, target string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(conn, method+" "+target+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestProxyRefusesEncodedPaths: a path that names /_sim/ (or any path)
// through an encoded slash, a second encoding, a dot segment, an empty
// segment or a backslash is refused with 400 by the proxy and never
// reaches the upstream, where it could be decoded into the upstream's own
// admin API without the proxy's token.
func TestProxyRefusesEncodedPaths(t *testing.T) {
	var got seen
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.add(r)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
	}))
	t.Cleanup(up.Close)
	p := start(t, proxy.Config{Upstream: up.URL, Fleet: fleet.Demo(), AdminToken: "proxy-admin-token-that-is-long-enough-1"})
	for _, c := range []struct{ method, target string }{
		{"POST", "/_sim%2freset"},
		{"POST", "/_sim%2Freset"},
		{"GET", "/_sim%2Fstate"},
		{"POST", "/_sim%252freset"},
		{"GET", "/_sim%252Fstate"},
		{"POST", "/./_sim/reset"},
		{"POST", "/x/../_sim/reset"},
		{"POST", "/x/%2e%2e/_sim/reset"},
		{"POST", "//_sim/reset"},
		{"POST", "/v1//_sim/reset"},
		{"POST", "/_sim\\reset"},
		{"POST", "/_sim%5creset"},
		{"POST", "/v1/services/gateway/%2e%2e/%2e%2e/%2e%2e/_sim/reset"},
		{"GET", "/metrics%2f"},
		{"GET", "http://127.0.0.1/_sim%2fstate"},
	} {
		if code := rawRequest(t, p.URL(), c.method, c.target); code != http.StatusBadRequest {
			t.Errorf("%s %s: HTTP %d, want 400", c.method, c.target, code)
		}
	}
	got.mu.Lock()
	if len(got.paths) > 0 {
		t.Errorf("the upstream was sent %v; nothing should have reached it", got.paths)
	}
	got.mu.Unlock()
	// A plain path is still passed on.
	if code := rawRequest(t, p.URL(), "GET", "/v1/ping?x=%2f"); code != http.StatusOK {
		t.Errorf("GET /v1/ping: HTTP %d, want the upstream's 200", code)
	}
}

// TestProxyBearerGuessingIsLimited: wrong admin tokens sent to the
// proxy's admin paths and /metrics are counted per client as sign-ins
// are: ten get 401, then 429 with Retry-After; the right token still passes.
func TestProxyBearerGuessingIsLimited(t *testing.T) {
	const token = "proxy-admin-token-that-is-long-enough-2"
	up := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(up.Close)
	p := start(t, proxy.Config{Upstream: up.URL, AdminToken: token})
	for i := 0; i < 30; i++ {
		if res, _ := do(t, "GET", p.URL()+"/_sim/journal", "", "", map[string]string{"Authorization": "Bearer " + token}); res.StatusCode != http.StatusOK {
			t.Fatalf("right token %d: %d", i, res.StatusCode)
		}
	}
	for i := 0; i < 10; i++ {
		path := []string{"/_sim/journal", "/metrics"}[i%2]
		if res, _ := do(t, "GET", p.URL()+path, "", "", map[string]string{"Authorization": "Bearer guess"}); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("guess %d on %s: %d, want 401", i, path, res.StatusCode)
		}
	}
	res, _ := do(t, "GET", p.URL()+"/metrics", "", "", map[string]string{"Authorization": "Bearer guess"})
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Errorf("after 10 guesses: %d, want 429", res.StatusCode)
	}
	// The right token is never held back.
	if res, _ := do(t, "GET", p.URL()+"/metrics", "", "", map[string]string{"Authorization": "Bearer " + token}); res.StatusCode != http.StatusOK {
		t.Errorf("after 10 guesses, the right token: %d, want 200", res.StatusCode)
	}
}

// TestProxyStripsEveryFormOfItsCredentials: the proxy's admin token in
// any form a server might take it (bearer in any case, Basic with the
// token as password or user) and its session cookie under any case of
// its name never reach the upstream; the app's own credentials do.
func TestProxyStripsEveryFormOfItsCredentials(t *testing.T) {
	const token = "proxy-admin-token-that-is-long-enough-3"
	var got seen
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.add(r)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
	}))
	t.Cleanup(up.Close)
	p := start(t, proxy.Config{Upstream: up.URL, AdminToken: token})
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	lower := strings.ToLower(proxy.SessionCookie)
	upper := strings.ToUpper(proxy.SessionCookie)
	for _, h := range []map[string]string{
		{"Authorization": "bearer " + token},
		{"Authorization": "BEARER " + token},
		{"Authorization": "Bearer  " + token},
		{"Authorization": basic("admin", token)},
		{"Authorization": basic(token, "")},
		{"Authorization": "basic " + base64.RawStdEncoding.EncodeToString([]byte("x:"+token))},
		{"Cookie": lower + "=stolen-session"},
		{"Cookie": "app=1; " + upper + "=stolen-session"},
		{"Cookie": " " + proxy.SessionCookie + " =stolen-session"},
	} {
		do(t, "GET", p.URL()+"/v1/anything", "", "", h)
	}
	do(t, "GET", p.URL()+"/v1/anything", "", "", map[string]string{"Authorization": "Bearer the-apps-own", "Cookie": "app=2"})
	got.mu.Lock()
	defer got.mu.Unlock()
	apps := 0
	for _, h := range got.headers {
		for _, a := range h.Values("Authorization") {
			if strings.Contains(a, token) || strings.HasPrefix(strings.ToLower(a), "basic") {
				t.Errorf("the upstream got the proxy's token: Authorization %q", a)
			}
			if a == "Bearer the-apps-own" {
				apps++
			}
		}
		for _, c := range h.Values("Cookie") {
			if strings.Contains(c, "stolen-session") {
				t.Errorf("the upstream got the proxy's session cookie: %q", c)
			}
		}
	}
	if apps != 1 || len(got.headers) != 10 {
		t.Errorf("the app's own Authorization reached the upstream %d times in %d requests", apps, len(got.headers))
	}
}
