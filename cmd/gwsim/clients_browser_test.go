package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestClientsPageInChromium: the page `gwsim clients --format html`
// writes, after an app sent good and bad requests in JSON and XML, opens
// in Chromium without a console error, and draws the client's judgements
// (the breach named), what it exercised in both formats and the errors it
// received. The screenshot is saved under reports/browser/.
func TestClientsPageInChromium(t *testing.T) {
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	url, _, _, _ := serve(t, "--admin-token", testToken)
	target, err := fleet.Demo().Target()
	if err != nil {
		t.Fatal(err)
	}
	c := simtest.NewClient(t, url)
	c.APIKey, c.Secret, c.Account, c.MAC = target.Key.Key, target.Key.Secret, target.AccountID, target.MAC
	am := target.Devices["Appliance Module"].SN
	for _, format := range []device.Format{device.JSON, device.XML} {
		c.Send(device.SendCommand, format, c.Command(am, "Appliance Module", simtest.S("io", "On"))).OK(t, format)
		c.Send(device.SendCommand, format, c.Command(am, "Appliance Module", simtest.S("io", "On"), simtest.S("Relay2", "Off"))).
			Fail(t, format, http.StatusBadRequest, device.CodeUnexpectedField, "Relay2")
	}
	code, page, errs := run("clients", "--target", url, "--admin-token", testToken, "--format", "html")
	if code != 0 {
		t.Fatalf("gwsim clients --format html: exit %d: %s", code, errs)
	}
	file := filepath.Join(t.TempDir(), "clients.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx := simtest.Chromium(t, 1200, 900)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	logged := simtest.ConsoleErrors(ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file), chromedp.WaitVisible(chromedp.CSS("body h1"))); err != nil {
		t.Fatalf("the page did not open: %v", err)
	}
	text := func(expr string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return s
	}
	// Each table drawn with rows under its header, the cells joined by |.
	rows := text(`[...document.querySelectorAll('section table tr')].filter(r => r.querySelector('td')).map(r => [...r.children].map(c => c.textContent.trim()).join("|")).join("\n")`)
	headers := text(`[...document.querySelectorAll('section table tr th:first-child')].map(h => h.textContent).join("|")`)
	for _, h := range []string{"judgement", "exercised", "error received"} {
		if !strings.Contains(headers, h) {
			t.Errorf("no table %q: tables %q", h, headers)
		}
	}
	if n := text(`String([...document.querySelectorAll('section table')].filter(t => !t.querySelector('td')).length)`); n != "0" {
		t.Errorf("%s tables without a row", n)
	}
	for _, want := range []string{"|FAIL ×2|", "command Appliance Module|json|2|1", "command Appliance Module|xml|2|1", "unexpected_field|400|2|"} {
		if !strings.Contains(rows, want) {
			t.Errorf("no row with %q in:\n%s", want, rows)
		}
	}
	if !strings.Contains(rows, "Relay2") {
		t.Errorf("the breach does not name Relay2:\n%s", rows)
	}
	if strings.Contains(page, target.Key.Secret) {
		t.Error("the page shows the app's secret")
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err == nil {
		out := filepath.Join("..", "..", "reports", "browser")
		os.MkdirAll(out, 0o755)
		os.WriteFile(filepath.Join(out, t.Name()+".png"), png, 0o644)
	}
	if e := logged(); len(e) > 0 {
		t.Errorf("the page logged errors: %q", e)
	}
}
