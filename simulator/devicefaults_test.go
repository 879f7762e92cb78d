package simulator_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestDeviceFaults covers the device-level faults: an unreachable device,
// a slow device and an error rate on one operation only, through real HTTP
// in both formats; a rejected request changes no state.
func TestDeviceFaults(t *testing.T) {
	t.Parallel()
	_, c := start(t, simulator.Options{})
	dim := func(v string) []simtest.F { return c.Command(snOf(dimmer), dimmer, S("dimming", v)) }
	rename := func(name string) []simtest.F {
		return append(c.Envelope(), S("sn", snOf(relay)), S("name", name))
	}

	t.Run("unreachable device", func(t *testing.T) {
		var f server.Faults
		c.AdminJSON("PUT", "/_sim/faults", `{"unreachable_devices":[{"mac":"`+simtest.MACA+`","sn":"`+snOf(dimmer)+`"}]}`, &f)
		if len(f.UnreachableDevices) != 1 || f.UnreachableDevices[0].SN != snOf(dimmer) {
			t.Fatalf("PUT answered %+v", f)
		}
		before := c.Device(simtest.MACA, snOf(dimmer)).State["dimming"]
		for _, format := range formats {
			c.Send(device.SendCommand, format, dim("41")).Fail(t, format, 504, device.CodeDeviceUnreachable, device.FieldSN)
		}
		if got := c.Device(simtest.MACA, snOf(dimmer)).State["dimming"]; got != before {
			t.Errorf("a refused command changed dimming from %v to %v", before, got)
		}
		// Another device on the same gateway still answers.
		c.Send(device.UpdateName, device.XML, rename("Still here")).OK(t, device.XML)
		c.AdminJSON("DELETE", "/_sim/faults", "", nil)
		c.Send(device.SendCommand, device.JSON, dim("42")).OK(t, device.JSON)
	})

	t.Run("slow device", func(t *testing.T) {
		c.AdminJSON("PUT", "/_sim/faults", `{"slow_devices":[{"mac":"`+simtest.MACA+`","sn":"`+snOf(dimmer)+`","latency":"300ms"}]}`, nil)
		for _, format := range formats {
			began := time.Now()
			c.Send(device.SendCommand, format, dim("43")).OK(t, format)
			if d := time.Since(began); d < 300*time.Millisecond {
				t.Errorf("%s: the slow device answered after %s, want at least 300ms", format, d)
			}
		}
		c.AdminJSON("DELETE", "/_sim/faults", "", nil)
	})

	t.Run("error rate on one operation", func(t *testing.T) {
		c.AdminJSON("PUT", "/_sim/faults", `{"operation_error_rates":{"update_name":1}}`, nil)
		for _, format := range formats {
			c.Send(device.UpdateName, format, rename("Never")).Fail(t, format, 503, device.CodeInjectedFault, "")
			c.Send(device.SendCommand, format, dim("44")).OK(t, format)
		}
		if got := c.Device(simtest.MACA, snOf(relay)).Name; got == "Never" {
			t.Errorf("a refused rename changed the name")
		}
		c.AdminJSON("DELETE", "/_sim/faults", "", nil)
	})

	t.Run("bad device faults", func(t *testing.T) {
		var before server.Faults
		c.AdminJSON("GET", "/_sim/faults", "", &before)
		for body, field := range map[string]string{
			`{"unreachable_devices":[{"mac":"abc","sn":"x"}]}`:                          "unreachable_devices[0].mac",
			`{"unreachable_devices":[{"mac":"` + simtest.MACA + `","sn":""}]}`:          "unreachable_devices[0].sn",
			`{"slow_devices":[{"mac":"` + simtest.MACA + `","sn":"x","latency":"0s"}]}`: "slow_devices[0].latency",
			`{"slow_devices":[{"mac":"` + simtest.MACA + `","sn":"x","latency":"2h"}]}`: "slow_devices[0].latency",
			`{"operation_error_rates":{"delete":0.5}}`:                                  "operation_error_rates.delete",
			`{"operation_error_rates":{"update_name":2}}`:                               "operation_error_rates.update_name",
			// Names the fleet does not have (such a fault must not silently do nothing).
			`{"offline_gateways":["0000000000ff"]}`:                                                              "offline_gateways[0]",
			`{"unreachable_devices":[{"mac":"0000000000ff","sn":"` + snOf(dimmer) + `"}]}`:                       "unreachable_devices[0].mac",
			`{"unreachable_devices":[{"mac":"` + simtest.MACA + `","sn":"nosuchdevice"}]}`:                       "unreachable_devices[0].sn",
			`{"slow_devices":[{"mac":"` + simtest.MACA + `","sn":"` + simtest.SN('b', 0) + `","latency":"1s"}]}`: "slow_devices[0].sn",
		} {
			st, _, b := c.Admin("PUT", "/_sim/faults", body)
			if st != 400 || !containsField(b, field) {
				t.Errorf("%s: %d %s, want 400 naming %s", body, st, b, field)
			}
			if strings.HasPrefix(field, "offline") || strings.HasSuffix(field, "].mac") && strings.Contains(body, "0000000000ff") {
				if !strings.Contains(string(b), "0000000000ff") {
					t.Errorf("%s: the refusal does not name the mac: %s", body, b)
				}
			}
		}
		var after server.Faults
		c.AdminJSON("GET", "/_sim/faults", "", &after)
		if !reflect.DeepEqual(after, before) {
			t.Errorf("a refused PUT changed the faults: %+v, was %+v", after, before)
		}
	})
}

func containsField(body []byte, field string) bool {
	return strings.Contains(string(body), `"field": "`+field+`"`)
}
