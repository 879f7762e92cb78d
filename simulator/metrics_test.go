package simulator_test

import (
	"bufio"
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// scrape reads GET /metrics through real HTTP: each sample line's value
// by its name and labels as written ("gwsim_errors_total{code=\"x\"}").
func scrape(t *testing.T, c *simtest.Client) map[string]float64 {
	t.Helper()
	status, h, b := c.Admin(http.MethodGet, "/metrics", "")
	if status != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", status, b)
	}
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("GET /metrics: Content-Type %q", ct)
	}
	return parseMetrics(t, b)
}

func parseMetrics(t *testing.T, b []byte) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsAfterRequests: after JSON and XML requests of each kind,
// /metrics counts them by operation, format and status, errors by code,
// and observes each one's duration; the gauges say what is kept; and the
// default go_ and process_ collectors are there.
func TestMetricsAfterRequests(t *testing.T) {
	t.Parallel()
	const token = "metrics-token"
	sim := simtest.Start(t, simulator.Options{AdminToken: token})
	c := sim.Client
	dimmer := snOf("Light Dimmer")

	// Without the token: refused, and nothing is counted by the refusal.
	c.AdminToken = ""
	if status, _, b := c.Admin(http.MethodGet, "/metrics", ""); status != http.StatusUnauthorized || !strings.Contains(string(b), "unauthorized") {
		t.Fatalf("GET /metrics without the token: %d %s", status, b)
	}
	c.AdminToken = "wrong"
	if status, _, _ := c.Admin(http.MethodGet, "/metrics", ""); status != http.StatusUnauthorized {
		t.Fatalf("GET /metrics with a wrong token: %d", status)
	}
	c.AdminToken = token

	for _, f := range formats {
		c.Send(device.SendCommand, f, c.Command(dimmer, "Light Dimmer", simtest.N("dimming", "40"))).OK(t, f)
		c.Send(device.SendCommand, f, c.Command(dimmer, "Light Dimmer", simtest.N("dimming", "40"))).OK(t, f)
		c.Send(device.SendCommand, f, c.Command(dimmer, "Light Dimmer", simtest.N("dimming", "400"))).Fail(t, f, 400, device.CodeInvalidField, "dimming")
		c.Send(device.UpdateName, f, append(c.Envelope(), simtest.S(device.FieldSN, dimmer), simtest.S(device.FieldName, "Hall"))).OK(t, f)
	}
	// A request with no format, and one to no operation.
	if r := c.Post(device.SendMessage.Path(), "text/plain", []byte("x")); r.Status != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain: %s", r)
	}
	if r := c.Post("/v1/nowhere", "application/json", []byte("{}")); r.Status != http.StatusNotFound {
		t.Fatalf("/v1/nowhere: %s", r)
	}

	m := scrape(t, c)
	// The build, once, as gwsim --version says it.
	builds := 0
	for k, v := range m {
		if strings.HasPrefix(k, "gwsim_build_info{") {
			builds++
			if v != 1 || !strings.Contains(k, `go_version="go1.`) || !strings.Contains(k, `version="`) || !strings.Contains(k, `commit="`) {
				t.Errorf("%s %v", k, v)
			}
		}
	}
	if builds != 1 {
		t.Errorf("%d gwsim_build_info series", builds)
	}
	want := map[string]float64{
		`gwsim_requests_total{format="json",operation="command",status="200"}`:     2,
		`gwsim_requests_total{format="xml",operation="command",status="200"}`:      2,
		`gwsim_requests_total{format="json",operation="command",status="400"}`:     1,
		`gwsim_requests_total{format="xml",operation="command",status="400"}`:      1,
		`gwsim_requests_total{format="json",operation="update_name",status="200"}`: 1,
		`gwsim_requests_total{format="xml",operation="update_name",status="200"}`:  1,
		`gwsim_requests_total{format="none",operation="message",status="415"}`:     1,
		`gwsim_requests_total{format="json",operation="other",status="404"}`:       1,
		`gwsim_errors_total{code="invalid_field"}`:                                 2,
		`gwsim_errors_total{code="unsupported_media_type"}`:                        1,
		`gwsim_errors_total{code="not_found"}`:                                     1,
		`gwsim_errors_total{code="bad_signature"}`:                                 0,
		`gwsim_store_errors_total`:                                                 0,
		`gwsim_request_duration_seconds_count{operation="command"}`:                6,
		`gwsim_request_duration_seconds_count{operation="update_name"}`:            2,
		`gwsim_request_duration_seconds_count{operation="message"}`:                1,
		`gwsim_request_duration_seconds_count{operation="other"}`:                  1,
		`gwsim_request_duration_seconds_bucket{operation="command",le="+Inf"}`:     6,
		`gwsim_journal_entries`:                                                    10,
		`gwsim_events_clients`:                                                     0,
		`gwsim_client_report_apps`:                                                 2, // account A's key and the keyless request's client address
	}
	for k, v := range want {
		got, ok := m[k]
		if !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if _, ok := m["gwsim_redis_up"]; ok {
		t.Errorf("gwsim_redis_up on a store in memory")
	}
	if m[`gwsim_request_duration_seconds_sum{operation="command"}`] <= 0 {
		t.Errorf("no duration observed")
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := m[name]; !ok {
			t.Errorf("%s missing", name)
		}
	}
	// Scraping is no operation request: the counts stay.
	if again := scrape(t, c); again[`gwsim_requests_total{format="json",operation="command",status="200"}`] != 2 {
		t.Errorf("a scrape changed the counts: %v", again)
	}
}

// TestMetricsOff: --metrics=false serves no /metrics.
func TestMetricsOff(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, simulator.Options{NoMetrics: true})
	if status, _, b := sim.Client.Admin(http.MethodGet, "/metrics", ""); status != http.StatusNotFound {
		t.Fatalf("GET /metrics with metrics off: %d %s", status, b)
	}
	if sim.Server.Metrics() != nil {
		t.Fatal("metrics made though off")
	}
}

// TestMetricsEachServerItsOwn: two simulators in one process count
// apart (no package-level registry).
func TestMetricsEachServerItsOwn(t *testing.T) {
	t.Parallel()
	a, b := simtest.Start(t, simulator.Options{}), simtest.Start(t, simulator.Options{})
	dimmer := snOf("Light Dimmer")
	a.Client.Send(device.SendCommand, device.JSON, a.Client.Command(dimmer, "Light Dimmer", simtest.N("dimming", "40"))).OK(t, device.JSON)
	key := `gwsim_requests_total{format="json",operation="command",status="200"}`
	if got := scrape(t, a.Client)[key]; got != 1 {
		t.Errorf("a: %v", got)
	}
	if got, ok := scrape(t, b.Client)[key]; ok {
		t.Errorf("b counted a's request: %v", got)
	}
}
