package server

import (
	"context"
	"net/http"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Health says whether the store can serve. The in-process stores always
// can (MemoryHealth); a shared one (package redisstore) may be out of
// reach, or back without the fleet it held.
type Health interface {
	// Check asks the store now: nil when it serves, or why it cannot, as
	// a CodeStorageUnavailable error whose message says what to do.
	Check(ctx context.Context) *device.Error
	// Name is the store's kind as /_sim/health reports it ("redis"), or
	// "" for the process's own memory.
	Name() string
}

// WriteHealth is what a Health whose store can refuse changes while it
// still answers reads also tells: whether a change would be accepted now.
// package redisstore's does: a Redis that is a read-only replica (no
// primary), a primary that refuses writes, or, with --store-durability
// replicated, no replica that confirms a write.
type WriteHealth interface {
	// CheckWrite asks the store now whether it takes a change: nil when
	// it does, or why not, as a CodeStorageUnavailable error.
	CheckWrite(ctx context.Context) *device.Error
}

// MemoryHealth is the Health of a store in the process's own memory.
type MemoryHealth struct{}

// Check implements Health: the process's memory is always there.
func (MemoryHealth) Check(context.Context) *device.Error { return nil }

// Name implements Health.
func (MemoryHealth) Name() string { return "" }

// healthCheckTimeout bounds one Check.
const healthCheckTimeout = 2 * time.Second

// DefaultHealthEvery is how often the server asks the store's health in
// the background, to log when it is lost and when it is back.
const DefaultHealthEvery = 500 * time.Millisecond

type healthAnswer struct {
	Status string `json:"status"`
	Store  string `json:"store,omitempty"`
	// Reason says why the store cannot serve, and what to do.
	Reason string `json:"reason,omitempty"`
}

// checkStore asks the store whether it serves reads and whether it takes
// changes, and keeps the answers for the metrics (gwsim_redis_up,
// gwsim_store_writable). It returns the first reason it cannot serve a
// change, or nil.
func (s *Server) checkStore(ctx context.Context) *device.Error {
	derr := s.healthOf.Check(ctx)
	s.storeDown.Store(derr != nil)
	if derr == nil {
		if wh, ok := s.healthOf.(WriteHealth); ok {
			derr = wh.CheckWrite(ctx)
		}
	}
	s.storeUnwritable.Store(derr != nil)
	return derr
}

// health answers 200 {"status":"ok"}, or, whenever a change would be
// refused for the store's sake (it cannot be reached, no longer holds the
// fleet, has no primary, or no replica confirms a write under
// --store-durability replicated), 503 {"status":"degraded","reason":…} so
// that a readiness probe takes the replica out of a load balancer until
// it can.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), healthCheckTimeout)
	defer cancel()
	name := s.healthOf.Name()
	if derr := s.checkStore(ctx); derr != nil {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, healthAnswer{Status: "degraded", Store: name, Reason: derr.Message})
		return
	}
	writeJSON(w, http.StatusOK, healthAnswer{Status: "ok", Store: name})
}

// readyAnswer is /_sim/ready's body.
type readyAnswer struct {
	Status string `json:"status"`
	// Storage is "ok", or "unavailable" while requests that need the
	// store answer 503 storage_unavailable with Retry-After (the last
	// check's verdict: /_sim/health says why).
	Storage string `json:"storage"`
}

// ready answers 200 whenever this process answers requests, the store's
// state aside: a replica that can only answer 503 storage_unavailable
// with Retry-After still gives apps that documented answer, so it stays
// behind its Service (a readiness probe on /_sim/health would take every
// replica out at once when the shared store is lost, and apps would get
// connection errors instead). It asks the store nothing, so it answers at
// once whatever the store does; the storage field is the last check's.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	a := readyAnswer{Status: "ready", Storage: "ok"}
	if s.storeUnwritable.Load() {
		a.Storage = "unavailable"
	}
	writeJSON(w, http.StatusOK, a)
}

// read wraps an admin read: while the store cannot serve, it answers 503
// with the reason rather than state the store does not hold.
func (s *Server) read(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), healthCheckTimeout)
		derr := s.healthOf.Check(ctx)
		cancel()
		s.storeDown.Store(derr != nil)
		if derr != nil {
			s.storeUnwritable.Store(true)
			adminError(w, derr)
			return
		}
		next(w, r)
	}
}

// watchHealth asks the store's health (reads and changes) every interval
// and logs each change once: lost (warn, with the reason), another reason
// (warn), and back (info, with how long it lasted: from the first request
// refused for the store's sake, or the first check that failed, whichever
// came first).
func (s *Server) watchHealth(every time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(every)
	defer t.Stop()
	var down time.Time // zero while the store serves
	var reason string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), healthCheckTimeout)
		asked := time.Now()
		derr := s.checkStore(ctx)
		cancel()
		switch {
		case derr != nil && down.IsZero():
			down, reason = asked, derr.Message
			if at := s.refusedAt.Load(); at != 0 && at < down.UnixNano() {
				down = time.Unix(0, at)
			}
			s.log.Warn("storage unavailable: requests that need it answer 503 storage_unavailable", "store", s.healthOf.Name(), "reason", reason)
		case derr != nil && derr.Message != reason:
			reason = derr.Message
			s.log.Warn("storage still unavailable, for another reason", "store", s.healthOf.Name(), "reason", reason,
				"for", time.Since(down).Round(time.Millisecond).String())
		case derr == nil && !down.IsZero():
			s.log.Info("storage available again", "store", s.healthOf.Name(), "unavailable_for", time.Since(down).Round(time.Millisecond).String())
			down, reason = time.Time{}, ""
		}
		if derr == nil {
			// A refusal seen while the store serves was a passing one:
			// it does not start the next outage.
			s.refusedAt.Store(0)
		}
		select {
		case <-stop:
			return
		case <-t.C:
			select {
			case <-stop: // both ready: stopping wins
				return
			default:
			}
		}
	}
}
