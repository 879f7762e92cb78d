package batch

import (
	"bytes"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/fixtures"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// TestStandInIsAnotherDeviceOfTheTypeOnTheAccount: a slow device's state
// checks of valid values move only once it is known slow, only after the
// first of each field and format, only to a device of its type on the
// tested account that no worker uses and that is not slow itself; the
// progress note counts them.
func TestStandInIsAnotherDeviceOfTheTypeOnTheAccount(t *testing.T) {
	const (
		slowSN  = "0123456789abcdef0123456789abcd04"
		sameGW  = "0123456789abcdef0123456789abcd09" // a second Thermostat of the tested gateway
		otherGW = "0123456789abcdef0123456789abcd08" // on the account's second gateway
		otherAc = "fedcba9876543210fedcba987654321f" // on another account
	)
	y := bytes.Replace(fixtures.DemoFleet, []byte("name: Hall, state: {dimming: 40}}\n"),
		[]byte("name: Hall, state: {dimming: 40}}\n          - {sn: "+sameGW+", type: Thermostat, name: Den}\n"), 1)
	y = bytes.Replace(y, []byte("name: Landing, state: {dimming: 70}}\n"),
		[]byte("name: Landing, state: {dimming: 70}}\n          - {sn: "+otherGW+", type: Thermostat, name: Attic}\n"), 1)
	y = bytes.Replace(y, []byte("name: Porch, state: {dimming: 100}}"),
		[]byte("name: Porch, state: {dimming: 100}}\n          - {sn: "+otherAc+", type: Thermostat, name: Shed}"), 1)
	f, err := fleet.Parse(y)
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := f.Target()
	if err != nil {
		t.Fatal(err)
	}
	sns := func(ds []devOn) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.dev.SN+"@"+d.mac)
		}
		return out
	}
	serial := New(Config{Bench: &catalog.Bench{Fleet: f, Target: tgt, Workers: 1}})
	if got := sns(serial.sameType("Thermostat", slowSN)); len(got) != 2 || got[0] != sameGW+"@a4c138f0e2b1" || got[1] != otherGW+"@a4c138f0e2b2" {
		t.Errorf("serial stand-ins %v, want the tested gateway's second Thermostat, then the other gateway's (never another account's)", got)
	}
	two := New(Config{Bench: &catalog.Bench{Fleet: f, Target: tgt, Workers: 2}})
	if got := sns(two.sameType("Thermostat", slowSN)); len(got) != 1 || got[0] != otherGW+"@a4c138f0e2b2" {
		t.Errorf("--parallel 2 stand-ins %v, want only the other gateway's (worker 1 uses the second Thermostat)", got)
	}

	c := catalog.Case{ID: "command.thermostat.mode.x", Op: device.SendCommand, Type: "Thermostat", Field: "mode", Value: "Cool"}
	sender := New(Config{Bench: &catalog.Bench{Fleet: f, Target: tgt, Workers: 1}})
	if nt, _, _ := sender.StandIn(c, device.JSON); nt != nil {
		t.Fatal("a device with no answer times known moved its check")
	}
	sender.answers = map[string][]time.Duration{catalog.HexOnly(slowSN): {1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond}}
	if nt, _, _ := sender.StandIn(c, device.JSON); nt != nil {
		t.Error("the first state check of mode in JSON moved: the slow device must keep it")
	}
	nt, d, why := sender.StandIn(c, device.JSON)
	if nt == nil || d.SN != sameGW || nt.Devices["Thermostat"].SN != sameGW || nt.MAC != "a4c138f0e2b1" || why == "" {
		t.Fatalf("the second state check of mode in JSON: stand-in %+v, %q", d, why)
	}
	if nt.Devices["Light Dimmer"].SN != tgt.Devices["Light Dimmer"].SN || sender.bench.Target.Devices["Thermostat"].SN != slowSN {
		t.Error("the stand-in's target changed more than the Thermostat, or the run's target was changed")
	}
	if nt, _, _ := sender.StandIn(c, device.XML); nt != nil {
		t.Error("the first state check of mode in XML moved")
	}
	// A value the slow device refused keeps its state check there.
	refused := c
	refused.ID = "command.thermostat.mode.refused-by-the-device"
	sender.stand.answered(refused.ID, device.JSON, false)
	if nt, _, _ := sender.StandIn(refused, device.JSON); nt != nil {
		t.Error("the state check of a value the slow device refused moved")
	}
	sender.stand.answered(c.ID, device.XML, true)
	if nt, _, _ := sender.StandIn(c, device.XML); nt == nil {
		t.Error("the second state check of mode in XML, a value the device accepted, did not move")
	}
	// A stand-in that is slow too is passed over.
	sender.answers[catalog.HexOnly(sameGW)] = []time.Duration{time.Second, time.Second, time.Second}
	if _, d, _ := sender.StandIn(c, device.JSON); d.SN != otherGW {
		t.Errorf("with the second Thermostat slow too, the stand-in is %q, want %s", d.SN, otherGW)
	}
	if note := sender.SlowNote(); !bytes.Contains([]byte(note), []byte("(3 state checks of valid values run on Thermostat "+otherGW)) {
		t.Errorf("progress note %q does not count the moved checks", note)
	}
	// A refusal, a message or a case without a field never moves.
	for _, x := range []catalog.Case{{Op: device.SendCommand, Type: "Thermostat"}, {Op: device.SendMessage, Field: "mode", Type: "Thermostat"}, {Op: device.SendCommand, Type: "Thermostat", Field: "mode", WholeFleet: true}} {
		if nt, _, _ := sender.StandIn(x, device.JSON); nt != nil {
			t.Errorf("case %+v moved", x)
		}
	}
	// A worker other than 0 never moves a check (worker 0 runs the
	// checks that watch other gateways).
	w1 := New(Config{Bench: &catalog.Bench{Fleet: f, Target: tgt, Workers: 2, Worker: 1}})
	w1.answers = sender.answers
	w1.StandIn(c, device.JSON)
	if nt, _, _ := w1.StandIn(c, device.JSON); nt != nil {
		t.Error("worker 1 moved a check")
	}

	// A fleet with no other Thermostat on the account: nothing moves, and
	// the progress line says why the state checks stay.
	demo := fleet.Demo()
	dt, _ := demo.Target()
	alone := New(Config{Bench: &catalog.Bench{Fleet: demo, Target: dt, Workers: 1}})
	alone.answers = map[string][]time.Duration{catalog.HexOnly(slowSN): {1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond}}
	alone.StandIn(c, device.JSON)
	if nt, _, _ := alone.StandIn(c, device.JSON); nt != nil {
		t.Error("a check moved in a fleet with one Thermostat")
	}
	if note := alone.SlowNote(); !bytes.Contains([]byte(note), []byte("the fleet has no other Thermostat on the tested account")) {
		t.Errorf("progress note %q does not say that no stand-in exists", note)
	}
}
