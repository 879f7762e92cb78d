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
	if !strings.Contains(banner.String(), "scenario: redis loss, 1 steps over 1m0s") {
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
	file := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(file, []byte("steps: [{at: 1s, gateway_offline: nope}]\n"), 0o644)
	if code, _, errs := run("serve", "--addr", "127.0.0.1:0", "--scenario", file); code != 2 || !strings.Contains(errs, "steps[0]") {
		t.Errorf("exit %d: %s", code, errs)
	}
}
