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

// health answers 200 {"status":"ok"}, or, when the store cannot serve,
// 503 {"status":"degraded","reason":…} so that a readiness probe takes the
// replica out of a load balancer until it can.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), healthCheckTimeout)
	defer cancel()
	name := s.healthOf.Name()
	if derr := s.healthOf.Check(ctx); derr != nil {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, healthAnswer{Status: "degraded", Store: name, Reason: derr.Message})
		return
	}
	writeJSON(w, http.StatusOK, healthAnswer{Status: "ok", Store: name})
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
			adminError(w, derr)
			return
		}
		next(w, r)
	}
}

// watchHealth asks the store's health every interval and logs each change
// once: lost (warn, with the reason), another reason (warn), and back
// (info, with how long it lasted).
func (s *Server) watchHealth(every time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(every)
	defer t.Stop()
	var down time.Time // zero while the store serves
	var reason string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), healthCheckTimeout)
		derr := s.healthOf.Check(ctx)
		cancel()
		s.storeDown.Store(derr != nil)
		switch {
		case derr != nil && down.IsZero():
			down, reason = time.Now(), derr.Message
			s.log.Warn("storage unavailable: requests that need it answer 503 storage_unavailable", "store", s.healthOf.Name(), "reason", reason)
		case derr != nil && derr.Message != reason:
			reason = derr.Message
			s.log.Warn("storage still unavailable, for another reason", "store", s.healthOf.Name(), "reason", reason,
				"for", time.Since(down).Round(time.Millisecond).String())
		case derr == nil && !down.IsZero():
			s.log.Info("storage available again", "store", s.healthOf.Name(), "unavailable_for", time.Since(down).Round(time.Millisecond).String())
			down, reason = time.Time{}, ""
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
