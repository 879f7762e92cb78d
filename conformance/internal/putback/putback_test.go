package putback

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/gwsimtest"
)

// TestEveryChangedDeviceIsPutBackAsItWas: against the simulator through
// real HTTP, in each format, a device noted before its first change is put
// back, name and whole state, as the observer showed it then, however
// often it changed after; a device never noted, a message and a dry run
// are left alone.
func TestEveryChangedDeviceIsPutBackAsItWas(t *testing.T) {
	for _, f := range []device.Format{device.JSON, device.XML} {
		t.Run(f.String(), func(t *testing.T) {
			sim := gwsimtest.Start(t)
			fl := fleet.Demo()
			tgt, err := fl.Target()
			if err != nil {
				t.Fatal(err)
			}
			c, err := client.New(client.Config{BaseURL: sim.URL, Signer: client.MD5Signer{APIKey: tgt.Key.Key, Secret: tgt.Key.Secret}})
			if err != nil {
				t.Fatal(err)
			}
			b := &catalog.Bench{Fleet: fl, Target: tgt, Client: c, Location: fl.Location(), Now: time.Now}
			lk := link.New(link.Config{Client: c, Observer: observer.Reader{Base: sim.URL}, Concurrency: 4,
				Tested: func() string { return tgt.MAC }})
			p := New(Config{Bench: b, Link: func() *link.Link { return lk }, Observed: true, Concurrency: 4})
			ctx := context.Background()
			th, lamp := tgt.Devices["Thermostat"], tgt.Devices["Light Dimmer"]
			before, ok := sim.Device(tgt.MAC, th.SN)
			if !ok {
				t.Fatal("no thermostat in the simulator")
			}
			untouched, _ := sim.Device(tgt.MAC, lamp.SN)

			send := func(call catalog.Call) {
				t.Helper()
				r, _, err := lk.Send(ctx, call.Request(f))
				if err != nil || !link.Accepted(r) {
					t.Fatalf("%s: %v %s", call.Op.Name(), err, link.Describe(r))
				}
			}
			cmd := b.Base(device.SendCommand, th.SN, th.Type)
			p.Note(ctx, cmd)
			cmd.Set("mode", "Heat")
			cmd.Set("heating_point", "25")
			send(cmd)
			rn := b.Base(device.UpdateName, th.SN, th.Type)
			p.Note(ctx, rn) // noted once: the read before the first change stands
			send(rn)
			p.Note(ctx, b.Base(device.SendMessage, "", ""))
			// Changed without a note: not the run's to put back.
			other := b.Base(device.SendCommand, lamp.SN, lamp.Type)
			other.Set("dimming", "7")
			send(other)
			if now, _ := sim.Device(tgt.MAC, th.SN); now.Name == before.Name {
				t.Fatal("the rename did not land: the test proves nothing")
			}

			p.All(ctx)
			after, _ := sim.Device(tgt.MAC, th.SN)
			if after.Name != before.Name || !sameState(after.State, before.State) {
				t.Errorf("put back as %q %v, want %q %v", after.Name, after.State, before.Name, before.State)
			}
			if l, _ := sim.Device(tgt.MAC, lamp.SN); sameState(l.State, untouched.State) {
				t.Errorf("a device never noted was put back too: %v", l.State)
			}

			dry := New(Config{Bench: b, Link: func() *link.Link { return lk }, Observed: true, DryRun: true, Concurrency: 4})
			dry.Note(ctx, cmd)
			send(cmd)
			dry.All(ctx)
			if now, _ := sim.Device(tgt.MAC, th.SN); sameState(now.State, before.State) {
				t.Error("a dry run put a device back")
			}
		})
	}
}

func sameState(a, b map[string]any) bool { return maps.Equal(observer.Values(a), observer.Values(b)) }
