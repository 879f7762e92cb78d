package simtest

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/gwdmi/gwtools/simulator"
)

// Sim is a simulator started by Start.
type Sim struct {
	*simulator.Simulator
	// Base is the URL of the interface's operations (http://127.0.0.1:PORT).
	Base string
	// AdminURL is the URL of the admin API and dashboard (Base + "/_sim").
	AdminURL string
	// Client speaks for account A of the test fleet, or for the first api
	// key and gateway of another fleet, with the admin token.
	Client *Client

	closeOnce sync.Once
	closeErr  error
}

// Close stops the simulator; it is done when the test ends, and a second
// call does nothing.
func (s *Sim) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.Simulator.Close() })
	return s.closeErr
}

// Start is how a test starts a simulator: in this process, on a free
// loopback port, with o as simulator.Start takes it (fleet, store
// backend, clock, replay and rate limits, admin token, faults...), and
// closed when the test ends. Defaults: the test fleet (Fleet) when
// o.Fleet is nil, pass fleet.Demo() for the demo fleet; no log output when
// o.Logger is nil.
func Start(t testing.TB, o simulator.Options) *Sim {
	t.Helper()
	if o.Fleet == nil {
		o.Fleet = Fleet()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	sim, err := simulator.Start("127.0.0.1:0", o)
	if err != nil {
		t.Fatalf("starting the simulator: %v", err)
	}
	base := sim.URL()
	c := NewClient(t, base)
	c.AdminToken = o.AdminToken
	if a := o.Fleet.Accounts; len(a) > 0 && a[0].ID != AccountA && len(a[0].APIKeys) > 0 && len(a[0].Gateways) > 0 {
		c.Account, c.APIKey, c.Secret, c.MAC = a[0].ID, a[0].APIKeys[0].Key, a[0].APIKeys[0].Secret, a[0].Gateways[0].MAC
	}
	s := &Sim{Simulator: sim, Base: base, AdminURL: base + "/_sim", Client: c}
	t.Cleanup(func() { s.Close() })
	return s
}
