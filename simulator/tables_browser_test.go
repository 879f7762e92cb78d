package simulator_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// brokenTokens is a script that finds, under the elements of a selector,
// every code (device_not_found), time (10:09:59), format (json, xml),
// operation (update_name) and serial number or mac the page shows, and
// returns how many it measured and those drawn on more than one line.
func brokenTokens(selector string) string {
	return `(() => {
  const re = /[a-z]+(?:_[a-z]+)+|\d\d:\d\d:\d\d|\b(?:json|xml)\b|\b[0-9a-f]{32}\b|\b[0-9a-f]{12}\b/g;
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

type tokens struct {
	Measured int      `json:"measured"`
	Broken   []string `json:"broken"`
}

// TestDashboardTablesReadWhole: at 1280 and at 390 px the dashboard's
// journal and device cards draw every code, time, format and serial
// number on one line (measured in Chromium, token by token), the page
// does not scroll sideways, and the journal's device filter offers the
// gateway a message went to, never "…/undefined".
func TestDashboardTablesReadWhole(t *testing.T) {
	simtest.NeedTool(t, simtest.ChromiumPath, "apt-get install -y chromium")
	sim := simtest.Start(t, simulator.Options{})
	c := sim.Client
	dimmer := simtest.SN('a', 5)
	for _, f := range []device.Format{device.JSON, device.XML} {
		c.Send(device.SendCommand, f, c.Command(dimmer, "Light Dimmer", simtest.S("dimming", strconv.Itoa(40+int(f))))).OK(t, f)
		c.Send(device.SendCommand, f, c.Command(strings.Repeat("e", 32), "Light Dimmer", simtest.S("dimming", "5"))).
			Fail(t, f, http.StatusNotFound, device.CodeDeviceNotFound, "sn")
		c.Send(device.SendMessage, f, append(c.Envelope(), simtest.S("message_type", "message"), simtest.S("message_value", "brightness=80"))).OK(t, f)
		c.Send(device.UpdateName, f, append(c.Envelope(), simtest.S("sn", simtest.SN('a', 0)), simtest.S("name", "Hall lamp "+f.String()))).OK(t, f)
	}
	bad := *c
	bad.Secret = "wrong"
	bad.Send(device.SendCommand, device.JSON, bad.Command(dimmer, "Light Dimmer", simtest.S("dimming", "9"))).
		Fail(t, device.JSON, http.StatusUnauthorized, device.CodeBadSignature, "sign")

	for _, width := range []int{1280, 390} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			ctx := simtest.Chromium(t, width, 900)
			ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
			defer cancel()
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(sim.URL()+"/_sim/"),
				chromedp.WaitVisible(chromedp.CSS(`#journal tr[data-code="bad_signature"]`)), chromedp.WaitVisible(chromedp.CSS(".device .sn"))); err != nil {
				t.Fatal(err)
			}
			for _, sel := range []string{"#journal tbody", ".device .sn"} {
				got, err := chromedp.Run(ctx, chromedp.Evaluate[tokens](brokenTokens(sel)))
				if err != nil {
					t.Fatal(err)
				}
				if got.Measured < 8 {
					t.Errorf("%s: only %d codes, times, formats and serial numbers measured", sel, got.Measured)
				}
				if len(got.Broken) > 0 {
					t.Errorf("at %d px, %s breaks %v inside (of %d measured)", width, sel, got.Broken, got.Measured)
				}
			}
			wide, _ := chromedp.Run(ctx, chromedp.Evaluate[float64](`Math.max(document.documentElement.scrollWidth, document.getElementById("journal").getBoundingClientRect().right)`))
			if wide > float64(width) {
				t.Errorf("at %d px the page is %.0f px wide", width, wide)
			}
			opts, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.getElementById("jf-device").options].map((o) => o.value)`))
			if !slicesContain(opts, simtest.MACA) || strings.Contains(strings.Join(opts, " "), "undefined") {
				t.Errorf("the device filter offers %q: want the gateway %s of the messages, and no undefined", opts, simtest.MACA)
			}
		})
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
