package cassette_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/cassette"
	"github.com/gwdmi/gwtools/simulator/proxy"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestReplayMatchesInAnyLetterCase: CONTRACT 2 reads enumerated values
// (Heat) and hex fields (sn) in any letter case, so a cassette recorded
// with mode Heat answers mode heat and HEAT, and an sn in upper case, in
// both formats; another value is still simulated.
func TestReplayMatchesInAnyLetterCase(t *testing.T) {
	dir := t.TempDir()
	up := simtest.Start(t, simulator.Options{Fleet: withoutThermostat()})
	w, err := cassette.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(proxy.Config{Upstream: up.URL(), Record: w, Fleet: withoutThermostat(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Open("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	c, target := client(t, p.URL())
	thermo := target.Devices["Thermostat"].SN
	for _, f := range []device.Format{device.JSON, device.XML} {
		c.Send(device.SendCommand, f, c.Command(thermo, "Thermostat", simtest.S("mode", "Heat"))).
			Fail(t, f, http.StatusNotFound, device.CodeDeviceNotFound, "sn")
	}
	p.Close()
	up.Close()

	player, err := cassette.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	player.Auth = fleet.Demo().Authenticator()
	sim := simtest.Start(t, simulator.Options{Fleet: fleet.Demo(), WrapOperations: player.Wrap})
	c, _ = client(t, sim.URL())
	for _, f := range []device.Format{device.JSON, device.XML} {
		for _, tc := range []struct{ sn, mode string }{{thermo, "heat"}, {thermo, "HEAT"}, {strings.ToUpper(thermo), "Heat"}} {
			r := c.Send(device.SendCommand, f, c.Command(tc.sn, "Thermostat", simtest.S("mode", tc.mode)))
			r.Fail(t, f, http.StatusNotFound, device.CodeDeviceNotFound, "sn")
			if r.Header.Get("X-Gwsim-Replayed") != "true" {
				t.Errorf("%s, sn %s, mode %s: not the recorded answer", f, tc.sn, tc.mode)
			}
		}
		c.Send(device.SendCommand, f, c.Command(thermo, "Thermostat", simtest.S("mode", "Cool"))).OK(t, f)
	}
}
