package server

import (
	"sync"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/clients"
	simtest "github.com/gwdmi/gwtools/simulator/internal/simtestcore"
)

// keptExchanges is an Observer that keeps what it is told, copying the
// fields (the server reuses their slice once Observe returns).
type keptExchanges struct {
	mu  sync.Mutex
	got []clients.Exchange
}

func (k *keptExchanges) Observe(ex clients.Exchange) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ex.Pairs = append([]device.Pair(nil), ex.Pairs...)
	k.got = append(k.got, ex)
}

// TestObserverGetsTheDecodedFields: the observer (the client report) is
// handed the fields the server decoded, in the request's format, so it
// does not decode the body again; a body the server could not decode
// hands none over, and the observer reads the body itself.
func TestObserverGetsTheDecodedFields(t *testing.T) {
	obs := &keptExchanges{}
	_, c := testServer(t, nil, Config{Observer: obs}, nil)
	for _, f := range []device.Format{device.JSON, device.XML} {
		c.Send(device.SendCommand, f, dimmer(c, c.Envelope(), "40")).OK(t, f)
		c.Send(device.SendCommand, f, dimmer(c, c.Envelope(), "400")) // refused by value: still decoded
	}
	c.Post(device.SendCommand.Path(), simtest.ContentType(device.JSON), []byte("{not json"))

	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.got) != 5 {
		t.Fatalf("the observer saw %d exchanges, want 5", len(obs.got))
	}
	for i, ex := range obs.got[:4] {
		want := []device.Format{device.JSON, device.JSON, device.XML, device.XML}[i]
		if ex.Format != want {
			t.Errorf("exchange %d: format %v, want %v", i, ex.Format, want)
		}
		values := map[string]string{}
		for _, p := range ex.Pairs {
			values[p.Key] = p.Value.Text
		}
		if values["dimming"] == "" || values["sn"] != simtest.SN('a', 5) || values["type"] != "Light Dimmer" {
			t.Errorf("exchange %d: fields handed over %v, want the request's dimming, sn and type", i, values)
		}
	}
	if last := obs.got[4]; last.Pairs != nil || last.Format != 0 {
		t.Errorf("an undecodable body handed over fields: %v in %v", last.Pairs, last.Format)
	}
}
