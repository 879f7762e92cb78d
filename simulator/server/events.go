package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Changes is the dashboard's event feed: the server publishes every
// journaled request and every admin change to it, and each open
// GET /_sim/events subscribes. The in-memory Hub is the default; a shared
// store (package redisstore) puts its pub/sub behind the same methods so
// that every replica's page shows the events of all of them.
type Changes interface {
	// Publish tells subscribers that something changed; it never blocks.
	Publish(Change)
	// Subscribe returns a channel of changes and a function that ends the
	// subscription. A slow subscriber misses changes rather than slowing
	// requests: it is told to reload everything instead.
	Subscribe() (<-chan Change, func())
	// Watched says whether anyone subscribes, so that a request builds no
	// Change (and allocates nothing) when nobody listens.
	Watched() bool
}

// Change is one event of the feed: a request (Entry set) or an admin
// change such as "faults" or "reset" (Kind set).
type Change struct {
	Kind  string `json:"kind"`
	Entry *Entry `json:"entry,omitempty"`
	// Replica names the gwsim process where it happened.
	Replica string `json:"replica,omitempty"`
}

// Hub is the in-memory Changes.
type Hub struct {
	mu   sync.Mutex
	subs map[chan Change]struct{}
	n    atomic.Int32 // len(subs), read without the lock on every request
}

// NewHub returns an empty feed.
func NewHub() *Hub { return &Hub{subs: map[chan Change]struct{}{}} }

// Publish sends c to every subscriber that has room for it.
func (h *Hub) Publish(c Change) {
	if h.n.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- c:
		default: // full: the subscriber reloads the snapshot anyway
		}
	}
}

// Subscribers is the number of open subscriptions (the metrics' event
// clients).
func (h *Hub) Subscribers() int { return int(h.n.Load()) }

// Watched implements Changes.
func (h *Hub) Watched() bool { return h.n.Load() > 0 }

// Subscribe adds a subscriber with a small buffer.
func (h *Hub) Subscribe() (<-chan Change, func()) {
	ch := make(chan Change, 64)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.n.Store(int32(len(h.subs)))
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs, ch)
			h.n.Store(int32(len(h.subs)))
			h.mu.Unlock()
		})
	}
}

// eventKeepAlive is how often an idle event stream gets a comment, so that
// proxies keep it open and a dead client is noticed.
const eventKeepAlive = 15 * time.Second

// DefaultMaxEventsClients bounds the open event streams unless
// Config.MaxEventsClients says otherwise; MaxEventsClientsLimit is the
// most --max-events-clients takes.
const (
	DefaultMaxEventsClients = 100
	MaxEventsClientsLimit   = 10000
)

// sessionRecheck is how often a stream opened with the dashboard's cookie
// asks whether its session is still open (signed out here or on another
// replica, or expired): the stream ends within this time of the session.
var sessionRecheck = time.Second

// events serves GET /_sim/events as server-sent events: one "change" event
// per request journaled or admin change, each carrying the Change as JSON.
// At most MaxEventsClients streams are open at once (503 beyond), and a
// stream opened with the sign-in cookie closes when its session ends.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if n := s.streams.Add(1); int(n) > s.cfg.MaxEventsClients {
		s.streams.Add(-1)
		w.Header().Set("Retry-After", "5")
		refuse(w, http.StatusServiceUnavailable, "too_many_streams", "",
			fmt.Sprintf("%d event streams are open, the most this gwsim serves (--max-events-clients); close one or retry later", s.cfg.MaxEventsClients))
		return
	}
	defer s.streams.Add(-1)
	// The session this stream lives on, when the cookie let it in.
	var session string
	if s.cfg.AdminToken != "" && !tokenMatches(r.Header.Get("Authorization"), s.bearer) {
		if c, err := r.Cookie(SessionCookie); err == nil {
			session = c.Value
		}
	}
	var recheck <-chan time.Time
	if session != "" {
		t := time.NewTicker(sessionRecheck)
		defer t.Stop()
		recheck = t.C
	}
	rc := http.NewResponseController(w)
	// The server's WriteTimeout would cut the stream: this one lives as
	// long as the client (or the server) does.
	rc.SetWriteDeadline(time.Time{})
	ch, cancel := s.changes.Subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte("retry: 1000\n: gwsim events\n\n"))
	if rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(eventKeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		case <-recheck:
			if _, ok, _ := s.sessions.valid(session); !ok {
				// Signed out or expired (or the store cannot say):
				// the page reconnects, is refused, and asks to sign in.
				return
			}
			continue
		case <-tick.C:
			w.Write([]byte(": keep-alive\n\n"))
		case c := <-ch:
			b, _ := json.Marshal(c)
			w.Write([]byte("event: change\ndata: "))
			w.Write(b)
			w.Write([]byte("\n\n"))
		}
		if rc.Flush() != nil {
			return
		}
	}
}
