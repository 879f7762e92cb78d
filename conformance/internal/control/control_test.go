package control

import (
	"sync"
	"testing"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// TestOfNamesTheValidTwin: a command's control is about its own device
// when the target has one of its type; a message's names no device; a
// case about a type the target lacks, or naming no device, is controlled
// on the first device of the fleet; with no device at all there is none.
func TestOfNamesTheValidTwin(t *testing.T) {
	demo := fleet.Demo()
	tgt, err := demo.Target()
	if err != nil {
		t.Fatal(err)
	}
	b := &catalog.Bench{Fleet: demo, Target: tgt}
	dimmer := tgt.Devices["Light Dimmer"]
	first, _ := b.AnyDevice()

	k, typ, what, ok := Of(b, catalog.Call{Op: device.SendCommand, SN: dimmer.SN, Type: "Light Dimmer"}, device.XML)
	if !ok || k != (Key{Op: device.SendCommand, F: device.XML, SN: dimmer.SN}) || typ != "Light Dimmer" || what != "command in xml to Light Dimmer "+dimmer.SN {
		t.Errorf("a command's control: %+v %q %q %v", k, typ, what, ok)
	}
	k, typ, _, ok = Of(b, catalog.Call{Op: device.SendMessage, SN: dimmer.SN, Type: "Light Dimmer"}, device.JSON)
	if !ok || k.SN != "" || typ != "" {
		t.Errorf("a message's control names a device: %+v %q", k, typ)
	}
	for _, c := range []catalog.Call{{Op: device.SendCommand, SN: "0000", Type: "Toaster"}, {Op: device.SendCommand, Type: "Light Dimmer"}} {
		k, typ, _, ok = Of(b, c, device.JSON)
		if !ok || k.SN != first.SN || typ != first.Type {
			t.Errorf("control of %+v: %+v %q, want the fleet's first device %s", c, k, typ, first.SN)
		}
	}
	empty := &catalog.Bench{Target: &fleet.Target{Devices: map[string]fleet.Device{}}}
	if _, _, _, ok := Of(empty, catalog.Call{Op: device.UpdateName, Type: "Thermostat"}, device.JSON); ok {
		t.Error("a control found on a target with no device")
	}
}

// TestStoreHandsASentAheadExchangeOnce: an answer kept is known to every
// later check; the exchange of a control sent ahead goes to the first
// check that takes it, and only to it.
func TestStoreHandsASentAheadExchangeOnce(t *testing.T) {
	var s Store
	k := Key{Op: device.SendCommand, F: device.JSON, SN: "abc"}
	if _, done := s.Known(k); done {
		t.Fatal("an empty store knows a control")
	}
	s.PutAhead(k, Result{What: "refused"}, client.Exchange{Method: "POST"})
	r, done, ex, ahead := s.Take(k)
	if !done || r.OK || r.What != "refused" || !ahead || ex.Method != "POST" {
		t.Fatalf("first take: %+v %v %+v %v", r, done, ex, ahead)
	}
	if r, done, _, ahead := s.Take(k); !done || r.What != "refused" || ahead {
		t.Errorf("second take: %+v %v, sent ahead %v: the exchange was handed twice", r, done, ahead)
	}
	other := Key{Op: device.SendCommand, F: device.XML, SN: "abc"}
	s.Put(other, Result{OK: true})
	if r, done := s.Known(other); !done || !r.OK {
		t.Errorf("a kept answer: %+v %v", r, done)
	}
	if _, _, _, ahead := s.Take(other); ahead {
		t.Error("a control sent in its check handed an exchange")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.PutAhead(Key{SN: string(rune('a' + i))}, Result{OK: true}, client.Exchange{})
			s.Known(k)
		}()
	}
	wg.Wait()
}
