package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestScenarioRedisLoss: gwsim serve --store --scenario with a redis_loss
// step pauses the real Redis: requests get 503 storage_unavailable with
// Retry-After until the scenario is stopped through the admin API.
func TestScenarioRedisLoss(t *testing.T) {
	r := simtest.StartRedis(t, false)
	file := filepath.Join(t.TempDir(), "loss.yaml")
	os.WriteFile(file, []byte("name: redis loss\nsteps:\n  - {at: 0s, for: 1m, redis_loss: true}\n"), 0o644)
	url, banner, _, _ := serve(t, "--store", r.URL(), "--scenario", file)
	if !strings.Contains(banner.String(), "scenario: redis loss, 1 step over 1m0s") {
		t.Errorf("banner: %s", banner.String())
	}
	target, _ := fleet.Demo().Target()
	c := simtest.NewClient(t, url)
	c.APIKey, c.Secret, c.Account, c.MAC = target.Key.Key, target.Key.Secret, target.AccountID, target.MAC
	dimmer := target.Devices["Light Dimmer"].SN
	res := c.Send(device.SendCommand, device.JSON, c.Command(dimmer, "Light Dimmer", simtest.N("dimming", "41")))
	res.Fail(t, device.JSON, http.StatusServiceUnavailable, device.CodeStorageUnavailable, "")
	if res.Header.Get("Retry-After") == "" {
		t.Errorf("no Retry-After: %v", res.Header)
	}
	c.AdminJSON(http.MethodPost, "/_sim/scenario/stop", "", nil)
	c.Send(device.SendCommand, device.XML, c.Command(dimmer, "Light Dimmer", simtest.N("dimming", "42"))).OK(t, device.XML)
}

func TestServeScenarioBadFile(t *testing.T) {
	for body, want := range map[string]string{
		"steps: [{at: 1s, gateway_offline: nope}]\n": "steps[0]",
		// Names the fleet does not have: refused at start, named.
		"steps: [{at: 1s, gateway_offline: 0000000000ff}]\n":                                                                        "steps[0].gateway_offline: the fleet has no gateway 0000000000ff",
		"steps: [{at: 1s, latency: 1s}, {at: 1s, device_unreachable: {mac: a4c138f0e2b1, sn: 0123456789abcdef0123456789abcd09}}]\n": "steps[1].device_unreachable.sn: gateway a4c138f0e2b1 has no device 0123456789abcdef0123456789abcd09",
		"steps: [{at: 1s, error_rate: {operation: delete, rate: 0.5}}]\n":                                                           "delete is not an operation",
	} {
		file := filepath.Join(t.TempDir(), "bad.yaml")
		os.WriteFile(file, []byte(body), 0o644)
		if code, _, errs := run("serve", "--addr", "127.0.0.1:0", "--scenario", file); code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d: %s, want %q", body, code, errs, want)
		}
	}
}

// TestScenarioSkippedStepInMemory: a redis_loss step on the memory store
// is announced at start, shown as skipped, never active, and never
// counted in the client report.
func TestScenarioSkippedStepInMemory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "loss.yaml")
	os.WriteFile(file, []byte("name: loss in memory\nsteps:\n  - {at: 0s, for: 1m, redis_loss: true}\n  - {at: 0s, for: 1m, latency: 1ms}\n"), 0o644)
	url, banner, _, _ := serve(t, "--scenario", file)
	if !strings.Contains(banner.String(), "scenario: loss in memory, 2 steps over 1m0s") || !strings.Contains(banner.String(), "Redis lost (0s for 1m0s): skipped, gwsim is not on Redis") {
		t.Errorf("banner does not announce the skipped step:\n%s", banner.String())
	}
	target, _ := fleet.Demo().Target()
	c := simtest.NewClient(t, url)
	c.APIKey, c.Secret, c.Account, c.MAC = target.Key.Key, target.Key.Secret, target.AccountID, target.MAC
	dimmer := target.Devices["Light Dimmer"].SN
	c.Send(device.SendCommand, device.JSON, c.Command(dimmer, "Light Dimmer", simtest.N("dimming", "41"))).OK(t, device.JSON)
	var st struct {
		Steps []struct {
			Label, Skipped string
			Active         bool
		}
	}
	c.AdminJSON(http.MethodGet, "/_sim/scenario", "", &st)
	if len(st.Steps) != 2 || st.Steps[0].Active || !strings.Contains(st.Steps[0].Skipped, "not on Redis") || !st.Steps[1].Active || st.Steps[1].Skipped != "" {
		t.Errorf("status: %+v", st)
	}
	var rep struct {
		Clients []struct {
			Phases []struct {
				Phase    string
				Requests int
			}
		}
	}
	c.AdminJSON(http.MethodGet, "/_sim/clients", "", &rep)
	if len(rep.Clients) != 1 || len(rep.Clients[0].Phases) != 1 || strings.Contains(rep.Clients[0].Phases[0].Phase, "Redis") || rep.Clients[0].Phases[0].Requests != 1 {
		t.Errorf("phases counted: %+v", rep)
	}
	// A restart is a new run: the counts start again.
	c.AdminJSON(http.MethodPost, "/_sim/scenario/restart", "", nil)
	rep.Clients = nil
	c.AdminJSON(http.MethodGet, "/_sim/clients", "", &rep)
	if len(rep.Clients) != 0 {
		t.Errorf("the client report after a restart still counts the previous run: %+v", rep)
	}
	c.Send(device.SendCommand, device.XML, c.Command(dimmer, "Light Dimmer", simtest.N("dimming", "42"))).OK(t, device.XML)
	c.AdminJSON(http.MethodGet, "/_sim/clients", "", &rep)
	if len(rep.Clients) != 1 || len(rep.Clients[0].Phases) != 1 || rep.Clients[0].Phases[0].Requests != 1 {
		t.Errorf("phases after the restart: %+v", rep)
	}
}
