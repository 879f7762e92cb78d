package simulator_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// recording answers a dimming of 77 as a recording would (gwsim serve
// --replay): the recorded answer, marked X-Gwsim-Replayed, in the
// simulator's place.
func recording(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"dimming":"77"`)) && !bytes.Contains(body, []byte(`<dimming>77</dimming>`)) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Gwsim-Replayed", "true")
		io.WriteString(w, `{"status":"success"}`)
	})
}

// TestDashboardIsTheAppDevelopersWindow opens the dashboard at 1400 and
// at 390 px (a phone) after an app's requests, in JSON and XML: the Apps
// report comes first; replay mode shows in the header and the replayed
// answer is marked in the journal; the journal names devices by name,
// filters by device, code and app, and a row opens to its request and
// answer with the api_key masked and no sign; nothing is cut off or
// scrolls sideways. Screenshots go to the system's temporary directory
// (dash-1400.png, dash-390.png).
func TestDashboardIsTheAppDevelopersWindow(t *testing.T) {
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	sim := simtest.Start(t, simulator.Options{WrapOperations: recording,
		ReplayNote: "replay mode: 1 recorded answer from testdata answers the request it recorded; everything else is simulated"})
	c := sim.Client
	dimmer := simtest.SN('a', 5)
	for _, f := range []device.Format{device.JSON, device.XML} {
		c.Send(device.SendCommand, f, c.Command(dimmer, "Light Dimmer", simtest.S("dimming", strconv.Itoa(40+int(f))))).OK(t, f)
	}
	c.Send(device.UpdateName, device.XML, append(c.Envelope(), simtest.S("sn", simtest.SN('a', 0)), simtest.S("name", "Hall lamp"))).OK(t, device.XML)
	c.Send(device.SendCommand, device.JSON, c.Command(dimmer, "Light Dimmer", simtest.S("dimming", "0"))).
		Fail(t, device.JSON, http.StatusBadRequest, device.CodeInvalidField, "dimming")
	c.Send(device.SendCommand, device.XML, c.Command(strings.Repeat("e", 32), "Light Dimmer", simtest.S("dimming", "5"))).
		Fail(t, device.XML, http.StatusNotFound, device.CodeDeviceNotFound, "sn")
	r := c.Send(device.SendCommand, device.JSON, c.Command(dimmer, "Light Dimmer", simtest.S("dimming", "77")))
	if r.Header.Get("X-Gwsim-Replayed") != "true" {
		t.Fatalf("the recording did not answer: %v", r.Header)
	}
	sign := c.Envelope()[2].Val

	for _, width := range []int{1400, 390} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			ctx := simtest.Chromium(t, width, 900)
			ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
			defer cancel()
			errs := simtest.ConsoleErrors(ctx)
			shot := func() {
				if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
					os.WriteFile(filepath.Join(os.TempDir(), "dash-"+strconv.Itoa(width)+".png"), png, 0o644)
				}
			}
			eval := func(js string) bool {
				t.Helper()
				ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
				if err != nil {
					t.Fatalf("%s: %v", js, err)
				}
				return ok
			}
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(sim.URL()+"/_sim/"),
				chromedp.WaitVisible(chromedp.CSS("#clients-section")), chromedp.WaitVisible(chromedp.CSS(`#journal tr[data-replayed="true"]`)),
				chromedp.WaitVisible(chromedp.CSS("#replay"))); err != nil {
				shot()
				t.Fatal(err)
			}
			if !eval(`document.getElementById("clients-section").getBoundingClientRect().top < document.getElementById("devices-section").getBoundingClientRect().top`) {
				t.Error("the Apps report is not first")
			}
			if s, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#clients"))); !strings.Contains(s, "never sent: operations message") || !strings.Contains(s, "never met: 401 stale_timestamp") {
				t.Errorf("the Apps report does not say what the app never tried: %q", s)
			}
			if s, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#replay"))); s != "REPLAY" {
				t.Errorf("replay mode reads %q in the header", s)
			}
			row, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#journal tr[data-replayed="true"]`)))
			if !strings.Contains(row, "replayed") || !strings.Contains(row, "Light Dimmer a") || !strings.Contains(row, "key-…") {
				t.Errorf("the replayed row reads %q: want it marked, with the device's name and the app", row)
			}
			// Filter by code: only the 404 is left; then all again.
			if !eval(`(() => { const s = document.getElementById("jf-code"); s.value = "404 device_not_found"; s.dispatchEvent(new Event("change")); return document.querySelectorAll("#journal tbody tr.openable").length === 1; })()`) {
				t.Error("filtering by code 404 device_not_found does not leave its one row")
			}
			eval(`(() => { const s = document.getElementById("jf-code"); s.value = ""; s.dispatchEvent(new Event("change")); return true; })()`)
			if !eval(`(() => { const s = document.getElementById("jf-device"); const o = [...s.options].find((o) => o.textContent === "Hall lamp"); if (!o) return false; s.value = o.value; s.dispatchEvent(new Event("change")); const n = document.querySelectorAll("#journal tbody tr.openable").length; s.value = ""; s.dispatchEvent(new Event("change")); return n === 1; })()`) {
				t.Error("filtering by the device named Hall lamp does not leave its one row")
			}
			if !eval(`[...document.getElementById("jf-app").options].some((o) => o.value === "key-…")`) {
				t.Error("the app filter does not offer the app key-…")
			}
			// Open the refused row: its request and answer, masked.
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#journal tr.openable[data-code="invalid_field"]`)),
				chromedp.WaitVisible(chromedp.CSS(`#journal .exchange-row pre.x-request`))); err != nil {
				shot()
				t.Fatal(err)
			}
			x, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#journal .exchange-row`)))
			if !strings.Contains(x, "<SIGNATURE>") || !strings.Contains(x, `"api_key":"key-…"`) || !strings.Contains(x, "invalid_field") ||
				strings.Contains(x, sign) || strings.Contains(x, simtest.SecretA) || strings.Contains(x, `"`+simtest.KeyA+`"`) {
				t.Errorf("the opened row: %q", x)
			}
			wide, _ := chromedp.Run(ctx, chromedp.Evaluate[float64](`Math.max(document.documentElement.scrollWidth, document.getElementById("journal").getBoundingClientRect().right)`))
			if wide > float64(width) {
				t.Errorf("at %d px the page is %.0f px wide", width, wide)
			}
			shot()
			if png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#journal-section"))); err == nil {
				os.WriteFile(filepath.Join(os.TempDir(), "dash-"+strconv.Itoa(width)+"-journal.png"), png, 0o644)
			}
			for _, e := range errs() {
				// GET /_sim/scenario answers 404 when no scenario plays,
				// which the browser logs; anything else is a fault.
				if !strings.Contains(e, "404 (Not Found)") {
					t.Errorf("console error: %s", e)
				}
			}
		})
	}
}
