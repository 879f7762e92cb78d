package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestBrowserDashboardOnAnyReplica: two replicas on one Redis. Signed in
// through replica one's page, a command sent through replica two shows on
// replica one's page as an event naming replica two, and redraws the
// device; replica two's page then opens without signing in again (the
// session lives in Redis), naming replica two; signing out there ends the
// session on replica one too.
func TestBrowserDashboardOnAnyReplica(t *testing.T) {
	r := simtest.StartRedis(t, false)
	const token = "any-replica-t0ken"
	start := func(name string) *simulator.Simulator {
		return simtest.Start(t, simulator.Options{Fleet: simtest.Fleet(), StoreURL: r.URL(), AdminToken: token, Replica: name}).Simulator
	}
	one, two := start("one"), start("two")
	ctx := server.Tab(t)
	var dimmer string
	var lamp *device.Type
	for i, ty := range device.Types {
		if ty.Name == "Light Dimmer" {
			dimmer, lamp = simtest.SN('a', i), ty
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(one.URL()+"/_sim/"),
		chromedp.WaitVisible(chromedp.CSS(`#signin-form`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), token),
		chromedp.Click(chromedp.CSS(`#signin-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.device[data-sn="`+dimmer+`"] .bulb`)),
		chromedp.WaitVisible(chromedp.CSS(`#live.on`))); err != nil {
		t.Fatalf("signing in through replica one: %v", err)
	}
	if got := server.Text(ctx, `#replica`); got != "replica one" {
		t.Errorf("replica one's page names %q", got)
	}

	c := simtest.NewClient(t, two.URL())
	for _, tc := range []struct {
		f       device.Format
		dimming string
	}{{device.JSON, "37"}, {device.XML, "64"}} {
		fd, _, _ := lamp.Field("dimming")
		// Sent again every half second until the page shows it: replica
		// two learns from a message on Redis, a moment after the page
		// subscribed, that replica one has a page open.
		var err error
		for try := 0; try < 10; try++ {
			c.Send(device.SendCommand, tc.f, c.Command(dimmer, lamp.Name, simtest.N(fd.WireName(tc.f), tc.dimming))).OK(t, tc.f)
			if err = server.Within(ctx, 500*time.Millisecond,
				chromedp.WaitVisible(chromedp.CSS(`#events li.event[data-replica="two"][data-kind="request"]`)),
				chromedp.WaitVisible(chromedp.CSS(`.device[data-sn="`+dimmer+`"] .bulb[data-dimming="`+tc.dimming+`"]`))); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("%s: replica two's command did not show on replica one's page within 5 s: %v", tc.f, err)
		}
	}
	// The Apps section covers both replicas' requests, and says so.
	if err := server.Within(ctx, 10*time.Second, server.Until(`(document.getElementById("clients-scope").textContent || "").includes("2 replicas")`)); err != nil {
		t.Errorf("the Apps section does not say it covers both replicas: %q: %v", server.Text(ctx, `#clients-scope`), err)
	}
	if got := server.Text(ctx, `#clients-scope`); !strings.Contains(got, "every replica's requests") {
		t.Errorf("Apps scope reads %q", got)
	}
	server.Screenshot(t, ctx, t.Name()+"-events")
	ev := server.Text(ctx, `#events li.event[data-replica="two"]`)
	if !strings.Contains(ev, "two") || !strings.Contains(ev, "gateway/command") || !strings.Contains(ev, "200") || !strings.Contains(ev, dimmer) {
		t.Errorf("the event reads %q: want the replica, the operation, the status and the device", ev)
	}

	// The same browser on replica two: the session is honoured there.
	if err := chromedp.Do(ctx, chromedp.Navigate(two.URL()+"/_sim/"),
		chromedp.WaitVisible(chromedp.CSS(`.device[data-sn="`+dimmer+`"] .bulb`)),
		chromedp.WaitVisible(chromedp.CSS(`#signout`))); err != nil {
		t.Fatalf("replica two's page with replica one's session: %v", err)
	}
	if got := server.Text(ctx, `#replica`); got != "replica two" {
		t.Errorf("replica two's page names %q", got)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#signout`)), chromedp.WaitVisible(chromedp.CSS(`#signin-form`))); err != nil {
		t.Fatalf("sign-out on replica two: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(one.URL()+"/_sim/"), chromedp.WaitVisible(chromedp.CSS(`#signin-form`))); err != nil {
		t.Errorf("replica one after signing out on replica two should ask to sign in: %v", err)
	}
}

// TestBrowserAppsScopeInMemory: on a store in memory the Apps section
// says it covers this process's requests only.
func TestBrowserAppsScopeInMemory(t *testing.T) {
	sim := simtest.Start(t, simulator.Options{Fleet: simtest.Fleet()})
	c := sim.Client
	for _, f := range []device.Format{device.JSON, device.XML} {
		c.Send(device.SendMessage, f, append(c.Envelope(), simtest.S("message_type", "alarm"), simtest.S("message_value", "smoke=1"))).OK(t, f)
	}
	ctx := server.Tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(sim.URL()+"/_sim/"),
		chromedp.WaitVisible(chromedp.CSS(`#clients-section .client`))); err != nil {
		t.Fatalf("the Apps section did not draw: %v", err)
	}
	if err := server.Within(ctx, 5*time.Second, server.Until(`(document.getElementById("clients-scope").textContent || "").length > 0`)); err != nil {
		t.Fatal(err)
	}
	if got := server.Text(ctx, `#clients-scope`); got != "Covers this process's requests only." {
		t.Errorf("Apps scope reads %q", got)
	}
}
