package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/proxy"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestLivePageShowsViolations opens the proxy's live page in Chromium, as
// an app developer behind the proxy would: it signs in with the admin
// token, and the page shows, live, the app's invalid request and the
// faulty service's answers that break the interface (a 200 to a request
// the rules refuse, and a wrong error code), for requests sent after the
// page was opened.
func TestLivePageShowsViolations(t *testing.T) {
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	wrongCode := false
	faulty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if wrongCode {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"status":"error","error":{"code":"invalid_field","field":"io","message":"no"}}`)
			return
		}
		io.WriteString(w, `{"status":"success"}`)
	}))
	t.Cleanup(faulty.Close)
	p := start(t, proxy.Config{Upstream: faulty.URL, Fleet: fleet.Demo(), AdminToken: "page-token"})
	target, _ := fleet.Demo().Target()
	am := target.Devices["Appliance Module"].SN
	app := demoClient(t, p.URL())

	ctx := simtest.Chromium(t, 1400, 1000)
	ctx, cancelTime := context.WithTimeout(ctx, 40*time.Second)
	defer cancelTime()

	shot := func() {
		if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			out := filepath.Join("..", "..", "reports", "browser")
			os.MkdirAll(out, 0o755)
			os.WriteFile(filepath.Join(out, "TestLivePageShowsViolations.png"), png, 0o644)
		}
	}
	// Signed out, the page asks for the token and shows no data.
	if err := chromedp.Do(ctx, chromedp.Navigate(p.URL()+"/_sim/"), chromedp.WaitVisible(chromedp.CSS("#signin-form"))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), "page-token"), chromedp.Click(chromedp.CSS("#signin-form button")),
		chromedp.WaitVisible(chromedp.CSS("#main")), chromedp.WaitVisible(chromedp.CSS("#journal tbody"))); err != nil {
		shot()
		t.Fatal(err)
	}
	// Now the app sends, with the page open: Relay2 to an Appliance
	// Module (accepted by the faulty service), then the same refused
	// with the wrong code.
	for _, f := range []device.Format{device.JSON, device.XML} {
		wrongCode = false
		app.Post(device.SendCommand.Path(), simtest.ContentType(f), simtest.Body(f, app.Command(am, "Appliance Module", simtest.S("io", "On"), simtest.S("Relay2", "On"))))
	}
	wrongCode = true
	app.Post(device.SendCommand.Path(), simtest.ContentType(device.JSON), simtest.Body(device.JSON, app.Command(am, "Appliance Module", simtest.S("io", "Off"), simtest.S("Relay2", "Off"))))

	err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#journal tbody tr.bad:nth-child(3)")),
		chromedp.WaitVisible(chromedp.CSS("#service .card.bad")), chromedp.WaitVisible(chromedp.CSS("#clients .card.bad")))
	shot()
	if err != nil {
		t.Fatal(err)
	}
	text := func(sel string) string {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return s
	}
	journal, service, apps, summary, live := text("#journal"), text("#service"), text("#clients"), text("#summary"), text("#live")
	for _, want := range []string{"app: unexpected_field (SHOULD): Relay2 is not a field of this request",
		"service: refuses_invalid", "service: error_code (SHOULD): refused with invalid_field a request the rule table refuses with unexpected_field", "xml", "json", "demo…"} {
		if !strings.Contains(journal, want) {
			t.Errorf("the exchanges lack %q:\n%s", want, journal)
		}
	}
	for _, want := range []string{"✗ service refuses requests that break the interface's rules", "✗ service refuses a broken request with the rule's error code",
		"✗ service answers JSON or XML, in the request's format", "answer 200 is json to a request whose body is xml", "✓ service never answers 5xx to bad input", faulty.URL} {
		if !strings.Contains(service, want) {
			t.Errorf("the service panel lacks %q:\n%s", want, service)
		}
	}
	if !strings.Contains(apps, "✗ app sent only valid requests") || !strings.Contains(summary, "rules broken") || live != "live" {
		t.Errorf("apps %q, summary %q, live %q", apps, summary, live)
	}
	for _, text := range []string{journal, service, apps} {
		if strings.Contains(text, target.Key.Key) || strings.Contains(text, target.Key.Secret) {
			t.Errorf("the page shows a credential")
		}
	}
}

// TestLivePageFitsEachWidth opens the proxy's live page at 1400 and at
// 390 px (a phone): at each width the page is as wide as the window (no
// table cut off, nothing to scroll sideways), and an error answer that
// breaks no rule says so rather than show a bare status. Screenshots go
// to the system's temporary directory (proxy-1400.png, proxy-390.png).
func TestLivePageFitsEachWidth(t *testing.T) {
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	up := simtest.Start(t, simulator.Options{Fleet: fleet.Demo()})
	p := start(t, proxy.Config{Upstream: up.URL(), Fleet: fleet.Demo()})
	target, _ := fleet.Demo().Target()
	app := demoClient(t, p.URL())
	dimmer := target.Devices["Light Dimmer"].SN
	for _, f := range []device.Format{device.JSON, device.XML} {
		app.Send(device.SendCommand, f, app.Command(dimmer, "Light Dimmer", simtest.N("dimming", strconv.Itoa(30+int(f)))))
		app.Send(device.SendCommand, f, app.Command(strings.Repeat("e", 32), "Light Dimmer", simtest.N("dimming", "31")))
	}
	for _, width := range []int{1400, 390} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			ctx := simtest.Chromium(t, width, 900)
			ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
			defer cancel()
			err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(p.URL()+"/_sim/"),
				chromedp.WaitVisible(chromedp.CSS("#journal tbody tr.refused")), chromedp.WaitVisible(chromedp.CSS("#clients .card")))
			if png, serr := chromedp.Run(ctx, chromedp.FullScreenshot(100)); serr == nil {
				os.WriteFile(filepath.Join(os.TempDir(), "proxy-"+strconv.Itoa(width)+".png"), png, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			wide, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`Math.max(document.documentElement.scrollWidth, document.getElementById("journal").getBoundingClientRect().right)`))
			if err != nil {
				t.Fatal(err)
			}
			if wide > float64(width) {
				t.Errorf("at %d px the page is %.0f px wide: something is cut off or scrolls sideways", width, wide)
			}
			row, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#journal tbody tr.refused")))
			if !strings.Contains(row, "404") || !strings.Contains(row, "no rule broken") {
				t.Errorf("a 404 that breaks no rule reads %q", row)
			}
		})
	}
}
