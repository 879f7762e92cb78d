// Package simulator assembles gwsim from its parts: a fleet, the backend
// its --store URL names (backends.go), the authenticator and the HTTP
// server. gwsim serve and gwconform's embedded target both start it
// through here.
package simulator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/internal/persist"
	"github.com/gwdmi/gwtools/simulator/redisstore"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/store"
)

// Options configure a Simulator; zero values take the defaults.
type Options struct {
	// Fleet to simulate; the built-in demo fleet when nil.
	Fleet      *fleet.Fleet
	AdminToken string
	// HealthNeedsToken puts /_sim/health behind AdminToken too.
	HealthNeedsToken bool
	// AdminOff turns the admin API off (see server.Config).
	AdminOff bool
	// TrustedProxies: see server.Config.
	TrustedProxies []netip.Prefix
	Logger         *slog.Logger
	// JournalSize and MessageLimit bound the journal and each gateway's
	// message log.
	JournalSize  int
	MessageLimit int
	// Now is the clock for timestamps (time.Now when nil).
	Now func() time.Time
	// StateFile, when set, keeps the state in this file across restarts
	// (package persist); Build refuses a file it cannot use.
	StateFile string
	// RejectReplays and RateLimit: see server.Config.
	RejectReplays bool
	RateLimit     int
	// AccessLog and SummaryEvery: see server.Config.
	AccessLog    bool
	SummaryEvery time.Duration
	// StoreURL chooses where the state is kept: "" or "memory:" in this
	// process, "file:PATH" in a state file (as StateFile), redis://,
	// rediss:// or redis+sentinel:// in Redis, shared by every replica
	// started with it (package redisstore); StoreReset replaces a
	// different fleet found there.
	StoreURL   string
	StoreReset bool
	// SentinelPassword is the Sentinels' own password, for a
	// redis+sentinel:// StoreURL whose Sentinels require one (refused
	// with any other store).
	SentinelPassword string
	// StoreDurability is when a change on Redis is acknowledged: once the
	// primary has it ("" or "primary") or once a replica has it too
	// ("replicated"). See redisstore.Durability.
	StoreDurability string
	// Replica names this process in the journal, the dashboard and its
	// events (host-pid when empty).
	Replica string
	// OpenForms is how the forms neither text decides are read: refused
	// (the zero value) or accepted (gwsim serve --open-forms).
	OpenForms device.OpenForms
	// NoClientReport turns the client report (GET /_sim/clients, package
	// clients) off: it costs each request a pass over the fields the
	// server decoded (a hash of each, to tell a resent request).
	NoClientReport bool
	// NoMetrics turns the Prometheus metrics (GET /metrics) off.
	NoMetrics bool
	// ClientPhases names the faults in force for the client report (a
	// scenario's); nil: none.
	ClientPhases func() []string
	// ClientFaults, in place of ClientPhases, are the scenario's faults
	// the client report attributes each request to (clients.Config.Faults).
	ClientFaults func() []clients.Fault
	// WrapOperations, ReplayNote and Admin: see server.Config.
	WrapOperations func(http.Handler) http.Handler
	ReplayNote     string
	Admin          map[string]http.Handler
	// ReadHeaderTimeout, ReadTimeout and ShutdownTimeout: see
	// server.Config (zero: its defaults).
	ReadHeaderTimeout, ReadTimeout, ShutdownTimeout time.Duration
	// AllowedHosts and MaxEventsClients: see server.Config.
	AllowedHosts     []string
	MaxEventsClients int
	// Latitudes and ConnectionClose: see server.Config.
	Latitudes       server.Latitudes
	ConnectionClose bool
	// EffectDelay, when above 0, shows each change at the admin reads
	// between half of it and all of it after the answer, in order
	// (server.LaggingState); the state must be in this process's memory.
	EffectDelay time.Duration
}

// DefaultReplica is this process's name when Options.Replica is empty:
// the host name and the pid.
func DefaultReplica() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "gwsim"
	}
	return h + "-" + strconv.Itoa(os.Getpid())
}

// Simulator is a running gwsim.
type Simulator struct {
	Fleet *fleet.Fleet
	// Store is the state when the process keeps it (memory:, file:); nil
	// when the backend keeps it elsewhere (Redis).
	Store  *store.Store
	Server *server.Server
	// Backend is where the state is kept, as the --store URL chose.
	Backend server.Backend
	// Clients is the client report (nil with Options.NoClientReport).
	Clients *clients.Recorder

	log *slog.Logger
}

// New builds a simulator without listening; Open starts it. It panics
// where Build fails, which only a StateFile can make it do.
func New(o Options) *Simulator {
	s, err := Build(o)
	if err != nil {
		panic("simulator: " + err.Error())
	}
	return s
}

// Build builds a simulator without listening, with the state of
// Options.StateFile when set.
func Build(o Options) (*Simulator, error) {
	f := o.Fleet
	if f == nil {
		f = fleet.Demo()
	}
	a := f.Authenticator()
	a.Now = o.Now
	if o.Replica == "" {
		o.Replica = DefaultReplica()
	}
	cfg := server.Config{Auth: a, Logger: o.Logger, AdminToken: o.AdminToken,
		JournalSize: o.JournalSize, Now: o.Now, RejectReplays: o.RejectReplays, RateLimit: o.RateLimit,
		AccessLog: o.AccessLog, SummaryEvery: o.SummaryEvery, HealthNeedsToken: o.HealthNeedsToken, AdminOff: o.AdminOff, TrustedProxies: o.TrustedProxies,
		Replica: o.Replica, WrapOperations: o.WrapOperations, ReplayNote: o.ReplayNote, Admin: map[string]http.Handler{}, OpenForms: o.OpenForms,
		ReadHeaderTimeout: o.ReadHeaderTimeout, ReadTimeout: o.ReadTimeout, ShutdownTimeout: o.ShutdownTimeout,
		AllowedHosts: o.AllowedHosts, MaxEventsClients: o.MaxEventsClients,
		NoMetrics: o.NoMetrics, Latitudes: o.Latitudes, ConnectionClose: o.ConnectionClose}
	for p, h := range o.Admin {
		cfg.Admin[p] = h
	}
	var rec *clients.Recorder
	var srv atomic.Pointer[server.Server]
	if !o.NoClientReport {
		window := f.Window()
		if window == 0 {
			window = -1 // the fleet has no window: skew is reported, not judged
		}
		cc := clients.Config{Window: window, Location: f.Location(), Now: o.Now, Phases: o.ClientPhases, Trusted: true}
		if o.ClientPhases == nil {
			// A scenario's steps and the faults set by hand, each request
			// under the one that answered it.
			cc.Faults = func() []clients.Fault {
				var steps []clients.Fault
				if o.ClientFaults != nil {
					steps = o.ClientFaults()
				}
				hand := handFaults(srv.Load())
				if len(steps) == 0 {
					return hand
				}
				return append(steps, hand...)
			}
		}
		rec = clients.New(cc)
		cfg.Observer = rec
		cfg.Admin["GET /_sim/clients"] = rec.Handler()
		cfg.Admin["DELETE /_sim/clients"] = rec.Handler()
	}
	durability, err := redisstore.ParseDurability(o.StoreDurability)
	if err != nil {
		return nil, err
	}
	url, err := storeURL(o.StoreURL, o.StateFile)
	if err != nil {
		return nil, err
	}
	if o.SentinelPassword != "" && !strings.HasPrefix(url, redisstore.SentinelScheme) {
		return nil, errors.New("a Sentinel password is for a redis+sentinel:// store only")
	}
	open, err := Backend(url)
	if err != nil {
		return nil, fmt.Errorf("--store: %w; give %s", err, StoreForms)
	}
	b, err := open(context.Background(), server.BackendOptions{URL: url, SentinelPassword: o.SentinelPassword, Fleet: f, Reset: o.StoreReset,
		Replicated: durability == redisstore.DurabilityReplicated, Replica: o.Replica,
		MessageLimit: o.MessageLimit, JournalSize: o.JournalSize, Window: a.Window, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	if o.EffectDelay > 0 {
		if b, err = lagged(b, url, f, o); err != nil {
			return nil, err
		}
	}
	cfg.Backend = b
	if rec != nil && b.ClientReports != nil {
		rec.Share(b.ClientReports, o.Replica)
	}
	sim := &Simulator{Fleet: f, Store: b.Local, Server: server.New(cfg), Backend: b, Clients: rec, log: o.Logger}
	srv.Store(sim.Server)
	return sim, nil
}

// handFaults are the faults set by hand on s, none before s is made.
func handFaults(s *server.Server) []clients.Fault {
	if s == nil {
		return nil
	}
	return s.HandFaults()
}

// lagged puts a LaggingState before the backend's state: the changes show
// at the admin reads o.EffectDelay after the answer at most. It keeps a
// second copy of the state, of the fleet as loaded: only the state of
// memory: starts so.
func lagged(b server.Backend, url string, f *fleet.Fleet, o Options) (server.Backend, error) {
	if url != "" && url != "memory:" {
		if b.Close != nil {
			b.Close()
		}
		return b, errors.New("--effect-delay keeps a second copy of the fleet's state in this process: it takes the state in memory only (no --store or --state-file)")
	}
	shown := store.New(f, o.MessageLimit)
	lag := server.NewLaggingState(b.State, shown, o.EffectDelay)
	b.State = lag // Local stays the state itself, for what writes it directly
	closeBackend := b.Close
	b.Close = func() error {
		lag.Stop()
		if closeBackend != nil {
			return closeBackend()
		}
		return nil
	}
	return b, nil
}

// storeURL is the --store URL with --state-file PATH, its alias for
// file:PATH, folded in.
func storeURL(url, stateFile string) (string, error) {
	switch {
	case stateFile == "" || url == persist.Scheme+stateFile:
		return url, nil
	case url == "":
		return persist.Scheme + stateFile, nil
	case strings.HasPrefix(url, persist.Scheme):
		return "", errors.New("--store file:PATH and --state-file name two different files: give one")
	}
	return "", errors.New("--store " + redisstore.Redact(url) + " and --state-file exclude each other: the state is kept in one place")
}

// Start builds a simulator and opens it on addr ("127.0.0.1:0" for any free
// loopback port).
func Start(addr string, o Options) (*Simulator, error) {
	s, err := Build(o)
	if err != nil {
		return nil, err
	}
	if err := s.Open(addr); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Open listens on addr and serves in the background.
func (s *Simulator) Open(addr string) error { return s.Server.Open(addr) }

// URL is the base URL clients use.
func (s *Simulator) URL() string { return s.Server.URL() }

// Close shuts the server down, letting requests in flight finish, then
// closes the backend (a state file, the Redis connections). A store that
// no longer answers (Redis gone) is not waited on: the client report's
// last fold and the journal entries still queued could not be saved, and
// waiting for each to time out would only hold a rollout or a drain.
func (s *Simulator) Close() error {
	// Asked while the requests in flight finish, which with the store
	// gone is as long as each waits for its 503.
	reachable := make(chan error, 1)
	if s.Backend.Reachable != nil {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), reachableWait)
			defer cancel()
			reachable <- s.Backend.Reachable(ctx)
		}()
	}
	err := s.Server.Close()
	closeBackend := s.Backend.Close
	if s.Backend.Reachable != nil {
		if rerr := <-reachable; rerr != nil {
			if s.log != nil {
				s.log.Warn("stopping without saving the client report's last counts or the journal entries still queued: the store does not answer", "error", rerr.Error())
			}
			if s.Clients != nil {
				s.Clients.Abandon()
			}
			closeBackend = s.Backend.Abandon
		}
	}
	if s.Clients != nil {
		s.Clients.Close() // its last fold, before the store closes
	}
	if closeBackend != nil {
		if berr := closeBackend(); err == nil {
			err = berr
		}
	}
	return err
}

// reachableWait is how long Close asks a store whether it answers.
const reachableWait = 500 * time.Millisecond
