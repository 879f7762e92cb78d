// Package gwsimtest runs gwsim inside a Go app's own tests, as
// net/http/httptest does for HTTP servers and miniredis for Redis: Start
// gives each test its own simulator of the Gateway Device Management
// Interface, in this process, on a free loopback port, gone when the test
// ends.
//
//	func TestDimmer(t *testing.T) {
//		t.Parallel()
//		sim := gwsimtest.Start(t) // the demo fleet
//		cred := sim.Credentials()
//		app := myapp.New(sim.URL, cred.APIKey, cred.Secret, cred.AccountID, cred.MAC)
//		if err := app.Dim(hallSN, 30); err != nil {
//			t.Fatal(err)
//		}
//		if d, ok := sim.Device(cred.MAC, hallSN); !ok || d.State["dimming"] != 30.0 {
//			t.Errorf("dimming %v", d.State["dimming"])
//		}
//		sim.AssertClean(t) // the app broke no rule of the interface
//	}
//
// The runnable examples (Example, ExampleServer_GatewayOffline,
// ExampleServer_Report, ExampleServer_PlayScenario) are the same with an
// app's own HTTP client written out, and ExampleServer_surface uses every
// name the package exports; go test runs them, and
// TestAppModuleUsesGwsimtest compiles the snippet above and the one of
// docs/app-testing.md in an app module of their own.
//
// A Server gives its URL and the credentials of its fleet, a signing
// Client, Go calls that read and set device state and read the gateways'
// messages, fault injection (SetFaults, GatewayOffline, DeviceUnreachable,
// ErrorRate...), scenarios (PlayScenario), and the client report with
// assertions on it (AssertClean, AssertJudgement). The answers are gwsim's
// own: the same validation, signs and errors as gwsim serve.
//
// The package holds no state of its own: every Server is independent, so
// tests that each Start one may run with t.Parallel. Start takes a
// testing.TB (tests, benchmarks, fuzz targets); where there is none, as in
// a runnable example, New and Close do the same by hand.
//
// Its API is stable: what is exported here keeps its meaning across
// releases of gwtools; additions come as new functions and Options. It
// names only its own types and the standard library's, never those of
// gwtools' other packages, which promise nothing: a fleet is given as a
// fleet file or its bytes, whose format (docs/fleet.md) is part of the
// promise.
package gwsimtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/scenario"
	"github.com/gwdmi/gwtools/simulator/server"
)

// Option configures a Server.
type Option func(*config) error

type config struct {
	fleet         *fleet.Fleet
	adminToken    string
	rejectReplays bool
	rateLimit     int
	now           func() time.Time
	logger        *slog.Logger
	// The latitudes of a faithful service taken (docs/usage.md,
	// Latitudes): see WithMessageCap and WithLatitudes.
	messageCap      int
	latitudes       server.Latitudes
	connectionClose bool
}

// WithFleetFile simulates the fleet of a fleet file (YAML or JSON,
// docs/fleet.md) instead of the demo fleet.
func WithFleetFile(path string) Option {
	return func(c *config) error {
		f, err := fleet.Load(path)
		if err != nil {
			return fmt.Errorf("gwsimtest: WithFleetFile: %w", err)
		}
		c.fleet = f
		return nil
	}
}

// WithFleetYAML simulates the fleet of these bytes, written as a fleet
// file (YAML or JSON, docs/fleet.md), instead of the demo fleet: for a
// fleet a test writes out. An error names the line and the key.
func WithFleetYAML(b []byte) Option {
	b = bytes.Clone(b)
	return func(c *config) error {
		f, err := fleet.Parse(b)
		if err != nil {
			return fmt.Errorf("gwsimtest: WithFleetYAML: %w", err)
		}
		c.fleet = f
		return nil
	}
}

// WithAdminToken puts the admin API (/_sim/) behind this bearer token, as
// gwsim serve --admin-token does. The Server's own calls carry it.
func WithAdminToken(token string) Option {
	return func(c *config) error { c.adminToken = token; return nil }
}

// WithRejectReplays refuses a request whose envelope was seen before, as
// gwsim serve --reject-replays does.
func WithRejectReplays() Option {
	return func(c *config) error { c.rejectReplays = true; return nil }
}

// WithRateLimit answers 429 with Retry-After beyond n requests a second
// per client, as gwsim serve --rate-limit does.
func WithRateLimit(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return errors.New("gwsimtest: WithRateLimit: n must be 0 (none) or more")
		}
		c.rateLimit = n
		return nil
	}
}

// WithMessageCap keeps the last n messages of each gateway, the oldest
// dropping out, as gwsim serve --message-cap does (a faithful service may
// keep any n of at least 1).
func WithMessageCap(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return errors.New("gwsimtest: WithMessageCap: n must be 1 or more")
		}
		c.messageCap = n
		return nil
	}
}

// A Latitude is a freedom of a faithful service the simulator takes
// (CONTRACT's preamble), to test an app against a service that does.
type Latitude int

const (
	// ConnectionClose closes the connection after every answer, which
	// says Connection: close (gwsim serve --connection-close).
	ConnectionClose Latitude = iota + 1
	// PrettyAnswers lays every operation's answer out over indented
	// lines, JSON and XML alike (--pretty).
	PrettyAnswers
	// OwnDetails answers errors in the simulator's own words, with its own
	// code and field wherever neither text states them (--own-details).
	OwnDetails
)

// WithLatitudes takes these latitudes of a faithful service.
func WithLatitudes(ls ...Latitude) Option {
	return func(c *config) error {
		for _, l := range ls {
			switch l {
			case ConnectionClose:
				c.connectionClose = true
			case PrettyAnswers:
				c.latitudes.Pretty = true
			case OwnDetails:
				c.latitudes.OwnDetails = true
			default:
				return fmt.Errorf("gwsimtest: WithLatitudes: no latitude %d", l)
			}
		}
		return nil
	}
}

// WithClock makes the simulator read time from now: the timestamp window
// and the client report's clock judgement use it (a test of an app's
// clock handling).
func WithClock(now func() time.Time) Option {
	return func(c *config) error { c.now = now; return nil }
}

// WithLogger sends gwsim's log there (by default it is discarded).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error { c.logger = l; return nil }
}

// Server is one running simulator. Its methods are safe for concurrent
// use.
type Server struct {
	// URL is the base URL an app sends to: http://127.0.0.1:PORT.
	URL string
	// AdminToken is the admin API's token ("" when open).
	AdminToken string

	fleet    *fleet.Fleet
	cred     Credentials
	accounts map[string]string // mac -> account
	sim      *simulator.Simulator
	log      *slog.Logger
	http     *http.Client

	mu      sync.Mutex
	player  *scenario.Player
	closed  bool
	closeMu sync.Once
	cerr    error
}

// Credentials are what an app needs to call the simulator: the fleet's
// first account with a key, that key and its secret, and the account's
// first gateway.
type Credentials struct {
	AccountID string // myservice_id
	APIKey    string
	Secret    string
	MAC       string // the gateway
}

// New starts a simulator on a free loopback port; Close stops it. Tests
// use Start, which closes it when the test ends.
func New(opts ...Option) (*Server, error) {
	var c config
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if c.fleet == nil {
		c.fleet = fleet.Demo()
	}
	if c.logger == nil {
		c.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{fleet: c.fleet, AdminToken: c.adminToken, accounts: map[string]string{}, log: c.logger,
		http: &http.Client{Timeout: 30 * time.Second}}
	for _, a := range c.fleet.Accounts {
		for _, g := range a.Gateways {
			s.accounts[strings.ToLower(g.MAC)] = a.ID
		}
	}
	if t, err := c.fleet.Target(); err == nil {
		s.cred = Credentials{AccountID: t.AccountID, APIKey: t.Key.Key, Secret: t.Key.Secret, MAC: t.MAC}
	}
	sim, err := simulator.Start("127.0.0.1:0", simulator.Options{Fleet: c.fleet, AdminToken: c.adminToken,
		RejectReplays: c.rejectReplays, RateLimit: c.rateLimit, Now: c.now, Logger: c.logger,
		MessageLimit: c.messageCap, Latitudes: c.latitudes, ConnectionClose: c.connectionClose,
		Replica: "gwsimtest", ClientFaults: s.faults})
	if err != nil {
		return nil, fmt.Errorf("gwsimtest: %w", err)
	}
	s.sim, s.URL = sim, sim.URL()
	return s, nil
}

// Start starts a simulator for the test and stops it when the test (and
// its subtests) end. It fails the test when the simulator cannot start.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("gwsimtest: closing the simulator: %v", err)
		}
	})
	return s
}

// Close stops the scenario, if one plays, and the simulator, letting
// requests in flight finish. Calling it again does nothing.
func (s *Server) Close() error {
	s.closeMu.Do(func() {
		s.mu.Lock()
		p := s.player
		s.closed = true
		s.mu.Unlock()
		if p != nil {
			p.Stop()
		}
		s.http.CloseIdleConnections()
		s.cerr = s.sim.Close()
	})
	return s.cerr
}

// Credentials are the fleet's first account, key, secret and gateway.
func (s *Server) Credentials() Credentials { return s.cred }

// Handler is the simulator's whole HTTP handler (the interface, the admin
// API and the dashboard), for tests that call it without the network.
func (s *Server) Handler() http.Handler { return s.sim.Server.Handler() }

// Device is one device as the simulator holds it now.
type Device struct {
	SN    string
	Type  string
	Name  string
	State map[string]any // canonical field names; numbers are float64
}

// Device reads a device's type, name and state; ok is false when the
// gateway or the device is not in the fleet.
func (s *Server) Device(mac, sn string) (Device, bool) {
	d, ok := s.sim.Store.Device(strings.ToLower(mac), sn)
	if !ok {
		return Device{}, false
	}
	st := make(map[string]any, len(d.State))
	for k, v := range d.State {
		st[k] = number(v)
	}
	return Device{SN: d.SN, Type: d.Type, Name: d.Name, State: st}, true
}

// number makes every number a float64, as encoding/json reads them, so
// that a test compares with 30.0 whatever the type held.
func number(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float32:
		return float64(x)
	}
	return v
}

// SetState sets some fields of a device's state (canonical names, as a
// fleet file writes them: "dimming", "cooling_point"), as if the device
// had changed by itself: nothing is sent, journaled or counted. A value
// the device type refuses is an error naming the field, and changes
// nothing.
func (s *Server) SetState(mac, sn string, state map[string]any) error {
	mac = strings.ToLower(mac)
	d, ok := s.sim.Store.Device(mac, sn)
	if !ok {
		return fmt.Errorf("gwsimtest: no device %s on gateway %s", sn, mac)
	}
	t, _ := device.LookupType(d.Type)
	var settings []device.Setting
	for k, raw := range state {
		f, i, ok := t.Field(k)
		if !ok {
			return fmt.Errorf("gwsimtest: %s is not a field of %s", k, device.A(t.Name))
		}
		var v device.Value
		switch x := raw.(type) {
		case string:
			v = device.Str(x)
		case int:
			v = device.Value{Text: strconv.Itoa(x), Kind: device.Number}
		case int64:
			v = device.Value{Text: strconv.FormatInt(x, 10), Kind: device.Number}
		case float64:
			v = device.Value{Text: strconv.FormatFloat(x, 'f', -1, 64), Kind: device.Number}
		default:
			return fmt.Errorf("gwsimtest: %s: %v (%T) is neither a string nor a number", k, raw, raw)
		}
		set, derr := f.Parse(i, v)
		if derr != nil {
			return fmt.Errorf("gwsimtest: %s: %s", k, derr.Message)
		}
		settings = append(settings, set)
	}
	if derr := s.sim.Store.Command(s.accounts[mac], mac, sn, t, settings); derr != nil {
		return fmt.Errorf("gwsimtest: %s", derr.Message)
	}
	return nil
}

// Message is one message a gateway received (send message).
type Message struct {
	Time  time.Time // when the simulator took it
	Type  string    // message_type
	Value string    // message_value: SETTING=NUMBER
}

// Messages is the message log of a gateway, oldest first; ok is false
// when the fleet has no such gateway.
func (s *Server) Messages(mac string) ([]Message, bool) {
	msgs, _, ok := s.sim.Store.Messages(strings.ToLower(mac))
	if !ok {
		return nil, false
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = Message{Time: m.Time, Type: m.Type, Value: m.Value}
	}
	return out, true
}

// Reset puts every device back as the fleet file has it and empties the
// message logs (POST /_sim/reset); the faults and the client report stay.
func (s *Server) Reset() { s.sim.Store.Reset() }

// Request is one request the simulator answered, from its journal.
type Request struct {
	Time   time.Time // when it arrived
	Method string    // POST
	Path   string    // /v1/services/gateway/command
	Format string    // "json" or "xml"; "" when neither could be read
	// Status is the answer's HTTP status; Code and Field are its error's,
	// when it is one.
	Status      int
	Code, Field string
	// MAC and SN are the gateway and device it named, when it could be
	// read that far.
	MAC, SN string
	// App is the api_key that sent it, masked as the client report names
	// it (ClientReport.Client: its first four characters and "…").
	App string
	// Duration is how long the simulator took to answer.
	Duration time.Duration
}

// Requests are the requests answered so far, oldest first (the journal:
// the newest it keeps).
func (s *Server) Requests() []Request {
	entries, _, _ := s.sim.Server.Journal().Read(0)
	out := make([]Request, len(entries))
	for i, e := range entries {
		out[i] = Request{Time: e.Time, Method: e.Method, Path: e.Path, Format: e.Format, Status: e.Status, Code: e.Code,
			Field: e.Field, MAC: e.MAC, SN: e.SN, App: e.App, Duration: time.Duration(e.DurationUS) * time.Microsecond}
	}
	return out
}
