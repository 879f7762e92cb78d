package scenario_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/scenario"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestDashboardShowsAppsAndScenario opens the dashboard in Chromium: the
// "Apps" panel names the client (masked) and the judgement its request
// broke, and the scenario panel shows the timeline with the step in force.
func TestDashboardShowsAppsAndScenario(t *testing.T) {
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	sc, err := scenario.Parse([]byte("name: dashboard demo\nsteps:\n  - {at: 0s, gateway_offline: a4c138f0e2b2}\n  - {at: 1h, for: 1m, latency: 1s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := scenario.NewPlayer(sc, nil)
	sim := simtest.Start(t, simulator.Options{Fleet: fleet.Demo(), ClientPhases: p.Phases, Admin: p.Routes()})
	t.Cleanup(func() { p.Stop() })
	p.Attach(sim.Server)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	target, _ := fleet.Demo().Target()
	c := simtest.NewClient(t, sim.URL())
	c.APIKey, c.Secret, c.Account, c.MAC = target.Key.Key, target.Key.Secret, target.AccountID, target.MAC
	c.Send(device.SendCommand, device.JSON, c.Command(target.Devices["Appliance Module"].SN, "Appliance Module", simtest.S("io", "On"), simtest.S("Relay2", "On")))

	ctx := simtest.Chromium(t, 1400, 1000)
	ctx, cancelTime := context.WithTimeout(ctx, 30*time.Second)
	defer cancelTime()

	err = chromedp.Do(ctx,
		chromedp.Navigate(sim.URL()+"/_sim/"),
		chromedp.WaitVisible(chromedp.CSS("#clients .client")),
		chromedp.WaitVisible(chromedp.CSS("#scenario .timeline li.active")))
	if png, serr := chromedp.Run(ctx, chromedp.FullScreenshot(100)); serr == nil {
		out := filepath.Join("..", "..", "reports", "browser")
		os.MkdirAll(out, 0o755)
		os.WriteFile(filepath.Join(out, "TestDashboardShowsAppsAndScenario.png"), png, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	apps, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#clients")))
	timeline, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#scenario")))
	for _, want := range []string{"demo…", "✗ app sent no fields that belong to another device type", "Relay2 (a field of Appliance Module Plus)", "✓ app waited out Retry-After",
		"during gateway a4c138f0e2b2 offline (from 0s): 1 requests, 1 errors"} {
		if !strings.Contains(apps, want) {
			t.Errorf("the Apps panel lacks %q:\n%s", want, apps)
		}
	}
	if strings.Contains(apps, target.Key.Key) {
		t.Errorf("the Apps panel shows the whole api_key")
	}
	for _, want := range []string{"dashboard demo", "running, at ", "gateway a4c138f0e2b2 offline (from 0s)", "latency 1s (1h0m0s for 1m0s)"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("the scenario panel lacks %q:\n%s", want, timeline)
		}
	}
}
