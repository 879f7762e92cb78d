package clients_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// start runs gwsim with the test fleet on loopback.
func start(t *testing.T, o simulator.Options) (*simulator.Simulator, *simtest.Client) {
	t.Helper()
	o.Fleet = simtest.Fleet()
	s := simtest.Start(t, o)
	return s.Simulator, s.Client
}

// report is GET /_sim/clients, read as the report; it fails the test if
// the answer carries the api_key whole or its secret.
func report(t *testing.T, c *simtest.Client) *clients.Report {
	t.Helper()
	status, _, b := c.Admin(http.MethodGet, "/_sim/clients", "")
	if status != http.StatusOK {
		t.Fatalf("GET /_sim/clients: %d %s", status, b)
	}
	for _, secret := range []string{simtest.KeyA, simtest.SecretA, simtest.SecretB} {
		if bytes.Contains(b, []byte(secret)) {
			t.Fatalf("the report carries %q:\n%s", secret, b)
		}
	}
	var r clients.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return &r
}

func clientA(t *testing.T, r *clients.Report) clients.Client {
	t.Helper()
	c, ok := r.Client(clients.Mask(simtest.KeyA))
	if !ok {
		t.Fatalf("no client %s in %+v", clients.Mask(simtest.KeyA), r)
	}
	return c
}

// failed lists the judgements that failed.
func failed(c clients.Client) []string {
	var out []string
	for _, j := range c.Judgements {
		if !j.Passed {
			out = append(out, j.ID)
		}
	}
	return out
}

func dimmer(c *simtest.Client, at time.Time, level string) []simtest.F {
	return append(c.EnvelopeAt(at), simtest.S("sn", simtest.SN('a', 5)), simtest.S("type", "Light Dimmer"), simtest.N("dimming", level))
}

func TestCleanClientPassesEveryJudgement(t *testing.T) {
	_, c := start(t, simulator.Options{AdminToken: "tok"})
	for _, f := range []device.Format{device.JSON, device.XML} {
		// Another value in each format: the same fields, timestamp and sign
		// twice would be a replay.
		c.Send(device.SendCommand, f, c.Command(simtest.SN('a', 5), "Light Dimmer", simtest.N("dimming", fmt.Sprint(30+int(f))))).OK(t, f)
		c.Send(device.UpdateName, f, append(c.Envelope(), simtest.S("sn", simtest.SN('a', 0)), simtest.S("name", "Hall "+f.String()))).OK(t, f)
	}
	r := report(t, c)
	a := clientA(t, r)
	if got := failed(a); len(got) != 0 {
		t.Errorf("a clean client failed %v: %+v", got, a.Judgements)
	}
	if a.Requests != 4 {
		t.Errorf("requests %d, want 4", a.Requests)
	}
	want := map[string]bool{"command Light Dimmer json": false, "command Light Dimmer xml": false,
		"update_name  json": false, "update_name  xml": false}
	for _, cv := range a.Coverage {
		k := cv.Operation + " " + cv.Type + " " + cv.Format
		if _, ok := want[k]; ok {
			want[k] = true
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("coverage misses %q: %+v", k, a.Coverage)
		}
	}
	if len(a.Errors) != 0 {
		t.Errorf("errors %+v, want none", a.Errors)
	}
	if a.Skew == nil || a.Skew.MaxSeconds > 2 || a.Skew.MinSeconds < -2 {
		t.Errorf("skew %+v, want about 0", a.Skew)
	}

	// DELETE forgets every client.
	c.AdminJSON(http.MethodDelete, "/_sim/clients", "", nil)
	if r := report(t, c); len(r.Clients) != 0 {
		t.Errorf("after DELETE: %+v", r.Clients)
	}
	// The admin token guards the report.
	c.AdminToken = ""
	if status, _, _ := c.Admin(http.MethodGet, "/_sim/clients", ""); status != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", status)
	}
}

func TestEachBugIsNamed(t *testing.T) {
	for _, f := range []device.Format{device.JSON, device.XML} {
		t.Run(f.String(), func(t *testing.T) {
			_, c := start(t, simulator.Options{})
			now := time.Now()
			// Relay2 sent to an Appliance Module.
			c.Send(device.SendCommand, f, c.Command(simtest.SN('a', 0), "Appliance Module", simtest.S("io", "On"), simtest.S("Relay2", "On"))).
				Fail(t, f, http.StatusBadRequest, device.CodeUnexpectedField, "Relay2")
			// A 400 sent again unchanged: the same fields, timestamp and sign.
			c.Send(device.SendCommand, f, dimmer(c, now.Add(-10*time.Second), "500")).Fail(t, f, http.StatusBadRequest, device.CodeInvalidField, "dimming")
			c.Send(device.SendCommand, f, dimmer(c, now.Add(-10*time.Second), "500")).Fail(t, f, http.StatusBadRequest, device.CodeInvalidField, "dimming")
			// A device the fleet does not have.
			c.Send(device.SendCommand, f, c.Command(strings.Repeat("f", 32), "Light Dimmer", simtest.N("dimming", "5"))).
				Fail(t, f, http.StatusNotFound, device.CodeDeviceNotFound, "sn")
			// A clock an hour behind.
			c.Send(device.SendCommand, f, dimmer(c, now.Add(-time.Hour), "20")).Fail(t, f, http.StatusUnauthorized, device.CodeStaleTimestamp, "timestamp")
			// A wrong secret.
			bad := *c
			bad.Secret = "not-the-secret"
			bad.Send(device.SendCommand, f, dimmer(&bad, now, "21")).Fail(t, f, http.StatusUnauthorized, device.CodeBadSignature, "sign")
			// The very same body twice.
			body := dimmer(c, now, "22")
			c.Send(device.SendCommand, f, body).OK(t, f)
			c.Send(device.SendCommand, f, body).OK(t, f)

			// A 429 retried at once, against a gwsim with a rate limit.
			_, limited := start(t, simulator.Options{RateLimit: 1})
			limited.Send(device.SendCommand, f, dimmer(limited, now, "23")).OK(t, f)
			limited.Send(device.SendCommand, f, dimmer(limited, now, "24")).Fail(t, f, http.StatusTooManyRequests, device.CodeRateLimited, "")
			limited.Send(device.SendCommand, f, dimmer(limited, now.Add(time.Second), "24")) // the same command again at once, re-signed
			l := clientA(t, report(t, limited))
			if got := failed(l); len(got) != 1 || got[0] != clients.JudgeRetryAfter {
				t.Errorf("retried at once on 429: failed %v, want only %s", got, clients.JudgeRetryAfter)
			}
			if j := l.Judgement(clients.JudgeRetryAfter); !strings.Contains(j.Latest, "after a 429 rate_limited answer had left") ||
				!strings.Contains(j.Latest, "before its Retry-After ended") {
				t.Errorf("retry: %+v", j)
			}

			a := clientA(t, report(t, c))
			for _, id := range []string{clients.JudgeValid, clients.JudgeForeign, clients.JudgeResend400, clients.JudgeClock,
				clients.JudgeSign, clients.JudgeNoReplay, clients.JudgeKnown} {
				if j := a.Judgement(id); j.Passed || j.Latest == "" {
					t.Errorf("%s passed: %+v", id, j)
				}
			}
			if j := a.Judgement(clients.JudgeForeign); !strings.Contains(j.Latest, "Relay2 (a field of Appliance Module Plus) sent to an Appliance Module") {
				t.Errorf("foreign fields: %q", j.Latest)
			}
			if a.SignFailures != 1 || a.ForeignFields != 1 {
				t.Errorf("sign failures %d, foreign fields %d; want 1 and 1", a.SignFailures, a.ForeignFields)
			}
			if a.Skew == nil || a.Skew.MinSeconds > -3590 {
				t.Errorf("skew %+v, want about -3600 s at least once", a.Skew)
			}
			if j := a.Judgement(clients.JudgeValid); j.Violations != 3 {
				t.Errorf("invalid requests %d, want 3 (Relay2 and the two dimming 500): %+v", j.Violations, j)
			}
			codes := map[string]uint64{}
			for _, e := range a.Errors {
				codes[e.Code] = e.Count
			}
			if j := a.Judgement(clients.JudgeRetryAfter); !j.Passed {
				t.Errorf("no 429 was given, yet %+v", j)
			}
			if codes[device.CodeInvalidField] != 2 || codes[device.CodeStaleTimestamp] != 1 || codes[device.CodeBadSignature] != 1 {
				t.Errorf("error counts %v", codes)
			}
		})
	}
}

func TestJUnitHasOneFailingCasePerBrokenJudgement(t *testing.T) {
	_, c := start(t, simulator.Options{})
	c.Send(device.SendCommand, device.JSON, c.Command(simtest.SN('a', 0), "Appliance Module", simtest.S("io", "On"), simtest.S("Relay2", "On")))
	r := report(t, c)
	var buf bytes.Buffer
	if err := r.WriteJUnit(&buf); err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &suites); err != nil {
		t.Fatalf("%v in %s", err, buf.Bytes())
	}
	if len(suites.Suites) != 1 || suites.Suites[0].Name != "client key-… "+clientA(t, r).ID {
		t.Fatalf("suites %+v", suites.Suites)
	}
	failedCases := map[string]bool{}
	for _, tc := range suites.Suites[0].Cases {
		failedCases[tc.Name] = tc.Failure != nil
	}
	if len(failedCases) != 11 || !failedCases["app sent only valid requests"] ||
		!failedCases["app sent no fields that belong to another device type"] || failedCases["app waited out Retry-After on 429, 503 and 504"] {
		t.Errorf("cases %v", failedCases)
	}
	if suites.Failures != 2 {
		t.Errorf("failures %d, want 2", suites.Failures)
	}
	for _, w := range []func(*bytes.Buffer) error{
		func(b *bytes.Buffer) error { return r.WriteText(b) },
		func(b *bytes.Buffer) error { return r.WriteHTML(b) },
	} {
		var b bytes.Buffer
		if err := w(&b); err != nil || !strings.Contains(b.String(), "Relay2 (a field of Appliance Module Plus)") {
			t.Errorf("%v: %s", err, b.String())
		}
	}
}

func TestMemoryIsBounded(t *testing.T) {
	r := clients.New(clients.Config{MaxClients: 3})
	for i := 0; i < 10; i++ {
		body := fmt.Sprintf(`{"control":{"api_key":"client-%d","timestamp":"20260101000000","sign":"%032d","myservice_id":"%024d","mac":"%012d","message_type":"message","message_value":"x=%d"}}`, i, 0, 0, 0, i)
		for j := 0; j < 2*300; j++ { // beyond every ring
			r.Observe(clients.Exchange{Time: time.Now(), Path: device.SendMessage.Path(), ContentType: "application/json",
				Body: []byte(body), Status: 418, Header: http.Header{}, Answer: []byte(fmt.Sprintf(`{"status":"error","error":{"code":"c%d"}}`, j))})
		}
	}
	rep := r.Report()
	if len(rep.Clients) != 4 || rep.Clients[3].Client != clients.OtherClients || rep.Clients[3].Requests != 7*600 {
		t.Fatalf("clients: %d, last %+v", len(rep.Clients), rep.Clients[len(rep.Clients)-1].Client)
	}
	for _, c := range rep.Clients {
		if len(c.Errors) > 64 {
			t.Errorf("%s keeps %d error codes", c.Client, len(c.Errors))
		}
	}
	if m := clients.Mask("client-1"); m != "clie…" {
		t.Errorf("Mask: %q", m)
	}
}

// TestEchoedCredentialsAreScrubbed: an upstream (behind gwsim proxy) that
// echoes the api_key and the sign in its error message does not get them
// into the report.
func TestEchoedCredentialsAreScrubbed(t *testing.T) {
	r := clients.New(clients.Config{})
	sign := strings.Repeat("ab", 16)
	body := `{"control":{"api_key":"secret-looking-key","timestamp":"20260101000000","sign":"` + sign + `","myservice_id":"` + strings.Repeat("0", 24) +
		`","mac":"` + strings.Repeat("0", 12) + `","message_type":"message","message_value":"x=1"}}`
	r.Observe(clients.Exchange{Time: time.Now(), Path: device.SendMessage.Path(), ContentType: "application/json", Body: []byte(body),
		Status: 401, Header: http.Header{}, Answer: []byte(`{"status":"error","error":{"code":"bad_signature","message":"sign ` + strings.ToUpper(sign) + ` for key secret-looking-key"}}`)})
	var b bytes.Buffer
	r.Report().WriteJSON(&b)
	if strings.Contains(b.String(), "secret-looking-key") || strings.Contains(strings.ToLower(b.String()), sign) {
		t.Errorf("the report carries the key or the sign:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "secr…") {
		t.Errorf("the client is not named: %s", b.String())
	}
}

// TestReportScopeInMemory: a report kept in the process's memory says
// so, in JSON, after requests in both formats.
func TestReportScopeInMemory(t *testing.T) {
	_, c := start(t, simulator.Options{})
	for _, f := range []device.Format{device.JSON, device.XML} {
		c.Send(device.SendCommand, f, dimmer(c, time.Now(), "30")).OK(t, f)
	}
	r := report(t, c)
	if r.Scope != clients.ScopeProcess || len(r.Replicas) != 0 || clientA(t, r).Requests != 2 {
		t.Errorf("scope %q, replicas %v, requests %d", r.Scope, r.Replicas, clientA(t, r).Requests)
	}
}

// TestUntriedSaysWhatTheAppNeverTried: the report lists the operations,
// device types and formats an app never sent and the errors it never
// met, in every format, so that a team sees what its tests do not cover.
func TestUntriedSaysWhatTheAppNeverTried(t *testing.T) {
	_, c := start(t, simulator.Options{})
	c.Send(device.SendCommand, device.JSON, c.Command(simtest.SN('a', 5), "Light Dimmer", simtest.N("dimming", "30"))).OK(t, device.JSON)
	c.Send(device.SendCommand, device.JSON, c.Command(strings.Repeat("f", 32), "Light Dimmer", simtest.N("dimming", "31"))).
		Fail(t, device.JSON, http.StatusNotFound, device.CodeDeviceNotFound, "sn")
	r := report(t, c)
	u := clientA(t, r).Untried
	if strings.Join(u.Operations, ",") != "message,update_name" || strings.Join(u.Formats, ",") != "xml" || len(u.Types) != len(device.Types)-1 {
		t.Errorf("untried %+v", u)
	}
	for _, typ := range u.Types {
		if typ == "Light Dimmer" {
			t.Errorf("Light Dimmer was commanded: %+v", u)
		}
	}
	if len(u.Errors) != len(clients.ReadyFor)-1 || strings.Contains(strings.Join(u.Errors, ","), "device_not_found") {
		t.Errorf("errors never met %v", u.Errors)
	}
	var text, page bytes.Buffer
	r.WriteText(&text)
	r.WriteHTML(&page)
	for _, want := range []string{"never sent: operations message, update_name; device types Appliance Module", "; formats xml\n", "never met: 401 stale_timestamp"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text misses %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), ";\n") {
		t.Errorf("a line of the text ends with a stray ';':\n%s", text.String())
	}
	if !strings.Contains(page.String(), "errors never met") || !strings.Contains(page.String(), "429 rate_limited") {
		t.Errorf("page misses what was never tried")
	}
}
