package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/proxy"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// proxyMetric reads one sample of the proxy's GET /metrics through real
// HTTP.
func proxyMetric(t *testing.T, c *simtest.Client, sample string) (float64, bool) {
	t.Helper()
	status, _, b := c.Admin(http.MethodGet, "/metrics", "")
	if status != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", status, b)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f, true
		}
	}
	return 0, false
}

// TestProxyViolationMetrics: the proxy counts the app's broken requests
// and the service's broken answers apart, in JSON and XML, behind the
// admin token.
func TestProxyViolationMetrics(t *testing.T) {
	status := http.StatusOK
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(broken.Close)
	const token = "proxy-metrics"
	p := start(t, proxy.Config{Upstream: broken.URL, AdminToken: token})
	target, _ := fleet.Demo().Target()
	c := demoClient(t, p.URL())
	if got, _, _ := c.Admin(http.MethodGet, "/metrics", ""); got != http.StatusUnauthorized {
		t.Fatalf("GET /metrics without the token: %d", got)
	}
	c.AdminToken = token
	app, service := `gwsim_proxy_violations_total{side="app"}`, `gwsim_proxy_violations_total{side="service"}`
	for _, s := range []string{app, service} {
		if v, ok := proxyMetric(t, c, s); !ok || v != 0 {
			t.Fatalf("%s before any request: %v %v", s, v, ok)
		}
	}
	sn := target.Devices["Light Dimmer"].SN
	for _, f := range []device.Format{device.JSON, device.XML} {
		// An invalid command (dimming 500): the app breaks a rule, and the
		// service's 200 to it breaks another (it must refuse).
		if got := post(t, p.URL(), f, c.Command(sn, "Light Dimmer", simtest.N("dimming", "500"))); got != http.StatusOK {
			t.Fatalf("%s: the proxy changed the answer: %d", f, got)
		}
	}
	a, _ := proxyMetric(t, c, app)
	s, _ := proxyMetric(t, c, service)
	if a != 2 {
		t.Errorf("app violations %v, want 2 (one invalid request in each format)", a)
	}
	if s < 2 {
		t.Errorf("service violations %v, want at least 2 (a text/plain 200 to an invalid request, twice)", s)
	}
	// A valid request answered by a 500: only the service's violations grow.
	status = http.StatusInternalServerError
	post(t, p.URL(), device.XML, c.Command(sn, "Light Dimmer", simtest.N("dimming", "50")))
	if a2, _ := proxyMetric(t, c, app); a2 != a {
		t.Errorf("app violations moved on a valid request: %v -> %v", a, a2)
	}
	if s2, _ := proxyMetric(t, c, service); s2 <= s {
		t.Errorf("service violations did not grow on a 500: %v -> %v", s, s2)
	}
	if _, ok := proxyMetric(t, c, "go_goroutines"); !ok {
		t.Error("go_goroutines missing")
	}
}

// post sends a command in format through the proxy and returns the status.
func post(t *testing.T, base string, f device.Format, fields []simtest.F) int {
	t.Helper()
	res, err := http.Post(base+device.SendCommand.Path(), simtest.ContentType(f), strings.NewReader(string(simtest.Body(f, fields))))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}
