// Package simulator assembles gwsim from its parts: a fleet, the in-memory
// store, the authenticator and the HTTP server. gwsim serve and gwconform's
// embedded target both start it through here.
package simulator

import (
	"log/slog"
	"time"

	"github.com/gwdmi/gwtools/simulator/fleet"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/store"
)

// Options configure a Simulator; zero values take the defaults.
type Options struct {
	// Fleet to simulate; the built-in demo fleet when nil.
	Fleet      *fleet.Fleet
	AdminToken string
	Logger     *slog.Logger
	// JournalSize and MessageLimit bound the journal and each gateway's
	// message log.
	JournalSize  int
	MessageLimit int
	// Now is the clock for timestamps (time.Now when nil).
	Now func() time.Time
}

// Simulator is a running gwsim.
type Simulator struct {
	Fleet  *fleet.Fleet
	Store  *store.Store
	Server *server.Server
}

// New builds a simulator without listening; Open starts it.
func New(o Options) *Simulator {
	f := o.Fleet
	if f == nil {
		f = fleet.Demo()
	}
	a := f.Authenticator()
	a.Now = o.Now
	st := store.New(f, o.MessageLimit)
	srv := server.New(server.Config{Store: st, Auth: a, Logger: o.Logger, AdminToken: o.AdminToken,
		JournalSize: o.JournalSize, Now: o.Now})
	return &Simulator{Fleet: f, Store: st, Server: srv}
}

// Start builds a simulator and opens it on addr ("127.0.0.1:0" for any free
// loopback port).
func Start(addr string, o Options) (*Simulator, error) {
	s := New(o)
	if err := s.Open(addr); err != nil {
		return nil, err
	}
	return s, nil
}

// Open listens on addr and serves in the background.
func (s *Simulator) Open(addr string) error { return s.Server.Open(addr) }

// URL is the base URL clients use.
func (s *Simulator) URL() string { return s.Server.URL() }

// Close shuts the server down, letting requests in flight finish.
func (s *Simulator) Close() error { return s.Server.Close() }
