package deploy

import (
	"net/http"
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
