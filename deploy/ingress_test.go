package deploy

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestIngressHost: what docs/deploy.md says of a gwsim behind an Ingress
// that keeps the client's Host: /_sim/ (health included) answers 421
// misdirected_request to a host --allowed-hosts does not name, the
// operations answer any host, and with the name in --allowed-hosts (or a
// parent domain starting with a dot) /_sim/health answers 200.
func TestIngressHost(t *testing.T) {
	bin := simtest.Binary(t, "gwsim")
	get := func(url, host string) int {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	const host = "gwsim.staging.example.com"
	p := simtest.Serve(t, bin, "--allowed-hosts", "gwsim,.svc,.svc.cluster.local")
	if got := get(p.URL+"/_sim/health", host); got != http.StatusMisdirectedRequest {
		t.Errorf("/_sim/health through an Ingress host not allowed: %d, want 421", got)
	}
	if got := get(p.URL+"/_sim/health", "gwsim.gwsim.svc.cluster.local"); got != http.StatusOK {
		t.Errorf("/_sim/health by the Service's name: %d", got)
	}
	if got := get(p.URL+"/v1/nowhere", host); got == http.StatusMisdirectedRequest {
		t.Errorf("the operations' paths answer 421 to %s", host)
	}
	for _, allowed := range []string{host, ".staging.example.com"} {
		q := simtest.Serve(t, bin, "--allowed-hosts", "gwsim,"+allowed)
		if got := get(q.URL+"/_sim/health", host); got != http.StatusOK {
			t.Errorf("--allowed-hosts gwsim,%s: /_sim/health for %s answers %d", allowed, host, got)
		}
	}
}

// TestRedisFleetVerdicts: what docs/redis.md says of the fleets it
// names: gwconform run against gwsim serving the generated fleet it
// recommends for load (gwsim fleet --seed 1 --gateways 8
// --devices-per-gateway 10) says PARTIAL and exits 1, for the reasons
// the page gives; on fixtures/fleet-template.yaml and the demo fleet it
// says PASS and exits 0.
func TestRedisFleetVerdicts(t *testing.T) {
	simtest.Heavy(t)
	gwsim, gwconform := simtest.Binary(t, "gwsim"), simtest.Binary(t, "gwconform")
	dir := t.TempDir()
	generated := filepath.Join(dir, "fleet.yaml")
	if out, err := exec.Command(gwsim, "fleet", "--seed", "1", "--gateways", "8", "--devices-per-gateway", "10", "--out", generated).CombinedOutput(); err != nil {
		t.Fatalf("gwsim fleet: %v %s", err, out)
	}
	for _, c := range []struct {
		fleet, verdict string
		exit           int
		because        []string
	}{
		{generated, "PARTIAL", 1, []string{"no MUST check failed", "5 parts of the interface not covered", "single account", "no Appliance Module Plus on the tested gateway"}},
		{filepath.Join(root, "fixtures/fleet-template.yaml"), "PASS", 0, nil},
		{filepath.Join(root, "fixtures/demo-fleet.yaml"), "PASS", 0, nil},
	} {
		p := simtest.Serve(t, gwsim, "--fleet", c.fleet)
		cmd := exec.Command(gwconform, "run", "--target", p.URL, "--fleet", c.fleet, "--report-dir", t.TempDir())
		out, err := cmd.CombinedOutput()
		exit := 0
		if ee, ok := err.(*exec.ExitError); ok {
			exit = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if exit != c.exit || !strings.Contains(string(out), ": "+c.verdict+" (") {
			t.Errorf("%s: exit %d, want %d and %s:\n%s", filepath.Base(c.fleet), exit, c.exit, c.verdict, out)
		}
		for _, why := range c.because {
			if !strings.Contains(string(out), why) {
				t.Errorf("%s: the run does not say %q:\n%s", filepath.Base(c.fleet), why, out)
			}
		}
		p.Kill()
	}
}
