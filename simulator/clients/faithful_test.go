package clients_test

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// The app of these tests is written here, from the published interface
// alone: it builds, signs and sends its bodies itself (net/http, md5, its
// own JSON and XML), not with gwsim's client code, so that what the
// report judges is what an app team's own client does.

// Paths of the three operations, as published.
const (
	pathCommand = "/v1/services/gateway/command"
	pathName    = "/v1/services/device/update_name"
)

// app is one app of the test fleet's account A.
type app struct {
	t      *testing.T
	base   string
	http   *http.Client
	upper  bool // hex fields and sign in upper case
	format string
}

func newApp(t *testing.T, base, format string) *app {
	return &app{t: t, base: base, http: &http.Client{Timeout: 10 * time.Second}, format: format}
}

// kv is one field, in the order sent.
type kv struct{ k, v string }

// timestamp is t in the published YYYYMMDDHHMMSS form, UTC.
func timestamp(t time.Time) string { return t.UTC().Format("20060102150405") }

// body is a signed request: the envelope (api_key, timestamp, sign,
// myservice_id, mac) and the operation's fields.
func (a *app) body(ts, mac string, fields ...kv) []byte {
	sum := md5.Sum([]byte(simtest.KeyA + simtest.SecretA + ts))
	sign, account := hex.EncodeToString(sum[:]), simtest.AccountA
	if a.upper {
		sign, account, mac = strings.ToUpper(sign), strings.ToUpper(account), strings.ToUpper(mac)
		for i := range fields {
			if fields[i].k == "sn" || fields[i].k == "device_id" {
				fields[i].v = strings.ToUpper(fields[i].v)
			}
		}
	}
	all := append([]kv{{"api_key", simtest.KeyA}, {"timestamp", ts}, {"sign", sign}, {"myservice_id", account}, {"mac", mac}}, fields...)
	var b bytes.Buffer
	if a.format == "json" {
		b.WriteString(`{"control":{`)
		for i, f := range all {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(f.k)
			v, _ := json.Marshal(f.v)
			b.Write(k)
			b.WriteByte(':')
			b.Write(v)
		}
		b.WriteString(`}}`)
		return b.Bytes()
	}
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><xml><control>`)
	for _, f := range all {
		b.WriteString("<" + f.k + ">")
		xml.EscapeText(&b, []byte(f.v))
		b.WriteString("</" + f.k + ">")
	}
	b.WriteString(`</control></xml>`)
	return b.Bytes()
}

// answer is what the app reads of an answer.
type answer struct {
	status     int
	retryAfter time.Duration // -1: no Retry-After
	body       string
}

// post sends a body in the app's format and reads the answer.
func (a *app) post(path string, body []byte) answer {
	a.t.Helper()
	ct := "application/json"
	if a.format == "xml" {
		ct = "application/xml; charset=utf-8"
	}
	res, err := a.http.Post(a.base+path, ct, bytes.NewReader(body))
	if err != nil {
		a.t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	ans := answer{status: res.StatusCode, retryAfter: -1, body: string(b)}
	if v := res.Header.Get("Retry-After"); v != "" {
		// Seconds or an HTTP date: RFC 9110 allows both.
		if secs, err := strconv.Atoi(v); err == nil {
			ans.retryAfter = time.Duration(secs) * time.Second
		} else if t, err := http.ParseTime(v); err == nil {
			ans.retryAfter = max(time.Until(t), 0)
		} else {
			a.t.Fatalf("Retry-After %q", v)
		}
	}
	return ans
}

func (a *app) want(ans answer, status int) {
	a.t.Helper()
	if ans.status != status {
		a.t.Fatalf("answer %d %s, want %d", ans.status, ans.body, status)
	}
}

func dimming(sn, level string) []kv {
	return []kv{{"sn", sn}, {"type", "Light Dimmer"}, {"dimming", level}}
}

// cleanReport fails the test unless every judgement of account A's app
// passed and no request went to an anonymous bucket.
func cleanReport(t *testing.T, c *simtest.Client, wantRequests uint64) clients.Client {
	t.Helper()
	return reportExcept(t, c, wantRequests, nil)
}

// reportExcept is cleanReport where the judgements of except fail exactly
// so many times.
func reportExcept(t *testing.T, c *simtest.Client, wantRequests uint64, except map[string]uint64) clients.Client {
	t.Helper()
	r := report(t, c)
	for _, cl := range r.Clients {
		if cl.Client == clients.NoKey || strings.HasPrefix(cl.Client, clients.AddressPrefix) {
			t.Errorf("requests judged under %s: %+v", cl.Client, cl)
		}
	}
	a := clientA(t, r)
	for _, j := range a.Judgements {
		if n, ok := except[j.ID]; ok {
			if j.Violations != n {
				t.Errorf("%s: %d violations, want %d: %s", j.ID, j.Violations, n, j.Latest)
			}
			continue
		}
		if !j.Passed {
			t.Errorf("a faithful app fails %s: %s", j.ID, j.Latest)
		}
	}
	if wantRequests > 0 && a.Requests != wantRequests {
		t.Errorf("requests %d, want %d", a.Requests, wantRequests)
	}
	return a
}

// TestFaithfulAppPassesEveryJudgement: every pattern a correct app
// produces, in JSON and in XML, passes every judgement: two commands to
// two devices in one second, the same command in the other format in
// another second, a new connection per request, a request fixed and sent
// again after a 400 (same timestamp), upper-case hex, device_id for sn.
func TestFaithfulAppPassesEveryJudgement(t *testing.T) {
	for _, format := range []string{"json", "xml"} {
		t.Run(format, func(t *testing.T) {
			sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
			a := newApp(t, sim.URL(), format)
			now := time.Now()
			ts := timestamp(now)
			dimA, dimC := simtest.SN('a', 5), simtest.SN('c', 0)

			// Two commands to two devices in one second: one timestamp, one sign.
			a.want(a.post(pathCommand, a.body(ts, simtest.MACA, dimming(dimA, "40")...)), 200)
			a.want(a.post(pathCommand, a.body(ts, simtest.MACA2, dimming(dimC, "40")...)), 200)
			a.want(a.post(pathCommand, a.body(ts, simtest.MACA, kv{"sn", simtest.SN('a', 0)}, kv{"type", "Appliance Module"}, kv{"io", "On"})), 200)
			a.want(a.post(pathName, a.body(ts, simtest.MACA, kv{"sn", dimA}, kv{"name", "Hall"})), 200)

			// The same command in the other format, in another second.
			other := newApp(t, sim.URL(), map[string]string{"json": "xml", "xml": "json"}[format])
			other.want(other.post(pathCommand, other.body(timestamp(now.Add(-time.Second)), simtest.MACA, dimming(dimA, "40")...)), 200)

			// A new connection for every request.
			fresh := newApp(t, sim.URL(), format)
			fresh.http = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
			for i := range 4 {
				fresh.want(fresh.post(pathCommand, fresh.body(timestamp(now.Add(-2*time.Second)), simtest.MACA, dimming(dimA, strconv.Itoa(50+i))...)), 200)
			}

			// Upper-case hex (mac, sn, myservice_id, sign), and device_id for sn.
			up := newApp(t, sim.URL(), format)
			up.upper = true
			up.want(up.post(pathCommand, up.body(timestamp(now.Add(-3*time.Second)), simtest.MACA, dimming(dimA, "60")...)), 200)
			a.want(a.post(pathCommand, a.body(timestamp(now.Add(-4*time.Second)), simtest.MACA, kv{"device_id", dimA}, kv{"type", "Light Dimmer"}, kv{"dimming", "61"})), 200)

			cleanReport(t, sim.Client, 11)

			// A value taken from a user unchecked, refused, fixed and
			// sent again at once (same timestamp): the refused request is
			// invalid (valid_requests counts it, once), its fix is no
			// resend.
			a.want(a.post(pathCommand, a.body(ts, simtest.MACA, dimming(dimA, "0")...)), 400)
			a.want(a.post(pathCommand, a.body(ts, simtest.MACA, dimming(dimA, "1")...)), 200)
			reportExcept(t, sim.Client, 13, map[string]uint64{clients.JudgeValid: 1})
		})
	}
}

// TestFaithfulAppRetriesPassEveryJudgement: a correct app's retries pass
// every judgement: a 503 retried exactly when its Retry-After ends, a
// 504 gateway_offline retried when its Retry-After ends while the app
// goes on with another gateway at once, a 503 without Retry-After retried
// after the documented back-off floor.
func TestFaithfulAppRetriesPassEveryJudgement(t *testing.T) {
	simtest.Heavy(t)
	sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
	c := sim.Client
	now := time.Now()
	dimA, dimC := simtest.SN('a', 5), simtest.SN('c', 0)

	// 503 with Retry-After, retried exactly when it ends: the same bytes
	// (the first was not accepted, so this is no replay).
	a := newApp(t, sim.URL(), "json")
	c.AdminJSON(http.MethodPut, "/_sim/faults", `{"error_rate":1}`, nil)
	body := a.body(timestamp(now), simtest.MACA, dimming(dimA, "70")...)
	ans := a.post(pathCommand, body)
	a.want(ans, 503)
	if ans.retryAfter != time.Second {
		t.Fatalf("injected 503 with Retry-After %v, want 1s", ans.retryAfter)
	}
	c.AdminJSON(http.MethodPut, "/_sim/faults", `{}`, nil)
	time.Sleep(ans.retryAfter)
	a.want(a.post(pathCommand, body), 200)

	// 504 gateway_offline: the other gateway at once, the offline one
	// when its Retry-After ends.
	x := newApp(t, sim.URL(), "xml")
	c.AdminJSON(http.MethodPut, "/_sim/faults", `{"offline_gateways":["`+simtest.MACA2+`"]}`, nil)
	ans = x.post(pathCommand, x.body(timestamp(now.Add(-time.Second)), simtest.MACA2, dimming(dimC, "71")...))
	x.want(ans, 504)
	x.want(x.post(pathCommand, x.body(timestamp(now.Add(-time.Second)), simtest.MACA, dimming(dimA, "71")...)), 200)
	c.AdminJSON(http.MethodPut, "/_sim/faults", `{}`, nil)
	time.Sleep(ans.retryAfter)
	x.want(x.post(pathCommand, x.body(timestamp(time.Now()), simtest.MACA2, dimming(dimC, "71")...)), 200)

	// 503 without Retry-After: back off the documented floor.
	c.AdminJSON(http.MethodPut, "/_sim/faults", `{"error_rate":1,"retry_after":"none"}`, nil)
	body = a.body(timestamp(now.Add(-2*time.Second)), simtest.MACA, dimming(dimA, "72")...)
	ans = a.post(pathCommand, body)
	a.want(ans, 503)
	if ans.retryAfter != -1 {
		t.Fatalf("retry_after none: Retry-After %v", ans.retryAfter)
	}
	c.AdminJSON(http.MethodPut, "/_sim/faults", `{}`, nil)
	time.Sleep(clients.BackoffFloor)
	a.want(a.post(pathCommand, body), 200)

	cleanReport(t, c, 7)
}

// TestFaithfulConcurrentAppUnderRateLimit: 8 goroutines of one app behind
// one back-off gate, under a rate limit: once any of them is answered
// 429, none starts a request before the Retry-After ends; the requests
// already on their way when the 429 left are not counted against it.
func TestFaithfulConcurrentAppUnderRateLimit(t *testing.T) {
	simtest.Heavy(t)
	sim := simtest.Start(t, simulator.Options{AdminToken: "tok", RateLimit: 30})
	var gate struct {
		sync.Mutex
		until time.Time
	}
	wait := func() {
		for {
			gate.Lock()
			d := time.Until(gate.until)
			gate.Unlock()
			if d <= 0 {
				return
			}
			time.Sleep(d)
		}
	}
	const goroutines, each = 8, 12
	// One pool that keeps a connection per goroutine: a connection
	// opened after a 429 reached the app is a request sent after it.
	pool := &http.Transport{MaxIdleConnsPerHost: goroutines}
	var wg sync.WaitGroup
	var mu sync.Mutex
	limited := 0
	for g := range goroutines {
		wg.Go(func() {
			a := newApp(t, sim.URL(), []string{"json", "xml"}[g%2])
			a.http.Transport = pool
			for i := 0; i < each; {
				wait()
				// Each command once: its own level, signed when sent.
				body := a.body(timestamp(time.Now()), simtest.MACA, dimming(simtest.SN('a', 5), strconv.Itoa(1+g*each+i))...)
				ans := a.post(pathCommand, body)
				if ans.status == http.StatusTooManyRequests {
					gate.Lock()
					if until := time.Now().Add(ans.retryAfter); until.After(gate.until) {
						gate.until = until
					}
					gate.Unlock()
					mu.Lock()
					limited++
					mu.Unlock()
					continue
				}
				if ans.status != 200 {
					t.Errorf("answer %d %s", ans.status, ans.body)
					return
				}
				i++
			}
		})
	}
	wg.Wait()
	if limited == 0 {
		t.Fatal("no request was answered 429: the rate limit was not exercised")
	}
	a := cleanReport(t, sim.Client, 0)
	if a.Requests != uint64(goroutines*each+limited) {
		t.Errorf("requests %d, want %d", a.Requests, goroutines*each+limited)
	}
	t.Logf("%d requests answered 429, every judgement passed", limited)
}

// TestRequestsJudgedUnderTheKeyTheirBytesShow: a request without
// Content-Type, with a wrong one, or with a body almost JSON or XML is
// judged under the api_key its bytes show, so that the app's own JUnit
// cases fail; a request that shows none is judged under the client's
// address, never under an anonymous bucket.
func TestRequestsJudgedUnderTheKeyTheirBytesShow(t *testing.T) {
	sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
	ts := timestamp(time.Now())
	j := newApp(t, sim.URL(), "json").body(ts, simtest.MACA, dimming(simtest.SN('a', 5), "20")...)
	x := newApp(t, sim.URL(), "xml").body(ts, simtest.MACA, dimming(simtest.SN('a', 5), "21")...)
	for _, tc := range []struct {
		ct   string
		body []byte
	}{
		{"", j},
		{"text/plain", j},
		{"text/plain", x},
		{"application/json", j[:len(j)-1]}, // almost JSON
		{"application/json", append(append([]byte{}, j...), ',')},  // trailing comma
		{"application/xml", bytes.TrimSuffix(x, []byte("</xml>"))}, // almost XML
		{"application/json", x},                                    // XML declared JSON
	} {
		req, _ := http.NewRequest(http.MethodPost, sim.URL()+pathCommand, bytes.NewReader(tc.body))
		if tc.ct != "" {
			req.Header.Set("Content-Type", tc.ct)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode < 400 || res.StatusCode >= 500 {
			t.Errorf("%q %.30q: %d, want a 4xx", tc.ct, tc.body, res.StatusCode)
		}
	}
	res, err := http.Post(sim.URL()+pathCommand, "application/json", strings.NewReader(`{"control":{"timestamp":"`+ts+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	r := report(t, sim.Client)
	a := clientA(t, r)
	if a.Requests != 7 || a.Judgement(clients.JudgeValid).Violations != 7 {
		t.Errorf("under the app's key: %d requests, %d invalid; want 7 and 7", a.Requests, a.Judgement(clients.JudgeValid).Violations)
	}
	byAddr, ok := r.Client(clients.AddressPrefix + "127.0.0.1)")
	if !ok || byAddr.Requests != 1 {
		t.Errorf("a request without api_key: %+v, want one under the client's address", r.Clients)
	}
	if _, ok := r.Client(clients.NoKey); ok {
		t.Errorf("requests under %s: %+v", clients.NoKey, r.Clients)
	}
}

// TestEachRetryAndReplayBugIsNamed: a buggy client for each judgement the
// faithful tests pass: a 503 retried before its Retry-After ended, an
// offline gateway hammered (with Retry-After and without), the same
// accepted command sent again in the other format, a refused request
// sent again in the other format, a device the fleet does not have. Each
// fails its judgement, with a message that says what was the same.
func TestEachRetryAndReplayBugIsNamed(t *testing.T) {
	dimA, dimC := simtest.SN('a', 5), simtest.SN('c', 0)
	check := func(t *testing.T, c *simtest.Client, id string, texts ...string) {
		t.Helper()
		a := clientA(t, report(t, c))
		j := a.Judgement(id)
		if j.Passed {
			t.Fatalf("%s passed: %+v", id, a.Judgements)
		}
		for _, s := range texts {
			if !strings.Contains(j.Latest, s) {
				t.Errorf("%s: %q does not say %q", id, j.Latest, s)
			}
		}
	}
	t.Run("503 retried at once", func(t *testing.T) {
		sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
		sim.Client.AdminJSON(http.MethodPut, "/_sim/faults", `{"error_rate":1}`, nil)
		a := newApp(t, sim.URL(), "json")
		body := a.body(timestamp(time.Now()), simtest.MACA, dimming(dimA, "30")...)
		for range 3 {
			a.want(a.post(pathCommand, body), 503)
		}
		check(t, sim.Client, clients.JudgeRetryAfter, "503 injected_fault", "before its Retry-After ended")
	})
	t.Run("offline gateway hammered", func(t *testing.T) {
		sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
		sim.Client.AdminJSON(http.MethodPut, "/_sim/faults", `{"offline_gateways":["`+simtest.MACA2+`"]}`, nil)
		a := newApp(t, sim.URL(), "xml")
		for range 3 {
			a.want(a.post(pathCommand, a.body(timestamp(time.Now()), simtest.MACA2, dimming(dimC, "30")...)), 504)
		}
		check(t, sim.Client, clients.JudgeRetryAfter, "504 gateway_offline")
	})
	t.Run("offline gateway hammered, no Retry-After", func(t *testing.T) {
		sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
		sim.Client.AdminJSON(http.MethodPut, "/_sim/faults", `{"offline_gateways":["`+simtest.MACA2+`"],"retry_after":"none"}`, nil)
		a := newApp(t, sim.URL(), "json")
		for range 5 {
			a.want(a.post(pathCommand, a.body(timestamp(time.Now()), simtest.MACA2, dimming(dimC, "30")...)), 504)
			time.Sleep(20 * time.Millisecond)
		}
		check(t, sim.Client, clients.JudgeBackoff, "504 gateway_offline answer without Retry-After", "back-off floor")
		if j := clientA(t, report(t, sim.Client)).Judgement(clients.JudgeRetryAfter); !j.Passed {
			t.Errorf("no Retry-After was given, yet %+v", j)
		}
	})
	t.Run("accepted command sent again in the other format", func(t *testing.T) {
		sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
		ts := timestamp(time.Now())
		j, x := newApp(t, sim.URL(), "json"), newApp(t, sim.URL(), "xml")
		j.want(j.post(pathCommand, j.body(ts, simtest.MACA, dimming(dimA, "30")...)), 200)
		x.want(x.post(pathCommand, x.body(ts, simtest.MACA, dimming(dimA, "30")...)), 200)
		check(t, sim.Client, clients.JudgeNoReplay, "command Light Dimmer (xml)", "same operation, fields, timestamp and sign", "sent in json and accepted")
	})
	t.Run("refused request sent again in the other format", func(t *testing.T) {
		sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
		ts := timestamp(time.Now())
		j, x := newApp(t, sim.URL(), "json"), newApp(t, sim.URL(), "xml")
		j.want(j.post(pathCommand, j.body(ts, simtest.MACA, dimming(dimA, "0")...)), 400)
		x.want(x.post(pathCommand, x.body(ts, simtest.MACA, dimming(dimA, "0")...)), 400)
		check(t, sim.Client, clients.JudgeResend400, "sent in json and refused with 400")
	})
	t.Run("device the fleet does not have", func(t *testing.T) {
		sim := simtest.Start(t, simulator.Options{AdminToken: "tok"})
		a := newApp(t, sim.URL(), "xml")
		a.want(a.post(pathCommand, a.body(timestamp(time.Now()), "0000000000ff", dimming(dimA, "30")...)), 404)
		check(t, sim.Client, clients.JudgeKnown, "gateway_not_found")
	})
}
