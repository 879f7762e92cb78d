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
