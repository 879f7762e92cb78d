package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// The four ways a verdict used to say more than was tested, end to end.

// TestDimmerOnlyFleetIsPartial: a fleet with only a Light Dimmer passes
// every check it can run, but the run is PARTIAL, names the device types it
// did not cover on the console and in report.json, and exits 1 unless
// --allow-partial.
func TestDimmerOnlyFleetIsPartial(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(fleet, []byte(`sign: md5
accounts:
  - myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2d
    api_keys: [{api_key: demo-key, secret: demo-secret}]
    gateways:
      - mac: a4c138f0e2b1
        devices:
          - {sn: 0123456789abcdef0123456789abcd06, type: Light Dimmer, name: Hall, state: {dimming: 40}}
`), 0o644)
	r := gwconform(t, "--fleet", fleet)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	for _, want := range []string{"PARTIAL", "Not covered:", "device type Thermostat", "device type Appliance Module Plus", "cross-account isolation not covered", "cross-gateway isolation not covered"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the console does not say %q:\n%s", want, tail(r.stdout))
		}
	}
	if doc := reports(t, r.dir); doc.Verdict != "PARTIAL" || len(failed(doc)) != 0 {
		t.Errorf("report.json: verdict %s, failed %v", doc.Verdict, failed(doc))
	}
	for _, f := range []string{"report.json", "junit.xml", "report.html"} {
		b, _ := os.ReadFile(filepath.Join(r.dir, f))
		if !strings.Contains(string(b), "Thermostat") || !strings.Contains(string(b), "PARTIAL") {
			t.Errorf("%s does not name what was not covered", f)
		}
	}
	if r := gwconform(t, "--fleet", fleet, "--allow-partial"); r.code != 0 {
		t.Errorf("--allow-partial: exit %d\n%s", r.code, tail(r.stdout))
	}
}

// TestFocusOnNothingIsPartial: a run that ran no check exits 1.
func TestFocusOnNothingIsPartial(t *testing.T) {
	t.Parallel()
	r := gwconform(t, "--ginkgo.focus=nomatch")
	if r.code != 1 || !strings.Contains(r.stdout, "PARTIAL") || !strings.Contains(r.stdout, "no check ran") {
		t.Fatalf("exit %d\n%s", r.code, tail(r.stdout))
	}
}

// TestPreflightStopsOnAStaticFileServer: a server that does not speak the
// interface gets exit 2 and one line, not a thousand verdicts.
func TestPreflightStopsOnAStaticFileServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<html><body>hello</body></html>"), 0o644)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	r := gwconform(t, "--target", srv.URL)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	line := strings.TrimSpace(r.stderr)
	if strings.Count(line, "\n") != 0 || !strings.Contains(line, "does not speak this interface") || !strings.Contains(line, "HTTP 404") {
		t.Fatalf("want one line saying why, got:\n%s", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "report.json")); err == nil {
		t.Error("a report was written for a run that checked nothing")
	}
}

// TestAdminTokenSkipReasonIsTrue: against a gwsim whose admin API wants a
// token, a run without it says the sim checks need --admin-token (and is
// PARTIAL), and a run with it runs them.
func TestAdminTokenSkipReasonIsTrue(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	url := startGwsim(t, "--admin-token", "s3cret-token-0a1b2c3d4e5f67890abcdef")
	r := gwconform(t, "--target", url)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (PARTIAL)\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	if !strings.Contains(r.stdout, "needs --admin-token") || strings.Contains(r.stdout, "has no gwsim admin API") {
		t.Fatalf("the skip reason is not true:\n%s", tail(r.stdout))
	}
	if strings.Contains(r.stdout+r.stderr, "s3cret-token-0a1b2c3d4e5f67890abcdef") {
		t.Fatal("the token appears in the output")
	}
	r = gwconform(t, "--target", url, "--admin-token", "s3cret-token-0a1b2c3d4e5f67890abcdef")
	if r.code != 0 {
		t.Fatalf("with the token: exit %d\n%s", r.code, tail(r.stdout))
	}
}
