package simtest

import (
	"net/http"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
)

// Start serves the test fleet over real HTTP: its Client's signed command
// is applied in both formats, the admin URL answers with the token, and a
// second Close does nothing.
func TestStart(t *testing.T) {
	s := Start(t, simulator.Options{AdminToken: "tok"})
	if s.Base != s.URL() || s.AdminURL != s.Base+"/_sim" || s.Client.Base != s.Base || s.Client.Account != AccountA {
		t.Fatalf("Sim %+v, client %+v", s, s.Client)
	}
	for _, f := range []device.Format{device.JSON, device.XML} {
		s.Client.Send(device.SendCommand, f, s.Client.Command(SN('a', 5), "Light Dimmer", S("dimming", "40"))).OK(t, f)
	}
	if d := s.Client.Device(MACA, SN('a', 5)); d.State["dimming"] != 40.0 {
		t.Errorf("device after the command: %v", d.State)
	}
	req, _ := http.NewRequest(http.MethodGet, s.AdminURL+"/state", nil)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the admin API without the token: %v %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	s.Close()
}

// With another fleet, the Client speaks for its first api key and gateway.
func TestStartOtherFleet(t *testing.T) {
	f := fleet.Demo()
	s := Start(t, simulator.Options{Fleet: f})
	a := f.Accounts[0]
	if c := s.Client; c.Account != a.ID || c.APIKey != a.APIKeys[0].Key || c.MAC != a.Gateways[0].MAC {
		t.Fatalf("client %+v", c)
	}
	s.Client.Send(device.UpdateName, device.JSON, append(s.Client.Envelope(), S("sn", a.Gateways[0].Devices[0].SN), S("name", "Hall"))).OK(t, device.JSON)
}
