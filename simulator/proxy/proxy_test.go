package proxy_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/fixtures/sampleapp"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/proxy"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// upstream is a gwsim with the demo fleet, the real implementation here.
func upstream(t *testing.T, o simulator.Options) *simulator.Simulator {
	t.Helper()
	if o.Fleet == nil {
		o.Fleet = fleet.Demo()
	}
	return simtest.Start(t, o).Simulator
}

func start(t *testing.T, cfg proxy.Config) *proxy.Proxy {
	t.Helper()
	cfg.Logger = quiet()
	p, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Open("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func demoClient(t *testing.T, base string) *simtest.Client {
	target, _ := fleet.Demo().Target()
	c := simtest.NewClient(t, base)
	c.APIKey, c.Secret, c.Account, c.MAC = target.Key.Key, target.Key.Secret, target.AccountID, target.MAC
	return c
}

func failedOf(t *testing.T, rep *clients.Report) []string {
	t.Helper()
	target, _ := fleet.Demo().Target()
	c, ok := rep.Client(clients.Mask(target.Key.Key))
	if !ok {
		t.Fatalf("no client in %+v", rep)
	}
	var out []string
	for _, j := range c.Judgements {
		if !j.Passed {
			out = append(out, j.ID)
		}
	}
	return out
}

// TestSampleAppThroughProxy: the sample app runs through gwsim proxy in
// front of another gwsim; the proxy's client report names its bug (and is
// clean without one), and gwsim, a correct service, breaks no rule.
func TestSampleAppThroughProxy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bugs  sampleapp.Bugs
		limit int // the upstream's rate limit: 429s to wait out
		want  []string
	}{
		{"clean", sampleapp.Bugs{}, 8, nil},
		{"relay2", sampleapp.Bugs{Relay2: true}, 0, []string{clients.JudgeValid, clients.JudgeForeign}},
		{"retry-at-once", sampleapp.Bugs{RetryAtOnce: true}, 4, []string{clients.JudgeRetryAfter}},
		{"wrong-clock", sampleapp.Bugs{WrongClock: true}, 0, []string{clients.JudgeClock}},
		{"resend-400", sampleapp.Bugs{Resend400: true}, 0, []string{clients.JudgeValid, clients.JudgeResend400}},
	} {
		for _, f := range []device.Format{device.JSON, device.XML} {
			t.Run(tc.name+"/"+f.String(), func(t *testing.T) {
				up := upstream(t, simulator.Options{RateLimit: tc.limit})
				p := start(t, proxy.Config{Upstream: up.URL(), Fleet: fleet.Demo(), AdminToken: "tok"})
				if _, err := sampleapp.Run(context.Background(), sampleapp.Config{Target: p.URL(), Format: f, Burst: 3, Bugs: tc.bugs}); err != nil {
					t.Fatal(err)
				}
				c := demoClient(t, p.URL())
				c.AdminToken = "tok"
				var rep clients.Report
				c.AdminJSON(http.MethodGet, "/_sim/clients", "", &rep)
				got := failedOf(t, &rep)
				if tc.want == nil && len(got) != 0 {
					t.Errorf("a clean app failed %v", got)
				}
				for _, id := range tc.want {
					if !slices.Contains(got, id) {
						t.Errorf("%s not named: %v", id, got)
					}
				}
				if rep.Service == nil || rep.Failed() != len(got) {
					t.Errorf("gwsim as the service broke rules: %+v", rep.Service)
				}
				// The upstream saw every request the app sent: nothing blocked.
				var upRep clients.Report
				simtest.NewClient(t, up.URL()).AdminJSON(http.MethodGet, "/_sim/clients", "", &upRep)
				if len(upRep.Clients) != 1 || len(rep.Clients) != 1 || upRep.Clients[0].Requests != rep.Clients[0].Requests {
					t.Errorf("upstream saw %+v, proxy %+v", upRep.Clients, rep.Clients)
				}
			})
		}
	}
}

// TestProxyChangesNothingOnTheWire: the app gets the upstream's answer as
// it is (status, Content-Type, Retry-After, body), invalid requests too.
func TestProxyChangesNothingOnTheWire(t *testing.T) {
	up := upstream(t, simulator.Options{})
	p := start(t, proxy.Config{Upstream: up.URL()})
	target, _ := fleet.Demo().Target()
	am := target.Devices["Appliance Module"].SN
	for _, f := range []device.Format{device.JSON, device.XML} {
		direct, via := demoClient(t, up.URL()), demoClient(t, p.URL())
		bad := direct.Command(am, "Appliance Module", simtest.S("io", "On"), simtest.S("Relay2", "On"))
		a := direct.Post(device.SendCommand.Path(), simtest.ContentType(f), simtest.Body(f, bad))
		b := via.Post(device.SendCommand.Path(), simtest.ContentType(f), simtest.Body(f, bad))
		if a.Status != b.Status || string(a.Body) != string(b.Body) || a.Header.Get("Content-Type") != b.Header.Get("Content-Type") {
			t.Errorf("%s: direct %s, through the proxy %s", f, a, b)
		}
		b.Fail(t, f, http.StatusBadRequest, device.CodeUnexpectedField, "Relay2")
	}
	var j []proxy.Entry
	demoClient(t, p.URL()).AdminJSON(http.MethodGet, "/_sim/journal", "", &j)
	if len(j) != 2 || !strings.Contains(j[0].RequestViolation, "Relay2") || j[0].Blocked || j[0].Client != "demo…" {
		t.Errorf("journal %+v", j)
	}
}

// TestBlockInvalid: with BlockInvalid, a request that breaks the rules is
// answered by the proxy and never reaches the upstream.
func TestBlockInvalid(t *testing.T) {
	up := upstream(t, simulator.Options{})
	p := start(t, proxy.Config{Upstream: up.URL(), BlockInvalid: true})
	target, _ := fleet.Demo().Target()
	am := target.Devices["Appliance Module"].SN
	for _, f := range []device.Format{device.JSON, device.XML} {
		c := demoClient(t, p.URL())
		r := c.Send(device.SendCommand, f, c.Command(am, "Appliance Module", simtest.S("io", "On"), simtest.S("Relay2", "On")))
		r.Fail(t, f, http.StatusBadRequest, device.CodeUnexpectedField, "Relay2")
		if r.Header.Get("X-Gwsim-Proxy") != "blocked" {
			t.Errorf("%s: not marked as blocked: %v", f, r.Header)
		}
		io := map[device.Format]string{device.JSON: "Off", device.XML: "On"}[f] // not the same request twice
		c.Send(device.SendCommand, f, c.Command(am, "Appliance Module", simtest.S("io", io))).OK(t, f)
	}
	var upRep clients.Report
	simtest.NewClient(t, up.URL()).AdminJSON(http.MethodGet, "/_sim/clients", "", &upRep)
	if len(upRep.Clients) != 1 || upRep.Clients[0].Requests != 2 || len(failedOf(t, &upRep)) != 0 {
		t.Errorf("the upstream saw %+v; want only the two valid commands", upRep.Clients)
	}
}

// TestBrokenServiceIsFlagged: an upstream that breaks the rules is named in
// the service report: 200 to an invalid request, text/plain answers, a 500
// to bad input, a 429 without Retry-After.
func TestBrokenServiceIsFlagged(t *testing.T) {
	status := http.StatusOK
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(broken.Close)
	p := start(t, proxy.Config{Upstream: broken.URL})
	target, _ := fleet.Demo().Target()
	c := demoClient(t, p.URL())
	bad := c.Command(target.Devices["Light Dimmer"].SN, "Light Dimmer", simtest.N("dimming", "500"))
	c.HTTP = http.DefaultClient
	for _, s := range []int{http.StatusOK, http.StatusInternalServerError, http.StatusTooManyRequests} {
		status = s
		res, err := http.Post(p.URL()+device.SendCommand.Path(), "application/json", strings.NewReader(string(simtest.Body(device.JSON, bad))))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != s || string(b) != "ok" {
			t.Errorf("the proxy changed the answer: %d %q", res.StatusCode, b)
		}
	}
	var rep clients.Report
	c.AdminJSON(http.MethodGet, "/_sim/clients", "", &rep)
	failedIDs := map[string]bool{}
	for _, j := range rep.Service.Judgements {
		failedIDs[j.ID] = !j.Passed
	}
	for _, id := range []string{proxy.AnswerFormat, proxy.RefusesInvalid, proxy.No5xx, proxy.RetryAfter} {
		if !failedIDs[id] {
			t.Errorf("%s not flagged: %+v", id, rep.Service.Judgements)
		}
	}
	if failedIDs[proxy.AcceptsValid] {
		t.Errorf("accepts_valid flagged for invalid requests: %+v", rep.Service.Judgements)
	}
}

func TestBadConfig(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "http://", "http://h/?q=1"} {
		if _, err := proxy.New(proxy.Config{Upstream: u}); err == nil {
			t.Errorf("upstream %q accepted", u)
		}
	}
}

// TestUpstreamUnreachable: an upstream that does not answer is answered
// 502 upstream_unreachable in the request's format, and journaled.
func TestUpstreamUnreachable(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	url := gone.URL
	gone.Close()
	p := start(t, proxy.Config{Upstream: url})
	for _, f := range []device.Format{device.JSON, device.XML} {
		c := demoClient(t, p.URL())
		c.Send(device.SendMessage, f, append(c.Envelope(), simtest.S("message_type", "message"), simtest.S("message_value", "x=1"))).
			Fail(t, f, http.StatusBadGateway, "upstream_unreachable", "")
	}
	var j []proxy.Entry
	demoClient(t, p.URL()).AdminJSON(http.MethodGet, "/_sim/journal", "", &j)
	if len(j) != 2 || j[0].Status != http.StatusBadGateway || len(j[0].AnswerViolations) != 1 {
		t.Errorf("journal %+v", j)
	}
}

// TestProxyJudgesBothSidesByTheRuleTable: in front of a faulty service
// written here (it answers 200 to everything, or refuses with the wrong
// code), the proxy flags, by the rule table of gatewayapi/oracle, (a) the
// app's invalid request and its bad sign and (b) each answer that breaks
// the interface, in both formats, while the app gets every answer and
// the service every request byte for byte.
func TestProxyJudgesBothSidesByTheRuleTable(t *testing.T) {
	type seen struct {
		body []byte
		ct   string
	}
	var (
		mode     string // "accept" or "wrong-code"
		received []seen
	)
	answers := map[string]map[device.Format]string{
		"accept": {device.JSON: `{"status":"success"}`, device.XML: `<xml><status>success</status></xml>`},
		"wrong-code": {device.JSON: `{"status":"error","error":{"code":"invalid_field","field":"io","message":"no"}}`,
			device.XML: `<xml><status>error</status><error><code>invalid_field</code><field>io</field><message>no</message></error></xml>`},
	}
	faulty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		received = append(received, seen{b, r.Header.Get("Content-Type")})
		f := device.JSON
		if strings.Contains(r.Header.Get("Content-Type"), "xml") {
			f = device.XML
		}
		w.Header().Set("Content-Type", simtest.ContentType(f))
		w.Header().Set("X-Faulty", mode)
		if mode == "wrong-code" {
			w.WriteHeader(http.StatusBadRequest)
		}
		io.WriteString(w, answers[mode][f])
	}))
	t.Cleanup(faulty.Close)
	p := start(t, proxy.Config{Upstream: faulty.URL, Fleet: fleet.Demo(), AdminToken: "tok"})
	target, _ := fleet.Demo().Target()
	am := target.Devices["Appliance Module"].SN

	for _, f := range []device.Format{device.JSON, device.XML} {
		received = nil
		app := demoClient(t, p.URL())
		wrongSecret := demoClient(t, p.URL())
		wrongSecret.Secret = "not-the-secret"
		for i, tc := range []struct {
			mode       string
			fields     []simtest.F
			request    string // the app's violation, "" for none
			answer     string // the service's, "" for none
			wantStatus int
		}{
			// A valid command, answered success: nothing to flag (the faulty
			// service's right answers are not held against it).
			{"accept", app.Command(am, "Appliance Module", simtest.S("io", "On")), "", "", 200},
			// (a) and (b): a bad sign, accepted.
			{"accept", wrongSecret.Command(am, "Appliance Module", simtest.S("io", "Off")), "bad_signature", proxy.RefusesInvalid, 200},
			// (a) Relay2 on an Appliance Module, accepted: MUST NOT.
			{"accept", app.Command(am, "Appliance Module", simtest.S("io", "On"), simtest.S("Relay2", "On")), "unexpected_field (SHOULD)", proxy.RefusesInvalid, 200},
			// (b) the same refused, with the wrong code.
			{"wrong-code", app.Command(am, "Appliance Module", simtest.S("io", "Off"), simtest.S("Relay2", "On")), "unexpected_field", proxy.ErrorCode, 400},
			// (b) a valid command refused as invalid.
			{"wrong-code", app.Command(am, "Appliance Module", simtest.S("io", "On")), "", proxy.AcceptsValid, 400},
		} {
			mode = tc.mode
			body := simtest.Body(f, tc.fields)
			res := app.Post(device.SendCommand.Path(), simtest.ContentType(f), body)
			// The service's own X-Faulty header is not relayed (the proxy
			// relays an allow-list of headers): the body tells the mode.
			if res.Status != tc.wantStatus || string(res.Body) != answers[tc.mode][f] || res.Header.Get("X-Faulty") != "" ||
				res.Header.Get("Content-Type") != simtest.ContentType(f) {
				t.Errorf("%s #%d: the app got %s, not the service's answer", f, i, res)
			}
			if len(received) != i+1 || string(received[i].body) != string(body) || received[i].ct != simtest.ContentType(f) {
				t.Fatalf("%s #%d: the service did not get the request as sent", f, i)
			}
			var j []proxy.Entry
			app.AdminToken = "tok"
			app.AdminJSON(http.MethodGet, "/_sim/journal", "", &j)
			e := j[len(j)-1]
			if tc.request == "" && e.RequestViolation != "" || !strings.Contains(e.RequestViolation, tc.request) {
				t.Errorf("%s #%d: request violation %q, want %q", f, i, e.RequestViolation, tc.request)
			}
			flagged := strings.Join(e.AnswerViolations, "; ")
			if tc.answer == "" && flagged != "" || !strings.Contains(flagged, tc.answer) || e.Blocked || e.Format != f.String() {
				t.Errorf("%s #%d: answer violations %q, want %q (%+v)", f, i, flagged, tc.answer, e)
			}
			if strings.Contains(e.RequestViolation+flagged, target.Key.Secret) || strings.Contains(e.RequestViolation+flagged, target.Key.Key) {
				t.Errorf("%s #%d: a secret in the journal: %+v", f, i, e)
			}
		}
	}
	c := demoClient(t, p.URL())
	c.AdminToken = "tok"
	var rep clients.Report
	c.AdminJSON(http.MethodGet, "/_sim/clients", "", &rep)
	byID := map[string]clients.Judgement{}
	for _, j := range rep.Service.Judgements {
		byID[j.ID] = j
	}
	for id, n := range map[string]uint64{proxy.RefusesInvalid: 4, proxy.ErrorCode: 2, proxy.AcceptsValid: 2, proxy.AnswerFormat: 0, proxy.AnswerBody: 0, proxy.StatusOfCode: 0} {
		if byID[id].Violations != n {
			t.Errorf("service judgement %s: %d violations, want %d (%+v)", id, byID[id].Violations, n, byID[id])
		}
	}
	app, _ := rep.Client(clients.Mask(target.Key.Key))
	if app.Judgement(clients.JudgeValid).Violations != 4 || app.Judgement(clients.JudgeSign).Violations != 2 {
		t.Errorf("the client report: %+v", app.Judgements)
	}
	var text strings.Builder
	rep.WriteText(&text)
	if strings.Contains(text.String(), target.Key.Secret) || strings.Contains(text.String(), target.Key.Key) {
		t.Errorf("a secret in the report")
	}
}

// TestLivePageSignIn: the live page is open (it holds no data); its data
// needs the admin token, or the session cookie a sign-in with the token
// sets; a wrong token sets none, and a sign-out ends the session.
func TestLivePageSignIn(t *testing.T) {
	up := upstream(t, simulator.Options{})
	p := start(t, proxy.Config{Upstream: up.URL(), AdminToken: "tok"})
	get := func(path string, cookies ...*http.Cookie) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, p.URL()+path, nil)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	if r := get("/_sim/"); r.StatusCode != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(r.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("the page: %d %v", r.StatusCode, r.Header)
	}
	for _, path := range []string{"/_sim/static/live.js", "/_sim/static/live.css"} {
		if r := get(path); r.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, r.StatusCode)
		}
	}
	for _, path := range []string{"/_sim/clients", "/_sim/journal", "/_sim/service", "/_sim/report"} {
		if r := get(path); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d", path, r.StatusCode)
		}
	}
	signIn := func(token string) *http.Response {
		res, err := http.Post(p.URL()+"/_sim/session", "application/json", strings.NewReader(`{"token":"`+token+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if r := signIn("wrong"); r.StatusCode != http.StatusUnauthorized || len(r.Cookies()) != 0 {
		t.Errorf("a wrong token: %d %v", r.StatusCode, r.Cookies())
	}
	r := signIn("tok")
	if r.StatusCode != http.StatusOK || len(r.Cookies()) != 1 || !r.Cookies()[0].HttpOnly || r.Cookies()[0].Value == "tok" {
		t.Fatalf("sign-in: %d %v", r.StatusCode, r.Cookies())
	}
	cookie := r.Cookies()[0]
	for _, path := range []string{"/_sim/clients", "/_sim/journal", "/_sim/service", "/_sim/report"} {
		if r := get(path, cookie); r.StatusCode != http.StatusOK {
			t.Errorf("%s with the session: %d", path, r.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, p.URL()+"/_sim/session", nil)
	req.AddCookie(cookie)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("sign-out: %v", err)
	}
	if r := get("/_sim/clients", cookie); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("after sign-out: %d", r.StatusCode)
	}
}

// TestGwsimBreaksNoRuleOfTheTable: gwsim, behind the proxy, answers every
// sample of the rule table (each edge, allowed form and broken form of
// every command field of every type, in both formats) as the table says:
// the service report is clean, and the proxy flags the app exactly for
// the samples the table calls invalid. gwsim and the table are written
// apart, so this is a cross-check of both.
func TestGwsimBreaksNoRuleOfTheTable(t *testing.T) {
	up := upstream(t, simulator.Options{})
	p := start(t, proxy.Config{Upstream: up.URL(), Fleet: fleet.Demo(), JournalSize: 10000})
	target, _ := fleet.Demo().Target()
	c := demoClient(t, p.URL())
	var want []bool // the table's verdict, per request: invalid
	var what []string
	for _, typ := range oracle.Types {
		d, ok := target.Devices[typ.Name]
		if !ok {
			t.Fatalf("the demo fleet has no %s", typ.Name)
		}
		for i := range typ.Fields {
			fd := &typ.Fields[i]
			var samples []oracle.Sample
			samples = append(samples, fd.Edges()...)
			samples = append(samples, fd.Forms(fd.Example)...)
			samples = append(samples, fd.Broken(fd.Example)...)
			for _, s := range samples {
				for _, f := range []device.Format{device.JSON, device.XML} {
					if s.Value.Kind == oracle.Other || s.Value.JSONOnly() && f == device.XML {
						continue
					}
					v := simtest.S(fd.Wire(f), s.Value.Raw)
					if s.Value.Kind == oracle.Number {
						v = simtest.N(fd.Wire(f), s.Value.Raw)
					}
					c.Post(device.SendCommand.Path(), simtest.ContentType(f), simtest.Body(f, c.Command(d.SN, typ.Name, v)))
					want = append(want, !s.Verdict.OK)
					what = append(what, f.String()+" "+typ.Name+" "+fd.Name+" "+s.Title)
				}
			}
		}
	}
	// The operations' own fields: a device's name, a message's type and
	// value.
	ld := target.Devices["Light Dimmer"].SN
	for _, tc := range []struct {
		op    device.Operation
		fd    *oracle.Field
		other []simtest.F
	}{
		{device.UpdateName, &oracle.Name, []simtest.F{simtest.S(device.FieldSN, ld)}},
		{device.SendMessage, &oracle.MessageType, []simtest.F{simtest.S(device.FieldMessageValue, "brightness=80")}},
		{device.SendMessage, &oracle.MessageValue, []simtest.F{simtest.S(device.FieldMessageType, "message")}},
	} {
		samples := append(append(tc.fd.Edges(), tc.fd.Forms(tc.fd.Example)...), tc.fd.Broken(tc.fd.Example)...)
		for _, s := range samples {
			for _, f := range []device.Format{device.JSON, device.XML} {
				if s.Value.Kind != oracle.String {
					continue
				}
				fields := append(append(c.Envelope(), tc.other...), simtest.S(tc.fd.Name, s.Value.Raw))
				c.Post(tc.op.Path(), simtest.ContentType(f), simtest.Body(f, fields))
				want = append(want, !s.Verdict.OK)
				what = append(what, f.String()+" "+tc.op.Name()+" "+tc.fd.Name+" "+s.Title)
			}
		}
	}
	// The body's structure, broken in each format (CONTRACT 2), and a
	// Content-Type of neither.
	msg := append(c.Envelope(), simtest.S(device.FieldMessageType, "message"), simtest.S(device.FieldMessageValue, "brightness=80"))
	js, xs := string(simtest.Body(device.JSON, msg)), string(simtest.Body(device.XML, msg))
	for _, tc := range []struct{ name, ct, body string }{
		{"json null", "application/json", "null"},
		{"json array", "application/json", "[" + js + "]"},
		{"json two objects", "application/json", js + js},
		{"json extra member", "application/json", strings.TrimSuffix(js, "}") + `,"x":{}}`},
		{"json Control", "application/json", strings.Replace(js, `"control"`, `"Control"`, 1)},
		{"json empty control", "application/json", `{"control":{}}`},
		{"json trailing comma", "application/json", strings.TrimSuffix(js, "}}") + ",}}"},
		{"xml root XML", "application/xml", strings.NewReplacer("<xml>", "<XML>", "</xml>", "</XML>").Replace(xs)},
		{"xml extra child", "application/xml", strings.Replace(xs, "</control>", "</control><x>1</x>", 1)},
		{"xml second root", "application/xml", xs + "<xml/>"},
		{"xml mismatched tag", "application/xml", strings.Replace(xs, "</message_type>", "</message_Type>", 1)},
		{"xml doctype", "application/xml", strings.Replace(xs, "<xml>", "<!DOCTYPE xml><xml>", 1)},
		{"xml entity", "application/xml", strings.Replace(xs, ">message<", ">mess&nbsp;age<", 1)},
		{"xml field with child", "application/xml", strings.Replace(xs, ">message<", "><v>message</v><", 1)},
		{"xml no control", "application/xml", `<xml></xml>`},
		{"text/plain", "text/plain", js},
		{"no Content-Type", "", js},
	} {
		c.Post(device.SendMessage.Path(), tc.ct, []byte(tc.body))
		want = append(want, true)
		what = append(what, tc.name)
	}
	invalid := 0
	for _, w := range want {
		if w {
			invalid++
		}
	}
	if len(want) < 300 || invalid < 100 || len(want)-invalid < 100 {
		t.Fatalf("only %d samples, %d invalid", len(want), invalid)
	}
	var j []proxy.Entry
	c.AdminJSON(http.MethodGet, "/_sim/journal", "", &j)
	if len(j) != len(want) {
		t.Fatalf("journal %d, sent %d", len(j), len(want))
	}
	bad := 0
	for i, e := range j {
		if (e.RequestViolation != "") != want[i] || len(e.AnswerViolations) > 0 {
			if bad++; bad <= 20 {
				t.Errorf("%s: status %d, app %q, service %q (the table: invalid %v)", what[i], e.Status, e.RequestViolation, e.AnswerViolations, want[i])
			}
		}
	}
	var rep clients.Report
	c.AdminJSON(http.MethodGet, "/_sim/clients", "", &rep)
	for _, jd := range rep.Service.Judgements {
		if !jd.Passed {
			t.Errorf("gwsim broke %s: %s", jd.ID, jd.Latest)
		}
	}
	t.Logf("%d requests (%d invalid by the table), %d judged apart", len(want), invalid, bad)
}
