package server

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	simtest "github.com/gwdmi/gwtools/simulator/internal/simtestcore"
)

// call sends one request with the given headers (Host among them) over
// real HTTP and returns the status and body.
func call(t *testing.T, method, url, body string, h map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

func errorCode(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Field, Message string }
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not an admin error: %s", body)
	}
	return e.Error.Code
}

// dimTo sets the test dimmer to v through the interface, so that a reset
// that went through would show.
func dimTo(t *testing.T, c *simtest.Client, v string) {
	t.Helper()
	c.Send(device.SendCommand, device.JSON, dimmer(c, c.Envelope(), v)).OK(t, device.JSON)
}

func dimming(c *simtest.Client) any {
	return c.Device(simtest.MACA, simtest.SN('a', 5)).State["dimming"]
}

// TestDNSRebindingRefused: a page on attacker.example whose name resolves
// to 127.0.0.1 sends Host: attacker.example; /_sim/ answers it 421 (no
// state read, no fault set), in the default set-up without a token. IP
// addresses, localhost names and --allowed-hosts pass; the operations do
// not look at Host.
func TestDNSRebindingRefused(t *testing.T) {
	_, c := testServer(t, nil, Config{AllowedHosts: []string{"gwsim.internal", ".staging.example"}}, nil)
	dimTo(t, c, "41")
	for _, host := range []string{"attacker.example", "attacker.example:80", "localhost.attacker.example", "gwsim.internal.evil", "staging.example.evil", "127.0.0.1.nip.io"} {
		for _, r := range []struct{ method, path, body string }{{"GET", "/_sim/state", ""}, {"GET", "/_sim/events", ""},
			{"PUT", "/_sim/faults", `{"error_rate":1}`}, {"POST", "/_sim/reset", ""}, {"GET", "/_sim/", ""}} {
			status, _, body := call(t, r.method, c.Base+r.path, r.body, map[string]string{"Host": host, "Content-Type": "application/json"})
			if status != http.StatusMisdirectedRequest || errorCode(t, body) != "misdirected_request" || strings.Contains(body, "accounts") {
				t.Errorf("Host %s: %s %s answered %d %s, want 421 misdirected_request", host, r.method, r.path, status, body)
			}
		}
	}
	if d := dimming(c); d != 41.0 {
		t.Errorf("a refused reset changed the state: dimming %v", d)
	}
	var f Faults
	c.AdminJSON("GET", "/_sim/faults", "", &f)
	if f.ErrorRate != 0 {
		t.Errorf("a refused PUT set faults: %+v", f)
	}
	port := c.Base[strings.LastIndex(c.Base, ":"):]
	for _, host := range []string{"127.0.0.1" + port, "localhost" + port, "LOCALHOST.", "dash.localhost" + port, "[::1]" + port, "10.1.2.3",
		"gwsim.internal" + port, "staging.example", "a.b.staging.example:443"} {
		if status, _, body := call(t, "GET", c.Base+"/_sim/state", "", map[string]string{"Host": host}); status != http.StatusOK {
			t.Errorf("Host %s: %d %s, want 200", host, status, body)
		}
	}
	// The operations answer any Host as before (they need the fleet's sign).
	status, _, _ := call(t, "POST", c.Base+device.SendCommand.Path(), "{}", map[string]string{"Host": "attacker.example", "Content-Type": "application/json"})
	if status == http.StatusMisdirectedRequest {
		t.Error("an operation was refused for its Host")
	}
}

// TestHostAllowed: the rule of the Host allow-list, entry by entry.
func TestHostAllowed(t *testing.T) {
	for _, tc := range []struct {
		host, listen string
		allowed      []string
		want         bool
	}{
		{"", "", nil, true},
		{"gwsim:8080", "gwsim", nil, true},
		{"gwsim:8080", "0.0.0.0", nil, false},
		{"anything.example", "", []string{"*"}, true},
		{"example.com", "", []string{".example.com"}, true},
		{"evil-example.com", "", []string{".example.com"}, false},
		{"Gwsim.Example.COM.:9", "", []string{"gwsim.example.com"}, true},
		{"[fe80::1]:8080", "", nil, true},
		{"localhost:8080@evil", "", nil, false},
	} {
		if got := HostAllowed(tc.host, tc.listen, tc.allowed); got != tc.want {
			t.Errorf("HostAllowed(%q, %q, %q) = %v, want %v", tc.host, tc.listen, tc.allowed, got, tc.want)
		}
	}
}

// TestCrossSiteChangesRefused: what another site's page can send to
// /_sim/ (a form, text/plain or urlencoded; a no-cors fetch, which
// carries its Origin and Sec-Fetch-Site) changes nothing: 415 for a body
// that is not JSON, 403 for another origin, with or without an admin
// token (with one, a signed-in cookie is what a browser would carry).
// curl, which sends neither Origin nor Sec-Fetch-Site, works as documented.
func TestCrossSiteChangesRefused(t *testing.T) {
	for _, token := range []string{"", "cross-site-token"} {
		_, c := testServer(t, nil, Config{AdminToken: token}, nil)
		auth := map[string]string{}
		if token != "" {
			auth["Cookie"] = SessionCookie + "=" + signInCookie(t, c, token)
		}
		with := func(h map[string]string) map[string]string {
			out := map[string]string{}
			for k, v := range auth {
				out[k] = v
			}
			for k, v := range h {
				out[k] = v
			}
			return out
		}
		dimTo(t, c, "42")
		other := "http://127.0.0.1:1" // another loopback port: same site, another origin
		for _, tc := range []struct {
			name, method, path, body string
			h                        map[string]string
			status                   int
			code                     string
		}{
			{"text/plain form", "POST", "/_sim/reset", "x=1", map[string]string{"Content-Type": "text/plain", "Origin": other, "Sec-Fetch-Site": "same-site"}, 403, "cross_site_request"},
			{"form without Origin", "POST", "/_sim/reset", "x=1", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, device.CodeUnsupportedMediaType},
			{"text/plain without Origin", "PUT", "/_sim/faults", `{"error_rate":1}`, map[string]string{"Content-Type": "text/plain"}, 415, device.CodeUnsupportedMediaType},
			{"multipart", "PUT", "/_sim/faults", "--b--", map[string]string{"Content-Type": "multipart/form-data; boundary=b"}, 415, device.CodeUnsupportedMediaType},
			{"no-cors fetch", "POST", "/_sim/reset", "", map[string]string{"Origin": "https://attacker.example", "Sec-Fetch-Site": "cross-site"}, 403, "cross_site_request"},
			{"JSON from another origin", "PUT", "/_sim/faults", `{"error_rate":1}`, map[string]string{"Content-Type": "application/json", "Origin": other}, 403, "cross_site_request"},
			{"Origin null", "DELETE", "/_sim/faults", "", map[string]string{"Origin": "null"}, 403, "cross_site_request"},
			{"same-site only", "POST", "/_sim/reset", "", map[string]string{"Sec-Fetch-Site": "same-site"}, 403, "cross_site_request"},
		} {
			status, _, body := call(t, tc.method, c.Base+tc.path, tc.body, with(tc.h))
			if status != tc.status || errorCode(t, body) != tc.code {
				t.Errorf("token %q, %s: %d %s, want %d %s", token, tc.name, status, body, tc.status, tc.code)
			}
		}
		if d := dimming(c); d != 42.0 {
			t.Errorf("token %q: a cross-site reset went through: dimming %v", token, d)
		}
		var f Faults
		c.AdminJSON("GET", "/_sim/faults", "", &f)
		if f.ErrorRate != 0 {
			t.Errorf("token %q: a cross-site PUT set faults: %+v", token, f)
		}
		// Another site's page loading /_sim/ as a resource (an event
		// stream, a script) is refused; following a link to the
		// dashboard is not.
		for _, path := range []string{"/_sim/events", "/_sim/state"} {
			if status, _, body := call(t, "GET", c.Base+path, "", with(map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"})); status != 403 {
				t.Errorf("token %q: a cross-site load of %s: %d %s, want 403", token, path, status, body)
			}
		}
		if status, _, body := call(t, "GET", c.Base+"/_sim/", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}); status != 200 {
			t.Errorf("token %q: following a link to the dashboard: %d %.100s", token, status, body)
		}
		// The dashboard's own calls (same origin, JSON) and curl's pass.
		self := "http://" + strings.TrimPrefix(c.Base, "http://")
		if status, _, body := call(t, "PUT", c.Base+"/_sim/faults", `{"latency":"1ms"}`, with(map[string]string{"Content-Type": "application/json; charset=utf-8", "Origin": self, "Sec-Fetch-Site": "same-origin"})); status != 200 {
			t.Errorf("token %q: the dashboard's PUT: %d %s", token, status, body)
		}
		bearer := map[string]string{}
		if token != "" {
			bearer["Authorization"] = "Bearer " + token
		}
		if status, _, body := call(t, "POST", c.Base+"/_sim/reset", "", bearer); status != 200 {
			t.Errorf("token %q: curl -X POST /_sim/reset: %d %s", token, status, body)
		}
		if d := dimming(c); d == 42.0 {
			t.Errorf("token %q: curl's reset did not reset", token)
		}
	}
}

// signInCookie signs in over HTTP and returns the session cookie's value.
func signInCookie(t *testing.T, c *simtest.Client, token string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", c.Base+"/_sim/session", strings.NewReader(`{"token":"`+token+`"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for _, ck := range res.Cookies() {
		if ck.Name == SessionCookie && ck.Value != "" {
			return ck.Value
		}
	}
	t.Fatalf("sign-in: %d, no cookie", res.StatusCode)
	return ""
}

// TestSignInIsRateLimited: guessing the admin token is slowed: after
// signInBurst attempts a client gets 429 with Retry-After, even with the
// right token; a sign-in form body is refused (JSON only).
func TestSignInIsRateLimited(t *testing.T) {
	_, c := testServer(t, nil, Config{AdminToken: "the-right-token"}, nil)
	status, _, body := call(t, "POST", c.Base+"/_sim/session", "token=the-right-token", map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if status != http.StatusUnsupportedMediaType || strings.Contains(body, "the-right-token") {
		t.Errorf("a form sign-in: %d %s, want 415", status, body)
	}
	json := map[string]string{"Content-Type": "application/json"}
	for i := 0; i < signInBurst; i++ {
		if status, _, body := call(t, "POST", c.Base+"/_sim/session", `{"token":"guess-`+string(rune('a'+i))+`"}`, json); status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d %s, want 401", i, status, body)
		}
	}
	status, h, body := call(t, "POST", c.Base+"/_sim/session", `{"token":"the-right-token"}`, json)
	if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" || errorCode(t, body) != device.CodeRateLimited {
		t.Errorf("attempt %d: %d %v %s, want 429 with Retry-After", signInBurst+1, status, h, body)
	}
	// The bearer token is no sign-in: it still works.
	c.AdminJSON("GET", "/_sim/faults", "", nil)
}

// openStream opens GET /_sim/events with the given headers and returns
// the response once its headers are in.
func openStream(t *testing.T, url string, h map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/_sim/events", nil)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// TestEventStreamEndsWithItsSession: a dashboard's live stream, opened with
// the sign-in cookie, is closed by the server once that session is signed
// out (from another tab or by anyone holding the cookie); a stream opened
// with the bearer token stays open.
func TestEventStreamEndsWithItsSession(t *testing.T) {
	_, c := testServer(t, nil, Config{AdminToken: "stream-token"}, nil)
	cookie := SessionCookie + "=" + signInCookie(t, c, "stream-token")
	res := openStream(t, c.Base, map[string]string{"Cookie": cookie})
	byBearer := openStream(t, c.Base, map[string]string{"Authorization": "Bearer stream-token"})
	if res.StatusCode != 200 || byBearer.StatusCode != 200 {
		t.Fatalf("streams: %d %d", res.StatusCode, byBearer.StatusCode)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, res.Body)
		ended <- err
	}()
	select {
	case err := <-ended:
		t.Fatalf("the stream ended while signed in: %v", err)
	case <-time.After(2 * sessionRecheck):
	}
	if status, _, body := call(t, "DELETE", c.Base+"/_sim/session", "", map[string]string{"Cookie": cookie}); status != 200 {
		t.Fatalf("sign-out: %d %s", status, body)
	}
	select {
	case <-ended:
	case <-time.After(10 * sessionRecheck):
		t.Fatal("the stream is still open after its session was signed out")
	}
	// The bearer's stream is still there: it gets the next change.
	c.Reset()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(byBearer.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data:") {
				line <- sc.Text()
				return
			}
		}
	}()
	select {
	case l := <-line:
		if !strings.Contains(l, `"reset"`) {
			t.Errorf("the bearer's stream got %s", l)
		}
	case <-time.After(5 * time.Second):
		t.Error("the bearer's stream got nothing after a reset")
	}
}

// TestEventStreamsAreCapped: beyond MaxEventsClients open streams a new
// one gets 503 with Retry-After; once one closes, a new one is served.
func TestEventStreamsAreCapped(t *testing.T) {
	_, c := testServer(t, nil, Config{MaxEventsClients: 2}, nil)
	a := openStream(t, c.Base, nil)
	openStream(t, c.Base, nil)
	third := openStream(t, c.Base, nil)
	if a.StatusCode != 200 || third.StatusCode != http.StatusServiceUnavailable || third.Header.Get("Retry-After") == "" {
		t.Fatalf("statuses %d, third %d %v, want 200 and 503 with Retry-After", a.StatusCode, third.StatusCode, third.Header)
	}
	b, _ := io.ReadAll(third.Body)
	if errorCode(t, string(b)) != "too_many_streams" || !strings.Contains(string(b), "--max-events-clients") {
		t.Errorf("503 body %s", b)
	}
	a.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res := openStream(t, c.Base, nil)
		res.Body.Close()
		if res.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stream served after one closed: %d", res.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
