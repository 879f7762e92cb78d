// Package server is the simulator's HTTP side: the three operations of the
// interface, the admin API under /_sim/ and its dashboard, the journal and
// fault injection. It maps domain error codes to status codes in one table
// (status.go) and never invents codes of its own.
package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/internal/metrics"
	"github.com/gwdmi/gwtools/simulator/store"
)

// DefaultMaxBody is the request body limit of CONTRACT 2.
const DefaultMaxBody = 64 << 10

// Config is what a Server serves. Fields are read by New and not changed
// afterwards.
type Config struct {
	// Store is the state when Backend.State is nil: MemoryState(Store).
	Store *store.Store
	Auth  *auth.Authenticator
	// Logger receives start-up lines, warnings, errors and a summary of
	// the requests every SummaryEvery; one line per request only with
	// AccessLog or when it takes debug (never a secret or a sign);
	// slog.Default() when nil.
	Logger *slog.Logger
	// AccessLog logs one line per request at info (5xx at warn).
	AccessLog bool
	// SummaryEvery is how often the summary of the requests answered is
	// logged at info (DefaultSummaryEvery when 0; below 0: never). An idle
	// interval logs nothing.
	SummaryEvery time.Duration
	// AdminToken, when set, is required as "Authorization: Bearer <token>"
	// on every /_sim/ call.
	AdminToken string
	// MaxBody bounds request bodies (DefaultMaxBody when 0).
	MaxBody int64
	// JournalSize bounds the journal (DefaultJournalSize when 0).
	JournalSize int
	// ShutdownTimeout is how long Close waits for requests in flight.
	ShutdownTimeout time.Duration
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are the
	// http.Server's (0: DefaultReadHeaderTimeout and the others below): a
	// client that sends its headers or body too slowly is cut off.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// RejectReplays answers 401 replayed_request to an api_key, timestamp
	// and sign seen before while the timestamp is in the window.
	RejectReplays bool
	// RateLimit, when above 0, allows each client IP that many operation
	// requests a second (burst the same); beyond: 429 rate_limited with
	// Retry-After.
	RateLimit int
	// Backend is where gwsim keeps what changes; each part left nil is
	// kept in this process (the state in Store). A shared backend
	// (package redisstore) sets them all.
	Backend Backend
	// HealthNeedsToken puts /_sim/health and /_sim/ready behind
	// AdminToken too; otherwise they stay open for probes.
	HealthNeedsToken bool
	// TrustedProxies are the balancers whose Forwarded or X-Forwarded-For
	// names the client that the guess, sign-in and rate limiters count
	// (ParseTrustedProxies); none: the connection's peer.
	TrustedProxies []netip.Prefix
	// AdminOff turns the admin API off (gwsim serve --admin off): every
	// admin call, the dashboard and /metrics answer 404 admin_off; only
	// /_sim/health and /_sim/ready (unless HealthNeedsToken) stay, for probes.
	AdminOff bool
	// HealthEvery is how often the background check runs
	// (DefaultHealthEvery when 0).
	HealthEvery time.Duration
	// Replica names this process in the events it publishes and on the
	// dashboard (for example host-pid, or gwsim's --replica-name).
	Replica string
	// OpenForms is how the forms neither text decides are read (gwsim
	// serve --open-forms): refused (the zero value) or accepted.
	OpenForms device.OpenForms
	// Observer, when set, is told of every operation request and its
	// answer (the client report, package clients).
	Observer Observer
	// WrapOperations, when set, wraps the operations' handlers, inside
	// the Observer: a recorded answer can be given in gwsim's place
	// (package cassette).
	WrapOperations func(http.Handler) http.Handler
	// Admin holds further admin calls by ServeMux pattern
	// ("GET /_sim/clients"), served behind AdminToken like the others.
	Admin map[string]http.Handler
	// AllowedHosts are the Host names /_sim/ answers besides IP
	// addresses, localhost and the name Open listens on (guard.go):
	// "name", ".example.com" for a domain, "*" for any.
	AllowedHosts []string
	// MaxEventsClients bounds the open GET /_sim/events streams
	// (DefaultMaxEventsClients when 0); beyond: 503.
	MaxEventsClients int
	// NoMetrics leaves out the Prometheus metrics (GET /metrics, behind
	// AdminToken like the admin calls; package metrics).
	NoMetrics bool
	// Latitudes are the freedoms of a faithful service gwsim takes on
	// demand: answers laid out over lines, its own wording, codes and
	// fields where no sentence states them.
	Latitudes Latitudes
	// ConnectionClose closes the connection after every answer, which
	// says so (Connection: close): a faithful service may (CONTRACT's
	// preamble).
	ConnectionClose bool
	// ReplayNote, when set, says the operations may be answered from a
	// recording (gwsim serve --replay): the dashboard shows it in its
	// header, and the journal marks each answer given so.
	ReplayNote string
}

// Server serves the interface and the admin API on one listener.
type Server struct {
	// fresh are the connections that have not yet sent a request
	// (http.StateNew), for Close.
	freshMu sync.Mutex
	fresh   map[net.Conn]struct{}
	// freshN is len(fresh), read without the lock: once every
	// connection has sent a request, a request's state changes (active,
	// idle) cost one atomic load, not a lock every connection shares.
	freshN atomic.Int64

	cfg     Config
	log     *slog.Logger
	journal JournalStore
	store   StateStore
	faults  faultState
	// hand keeps the faults set by hand for the client report.
	hand handFaults
	// exchanges keeps the last requests and answers, for the dashboard's
	// journal rows; apps the masked api_keys the journal names.
	exchanges exchangeRing
	apps      appNames
	handler   http.Handler
	replays   ReplayGuard // nil unless RejectReplays
	rates     RateCounter // nil unless RateLimit > 0
	// faultStore keeps the faults where every replica reads them.
	faultStore FaultStore
	access     accessLog
	ops        []opRoute // the operations' exact paths
	counts     counters
	// stopSummary ends the summary goroutine Open starts; summaryDone is
	// closed when it has.
	stopSummary, summaryDone chan struct{}
	changes                  Changes
	sessions                 *sessions
	healthOf                 Health
	// stopHealth ends the health watch Open starts; healthDone is closed
	// when it has (so that it never asks a store closed after Close).
	stopHealth, healthDone chan struct{}
	bearer                 [sha256.Size]byte // SHA-256 of "Bearer <AdminToken>"
	closing                chan struct{}     // closed when the server shuts down

	ln  net.Listener
	srv *http.Server
	// guard keeps other sites out of /_sim/ (guard.go).
	guard Guard
	// signIns slows the guessing of the admin token (guard.go).
	signIns *SignInLimiter
	// guesses slows the guessing of the admin token in Authorization
	// headers (guesses.go).
	guesses *BearerLimiter
	// streams counts the open event streams (events.go).
	streams atomic.Int32

	stopPoll chan struct{}
	polled   []byte // the faults JSON last read from faultStore

	// metrics are the Prometheus metrics (nil with Config.NoMetrics);
	// storeDown is set while the store cannot be read (the background
	// health check fails), storeUnwritable while a change would be
	// refused for the store's sake (it cannot be read, or cannot take a
	// write as --store-durability asks).
	metrics         *metrics.Server
	storeDown       atomic.Bool
	storeUnwritable atomic.Bool
	// refusedAt is when a request was first answered 503
	// storage_unavailable since the health check last passed (UnixNano;
	// 0: none), so that an outage's logged duration starts there.
	refusedAt atomic.Int64
}

type opRoute struct {
	path string
	h    http.Handler
}

// New builds a server; Open starts it listening.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SummaryEvery == 0 {
		cfg.SummaryEvery = DefaultSummaryEvery
	}
	if cfg.HealthEvery <= 0 {
		cfg.HealthEvery = DefaultHealthEvery
	}
	if cfg.MaxEventsClients <= 0 {
		cfg.MaxEventsClients = DefaultMaxEventsClients
	}
	s := &Server{cfg: cfg, log: cfg.Logger, bearer: sha256.Sum256([]byte("Bearer " + cfg.AdminToken)),
		closing: make(chan struct{}), signIns: NewSignInLimiter().Behind(cfg.TrustedProxies)}
	s.useBackend(cfg.Backend)
	s.access = newAccessLog(cfg, cfg.Logger)
	s.faults.set(noFaults())
	if !cfg.NoMetrics {
		s.metrics = metrics.NewServer(s.gauges())
		admin := make(map[string]http.Handler, len(cfg.Admin)+1)
		maps.Copy(admin, cfg.Admin)
		admin["GET /metrics"] = s.metrics.Handler()
		s.cfg.Admin = admin
	}
	mux := http.NewServeMux()
	for _, op := range device.Operations {
		h := s.operation(op)
		if cfg.WrapOperations != nil {
			h = s.replayed(op, cfg.WrapOperations(h))
		}
		if cfg.Observer != nil {
			h = s.observed(h)
		}
		mux.Handle(op.Path(), h)
		s.ops = append(s.ops, opRoute{op.Path(), h})
	}
	s.adminRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		e := device.Errorf(device.CodeNotFound, "", "no operation at %s; the operations are POST %s, %s and %s",
			truncate(r.URL.Path, 200), device.SendCommand.Path(), device.SendMessage.Path(), device.UpdateName.Path())
		f := formatOf(r)
		s.fail(w, orJSON(f), e)
		s.record(r, 0, time.Now(), f, http.StatusNotFound, e, nil, 0)
	})
	s.guard = Guard{AllowedHosts: cfg.AllowedHosts, Log: cfg.Logger}
	s.handler = s.cleanPaths(s.guard.Wrap(mux))
	return s
}

// useBackend takes the backend's parts, and the in-process one for each
// part it leaves nil.
func (s *Server) useBackend(b Backend) {
	cfg := s.cfg
	if b.State == nil {
		b.State = MemoryState(cfg.Store)
	}
	if b.Journal == nil {
		b.Journal = NewJournal(cfg.JournalSize)
	}
	if b.Replays == nil && cfg.RejectReplays {
		b.Replays = memReplays{newReplayCache(cfg.Auth, DefaultReplayCap, func() {
			s.log.Warn("replay protection is full: the oldest requests are forgotten early", "cap", DefaultReplayCap)
		})}
	}
	if b.Rates == nil && cfg.RateLimit > 0 {
		b.Rates = memRates{newRateLimiter(cfg.RateLimit, DefaultRateLimitClients, nil)}
	}
	if b.Faults == nil {
		b.Faults = memFaults{}
	}
	if b.Sessions == nil {
		b.Sessions = NewMemorySessions(cfg.Now)
	}
	if b.Changes == nil {
		b.Changes = NewHub()
	}
	if b.Health == nil {
		b.Health = MemoryHealth{}
	}
	s.store, s.journal, s.replays, s.rates, s.faultStore = b.State, b.Journal, b.Replays, b.Rates, b.Faults
	s.guesses = NewBearerLimiter(b.Guesses, cfg.Now).Behind(s.cfg.TrustedProxies)
	s.sessions = newSessions(cfg.AdminToken, cfg.Now, b.Sessions)
	s.changes, s.healthOf = b.Changes, b.Health
}

// cleanPaths answers 404 to a path with empty, "." or ".." segments
// (also when percent-encoded) rather than let ServeMux redirect it to its
// clean form: no call reaches a handler by a detour such as
// /_sim/gateways/../state.
func (s *Server) cleanPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if r.URL.RawPath == "" {
			// The operations, the requests that come by the thousand, go
			// straight to their handler: the same one ServeMux would pick
			// for these exact paths, without its matching.
			for i := range s.ops {
				if s.ops[i].path == p {
					s.ops[i].h.ServeHTTP(w, r)
					return
				}
			}
		}
		if (strings.Contains(p, "//") || strings.Contains(p, "/.")) && strings.HasPrefix(p, "/") && path.Clean(p) != strings.TrimSuffix(p, "/") && p != "/" {
			e := device.Errorf(device.CodeNotFound, "", "no operation or admin call at %s: a path must not have empty, . or .. segments", truncate(p, 200))
			if strings.HasPrefix(p, "/_sim/") {
				adminError(w, e)
				return
			}
			f := formatOf(r)
			s.fail(w, orJSON(f), e)
			s.record(r, 0, time.Now(), f, http.StatusNotFound, e, nil, 0)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Handler is the server's whole HTTP handler, for tests and embedding.
func (s *Server) Handler() http.Handler { return s.handler }

// Journal is the server's request journal (shared by the replicas on a
// shared Backend).
func (s *Server) Journal() JournalStore { return s.journal }

// Timeouts of the HTTP server when Config leaves them 0.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 15 * time.Second
	// DefaultWriteTimeout is long enough for the largest injected latency.
	DefaultWriteTimeout = MaxLatency + 30*time.Second
	DefaultIdleTimeout  = 60 * time.Second
)

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Open listens on addr ("127.0.0.1:0" picks a free port) and serves in the
// background; a taken port fails here, at once.
func (s *Server) Open(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if host, _, err := net.SplitHostPort(addr); err == nil {
		s.guard.ListenHost = host
	}
	ln = noFiveXXListener{&sentListener{Listener: ln}}
	s.startFaultPoll()
	s.stopHealth, s.healthDone = make(chan struct{}), make(chan struct{})
	go s.watchHealth(s.cfg.HealthEvery, s.stopHealth, s.healthDone)
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: orDefault(s.cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		ReadTimeout:       orDefault(s.cfg.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      orDefault(s.cfg.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       orDefault(s.cfg.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		ConnState:         s.trackFresh,
		ConnContext:       connContext,
	}
	if s.cfg.ConnectionClose {
		s.srv.SetKeepAlivesEnabled(false)
	}
	if s.cfg.SummaryEvery > 0 {
		s.stopSummary, s.summaryDone = make(chan struct{}), make(chan struct{})
		go s.summarize(s.cfg.SummaryEvery, s.stopSummary, s.summaryDone)
	}
	s.srv.RegisterOnShutdown(func() { close(s.closing) })
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve stopped", "err", err)
		}
	}()
	return nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// URL is the base URL of the server.
func (s *Server) URL() string { return "http://" + s.Addr() }

// Close stops accepting connections and waits up to ShutdownTimeout for
// requests in flight to finish.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	if s.stopSummary != nil {
		close(s.stopSummary)
		<-s.summaryDone
		s.stopSummary = nil
	}
	if s.stopPoll != nil {
		close(s.stopPoll)
		s.stopPoll = nil
	}
	if s.stopHealth != nil {
		close(s.stopHealth)
		<-s.healthDone
		s.stopHealth = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.srv.Shutdown(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(freshGrace):
		// A connection that has sent no request by now is one a client
		// dialed ahead and kept unused (an HTTP client's pool does):
		// Shutdown would wait 5 s for it before counting it idle.
		s.closeFresh()
		err = <-done
	}
	if err != nil {
		s.srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// freshGrace is how long Close lets a connection that has sent no request
// yet start one before it closes it.
const freshGrace = 200 * time.Millisecond

// trackFresh is the server's ConnState hook: it keeps the connections
// that have not sent a request yet.
func (s *Server) trackFresh(c net.Conn, st http.ConnState) {
	if st == http.StateIdle {
		if sc := sentOf(c); sc != nil {
			sc.idle()
		}
	}
	if st != http.StateNew && s.freshN.Load() == 0 {
		return
	}
	s.freshMu.Lock()
	defer s.freshMu.Unlock()
	if st == http.StateNew {
		if s.fresh == nil {
			s.fresh = map[net.Conn]struct{}{}
		}
		s.fresh[c] = struct{}{}
	} else {
		delete(s.fresh, c)
	}
	s.freshN.Store(int64(len(s.fresh)))
}

// closeFresh closes the connections that have not sent a request.
func (s *Server) closeFresh() {
	s.freshMu.Lock()
	defer s.freshMu.Unlock()
	for c := range s.fresh {
		c.Close()
		delete(s.fresh, c)
	}
	s.freshN.Store(0)
}

// bodyPool holds request body buffers: a body is read into one, decoded
// (the codec copies what it keeps) and the buffer returned, so that reading
// a body allocates nothing in the steady state.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// putBody returns a buffer of readBody's to the pool; nil is ignored, and
// a buffer grown beyond DefaultMaxBody is left to the collector.
func putBody(b *[]byte) {
	if b != nil && cap(*b) <= DefaultMaxBody {
		bodyPool.Put(b)
	}
}

// readBody reads at most MaxBody bytes. A body of known length is read
// into a pooled buffer returned as buf (give it back with putBody once the
// body is no longer used); a chunked one into a fresh slice (buf nil).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (body []byte, buf *[]byte, derr *device.Error) {
	if r.ContentLength > s.cfg.MaxBody {
		// Said at once rather than after waiting for a body that will not
		// be read; net/http then closes the connection.
		return nil, nil, device.Errorf(device.CodeBodyTooLarge, "", "the body is larger than %d bytes (Content-Length %d)", s.cfg.MaxBody, r.ContentLength)
	}
	var err error
	if r.ContentLength >= 0 {
		// net/http stops the body at Content-Length, which is within the
		// limit: no MaxBytesReader needed.
		buf = bodyPool.Get().(*[]byte)
		n := int(r.ContentLength)
		if cap(*buf) < n {
			*buf = make([]byte, n)
		}
		body = (*buf)[:n]
		_, err = io.ReadFull(r.Body, body)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) && n > 0 {
			putBody(buf)
			return nil, nil, device.Errorf(device.CodeMalformedBody, "", "the body ended before its Content-Length (%d bytes)", n)
		}
	} else {
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	}
	if err != nil {
		putBody(buf)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, nil, device.Errorf(device.CodeBodyTooLarge, "", "the body is larger than %d bytes", s.cfg.MaxBody)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, nil, device.Errorf(device.CodeTimeout, "", "the body did not arrive in time")
		}
		return nil, nil, device.Errorf(device.CodeMalformedBody, "", "the body could not be read: %v", err)
	}
	return body, buf, nil
}

// gauges are the metrics read at a scrape: the store's reachability (on
// Redis) and whether it takes changes, the event streams, the journal and
// the client report.
func (s *Server) gauges() metrics.Gauges {
	var g metrics.Gauges
	if s.healthOf.Name() == "redis" {
		g.RedisUp = func() bool { return !s.storeDown.Load() }
	}
	g.StoreWritable = func() bool { return !s.storeUnwritable.Load() }
	if c, ok := s.changes.(interface{ Subscribers() int }); ok {
		g.EventsClients = c.Subscribers
	}
	if j, ok := s.journal.(interface{ Len() int }); ok {
		g.JournalEntries = j.Len
	} else {
		g.JournalEntries = func() int {
			e, _, _ := s.journal.Read(0)
			return len(e)
		}
	}
	if a, ok := s.cfg.Observer.(interface{ Apps() int }); ok {
		g.ClientReportApps = a.Apps
	}
	return g
}

// Metrics is the server's Prometheus metrics (nil with Config.NoMetrics).
func (s *Server) Metrics() *metrics.Server { return s.metrics }
