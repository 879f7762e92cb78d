package scenario_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
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
		"during gateway a4c138f0e2b2 offline (from 0s): 1 request, 1 error"} {
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

// TestDashboardLayout opens the dashboard in Chromium with a full journal
// and a scenario playing: the page as served says it is loading (never an
// empty page), the first drawing replaces that, the scenario (with its
// skipped step) and the faults are in view without scrolling past the
// journal, which scrolls in its own box and folds. Any console error or
// uncaught exception fails it.
func TestDashboardLayout(t *testing.T) {
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	sc, err := scenario.Parse([]byte("name: layout\nsteps:\n  - {at: 0s, gateway_offline: a4c138f0e2b2}\n  - {at: 1m, for: 10s, redis_loss: true}\n"))
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
	for i := range 60 {
		format := []device.Format{device.JSON, device.XML}[i%2]
		c.Send(device.SendCommand, format, c.Command(target.Devices["Light Dimmer"].SN, "Light Dimmer", simtest.N("dimming", fmt.Sprint(i+1)))).OK(t, format)
	}

	// As served, before any script: a clear "loading", not an empty page.
	res, err := http.Get(sim.URL() + "/_sim/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !regexp.MustCompile(`<p id="loading"[^>]*>Loading the simulator's state`).Match(page) || strings.Contains(string(page), `id="loading" hidden`) {
		t.Errorf("the page as served does not say it is loading:\n%s", page)
	}

	ctx := simtest.Chromium(t, 1280, 800)
	ctx, cancelTime := context.WithTimeout(ctx, 30*time.Second)
	defer cancelTime()
	var mu sync.Mutex
	var consoleErrors []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				consoleErrors = append(consoleErrors, fmt.Sprintf("console.%s %v", e.Type, e.Args))
			}
		case *runtime.EventExceptionThrown:
			consoleErrors = append(consoleErrors, fmt.Sprintf("exception: %s at %s:%d", e.ExceptionDetails.Text, e.ExceptionDetails.URL, e.ExceptionDetails.LineNumber))
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				consoleErrors = append(consoleErrors, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(sim.URL()+"/_sim/"),
		chromedp.WaitVisible(chromedp.CSS(`#live.on`)),
		chromedp.WaitVisible(chromedp.CSS(`#scenario .timeline li.active`)))
	if png, serr := chromedp.Run(ctx, chromedp.CaptureScreenshot()); serr == nil {
		out := filepath.Join("..", "..", "reports", "browser")
		os.MkdirAll(out, 0o755)
		os.WriteFile(filepath.Join(out, "TestDashboardLayout.png"), png, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	type box struct {
		Loading                          bool
		Viewport, Scenario, Faults, Jour float64
		Cols                             float64
		JournalRows                      int
		JournalBoxHeight                 float64
		Skipped                          string
	}
	b, err := chromedp.Run(ctx, chromedp.Evaluate[box](`(() => {
		const top = (id) => document.getElementById(id).getBoundingClientRect().top + window.scrollY;
		return {
			Loading: !document.getElementById("loading").hidden,
			Viewport: window.innerHeight,
			// From where the simulator's part starts, below the apps'
			// report, which comes first.
			Scenario: top("scenario-section") - document.querySelector(".columns").getBoundingClientRect().top - window.scrollY,
			Cols: document.querySelector(".columns").getBoundingClientRect().top + window.scrollY,
			Faults: top("faults-section") - document.querySelector(".columns").getBoundingClientRect().top - window.scrollY,
			Jour: top("journal-section") - document.querySelector(".columns").getBoundingClientRect().top - window.scrollY,
			JournalRows: document.querySelectorAll("#journal tbody tr").length,
			JournalBoxHeight: document.querySelector(".journal-box").getBoundingClientRect().height,
			Skipped: document.getElementById("scenario").innerText,
		};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if b.Loading {
		t.Error("the loading line is still shown after the first drawing")
	}
	if b.JournalRows < 50 {
		t.Errorf("the journal has %d rows, want the 50 newest", b.JournalRows)
	}
	if b.Scenario >= b.Viewport || b.Scenario >= b.Jour {
		t.Errorf("the scenario is at %.0f px, below the window's %.0f px or the journal's %.0f px", b.Scenario, b.Viewport, b.Jour)
	}
	if b.Faults >= b.Viewport {
		t.Errorf("the faults are at %.0f px, below the window's %.0f px", b.Faults, b.Viewport)
	}
	if b.JournalBoxHeight > b.Viewport {
		t.Errorf("the journal is %.0f px high, more than the window (%.0f px): it should scroll in its box", b.JournalBoxHeight, b.Viewport)
	}
	if !strings.Contains(b.Skipped, "Redis lost (1m0s for 10s) skipped: gwsim is not on Redis") {
		t.Errorf("the scenario panel does not show the skipped step:\n%s", b.Skipped)
	}
	// The journal folds.
	folded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		document.querySelector("#journal-section > summary").click();
		return !document.getElementById("journal-section").open && !document.getElementById("journal").checkVisibility();
	})()`))
	if err != nil || !folded {
		t.Errorf("the journal did not fold: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // late console errors
	mu.Lock()
	defer mu.Unlock()
	if len(consoleErrors) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(consoleErrors, "\n"))
	}
}
