package proxy_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/proxy"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// brokenTokens finds, under the elements of a selector, every code
// (device_not_found), time (10:09:59), format (json, xml) and operation
// (update_name) the page shows, and returns how many it measured and those
// drawn on more than one line.
func brokenTokens(selector string) string {
	return `(() => {
  const re = /[a-z]+(?:_[a-z]+)+|\d\d:\d\d:\d\d|\b(?:json|xml)\b/g;
  const out = {measured: 0, broken: []};
  for (const root of document.querySelectorAll(` + strconv.Quote(selector) + `)) {
    const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n; (n = w.nextNode()); ) {
      for (const m of n.data.matchAll(re)) {
        const r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        const rects = [...r.getClientRects()].filter((x) => x.width > 0);
        if (!rects.length) continue;
        out.measured++;
        if (new Set(rects.map((x) => Math.round(x.top))).size > 1) out.broken.push(m[0]);
      }
    }
  }
  return out;
})()`
}

type measured struct {
	Measured int      `json:"measured"`
	Broken   []string `json:"broken"`
}

// TestLivePageTablesReadWhole: at 1280 and at 390 px the proxy's live
// page draws every time, operation, format and status code of its
// journal on one line (measured in Chromium, token by token), the
// violations column wrapping instead, and the page does not scroll
// sideways.
func TestLivePageTablesReadWhole(t *testing.T) {
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	up := simtest.Start(t, simulator.Options{Fleet: fleet.Demo()})
	p := start(t, proxy.Config{Upstream: up.URL(), Fleet: fleet.Demo()})
	app := demoClient(t, p.URL())
	target, _ := fleet.Demo().Target()
	am := target.Devices["Appliance Module"].SN
	for _, f := range []device.Format{device.JSON, device.XML} {
		app.Send(device.UpdateName, f, append(app.Envelope(), simtest.S("sn", am), simtest.S("name", "Coffee "+f.String()))).OK(t, f)
		app.Send(device.SendCommand, f, app.Command("0123456789abcdef0123456789abcdff", "Appliance Module", simtest.S("io", "On"))).
			Fail(t, f, http.StatusNotFound, device.CodeDeviceNotFound, "sn")
		app.Post(device.SendCommand.Path(), simtest.ContentType(f), simtest.Body(f, app.Command(am, "Appliance Module", simtest.S("io", "On"), simtest.S("Relay2", "On"))))
	}
	for _, width := range []int{1280, 390} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			ctx := simtest.Chromium(t, width, 900)
			ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
			defer cancel()
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(p.URL()+"/_sim/"),
				chromedp.WaitVisible(chromedp.CSS("#journal tbody tr:nth-child(6)"))); err != nil {
				t.Fatal(err)
			}
			got, err := chromedp.Run(ctx, chromedp.Evaluate[measured](brokenTokens("#journal tbody")))
			if err != nil {
				t.Fatal(err)
			}
			if got.Measured < 8 {
				t.Errorf("only %d times, operations, formats and codes measured", got.Measured)
			}
			if len(got.Broken) > 0 {
				t.Errorf("at %d px the journal breaks %v inside (of %d measured)", width, got.Broken, got.Measured)
			}
			wide, _ := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.documentElement.scrollWidth`))
			if wide > float64(width) {
				t.Errorf("at %d px the page is %.0f px wide", width, wide)
			}
		})
	}
}
