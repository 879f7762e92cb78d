package scenario_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/scenario"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestScenarioReportJudgesEachFault: during overlapping faults, each
// request is counted under the fault that answered it, not under every
// fault in force: the offline gateway's 504s under the outage, the slow
// dimmer's requests (and how long they took) under the slow device, the
// failed renames under the error rate, and a request to a healthy device
// under none. Once the faults end, the report says per fault whether the
// app recovered and how soon; a fault whose device the app never tried
// again is not recovered. Text, JSON, JUnit and HTML say it; in JSON and
// XML.
func TestScenarioReportJudgesEachFault(t *testing.T) {
	dimmer, thermo, porch := simtest.SN('a', 5), simtest.SN('a', 3), simtest.SN('c', 0)
	sc, err := scenario.Parse([]byte(`
name: overlapping faults
autostart: false
steps:
  - {at: 0s, for: 800ms, gateway_offline: ` + simtest.MACA2 + `, retry_after: none}
  - {at: 0s, for: 800ms, device_slow: {mac: ` + simtest.MACA + `, sn: ` + dimmer + `, latency: 150ms}}
  - {at: 0s, for: 800ms, error_rate: {operation: update_name, rate: 1}}
  - {at: 0s, for: 800ms, device_unreachable: {mac: ` + simtest.MACA + `, sn: ` + thermo + `}}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := scenario.NewPlayer(sc, nil)
	sim := simtest.Start(t, simulator.Options{AdminToken: "tok", ClientFaults: p.Faults, Admin: p.Routes()})
	t.Cleanup(p.Stop)
	p.Attach(sim.Server)
	c := sim.Client
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	offline := func(level string) []simtest.F {
		return append(simtest.Set(c.Envelope(), simtest.S("mac", simtest.MACA2)), simtest.S("sn", porch), simtest.S("type", "Light Dimmer"), simtest.S("dimming", level))
	}
	for i, f := range []device.Format{device.JSON, device.XML} {
		lvl := []string{"31", "32"}[i]
		c.Send(device.SendCommand, f, offline(lvl)).Fail(t, f, http.StatusGatewayTimeout, device.CodeGatewayOffline, "mac")
		c.Send(device.SendCommand, f, c.Command(dimmer, "Light Dimmer", simtest.S("dimming", lvl))).OK(t, f)
	}
	c.Send(device.UpdateName, device.JSON, append(c.Envelope(), simtest.S("sn", dimmer), simtest.S("name", "Hall"))).
		Fail(t, device.JSON, http.StatusServiceUnavailable, device.CodeInjectedFault, "")
	c.Send(device.SendCommand, device.XML, c.Command(thermo, "Thermostat", simtest.S("mode", "Heat"))).
		Fail(t, device.XML, http.StatusGatewayTimeout, device.CodeDeviceUnreachable, "sn")
	c.Send(device.SendCommand, device.JSON, c.Command(simtest.SN('a', 0), "Appliance Module", simtest.S("io", "On"))).OK(t, device.JSON)

	for deadline := time.Now().Add(5 * time.Second); !p.Status().Finished; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the scenario did not finish")
		}
	}
	// After the faults: the gateway, the dimmer and renames work again;
	// the thermostat is not tried again.
	c.Send(device.SendCommand, device.XML, offline("33")).OK(t, device.XML)
	c.Send(device.SendCommand, device.JSON, c.Command(dimmer, "Light Dimmer", simtest.S("dimming", "34"))).OK(t, device.JSON)
	c.Send(device.UpdateName, device.XML, append(c.Envelope(), simtest.S("sn", dimmer), simtest.S("name", "Hall"))).OK(t, device.XML)

	rep := sim.Clients.Report()
	app, ok := rep.Client(clients.Mask(simtest.KeyA))
	if !ok {
		t.Fatalf("no client: %+v", rep)
	}
	phases := map[string]clients.Phase{}
	for _, ph := range app.Phases {
		phases[strings.SplitN(ph.Phase, " (", 2)[0]] = ph
	}
	gw := phases["gateway "+simtest.MACA2+" offline, no Retry-After"]
	slow := phases["device "+simtest.MACA+"/"+dimmer+" slow by 150ms"]
	renames := phases["100% errors on update_name"]
	unreachable := phases["device "+simtest.MACA+"/"+thermo+" unreachable"]
	if gw.Requests != 2 || gw.Codes[device.CodeGatewayOffline] != 2 || gw.Devices[porch] != 2 || gw.Recovery == nil || !gw.Recovery.Recovered {
		t.Errorf("the outage: %+v %+v", gw, gw.Recovery)
	}
	// The rename went to the slow dimmer too: slowed, then failed by the
	// error rate, it counts under the error rate alone, which answered it.
	if slow.Requests != 2 || slow.Errors != 0 || slow.Devices[dimmer] != 2 || slow.Latency == nil || slow.Latency.MinMS < 150 || slow.Recovery == nil || !slow.Recovery.Recovered {
		t.Errorf("the slow dimmer: %+v %+v %+v", slow, slow.Latency, slow.Recovery)
	}
	if renames.Requests != 1 || renames.Codes[device.CodeInjectedFault] != 1 || renames.Recovery == nil || !renames.Recovery.Recovered {
		t.Errorf("the failing renames: %+v %+v", renames, renames.Recovery)
	}
	if unreachable.Requests != 1 || unreachable.Recovery == nil || !unreachable.Recovery.Ended || unreachable.Recovery.Recovered ||
		!strings.Contains(unreachable.Recovery.Text, "not recovered") {
		t.Errorf("the unreachable thermostat: %+v %+v", unreachable, unreachable.Recovery)
	}
	if len(phases) != 4 {
		t.Errorf("phases %+v: the request to a healthy device is in none", app.Phases)
	}
	var text, page, junit bytes.Buffer
	rep.WriteText(&text)
	rep.WriteHTML(&page)
	rep.WriteJUnit(&junit)
	for _, want := range []string{"against " + porch + " ×2", "recovered: its first request to what the fault hit succeeded", "took 15", "not recovered: no request"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(page.String(), "not recovered") || !strings.Contains(page.String(), "latency (ms)") {
		t.Error("the HTML report lacks the faults' recovery and latency")
	}
	if !strings.Contains(junit.String(), `name="app recovered after device `+simtest.MACA+"/"+thermo+` unreachable`) || strings.Count(junit.String(), "<failure") < 1 {
		t.Errorf("JUnit lacks the recovery cases:\n%s", junit.String())
	}
}
