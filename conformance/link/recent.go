package link

import (
	"context"
	"sync"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/observer"
)

// What the observer last showed. A place (a device, a gateway's messages)
// read while no request was in flight, with none sent since, shows the
// same now on a target that applies each change before it answers: its
// state changes only with a request. So a check that reads the places a
// change must leave alone before it sends anything (the effect checks'
// landings) may take them from the last read of each instead of reading
// them again: against a service across a network that read is a round
// trip, the slowest of some twenty answers, per effect check. Reads are
// reused only once the run has seen the target apply changes at once
// (every change awaited showed at the first read), never for a place with
// a change still to be seen, and never when other processes send to the
// target too.

// recent is the last read of each place (devPlace, logPlace), with the
// count of requests started when it began.
type recent struct {
	mu       sync.Mutex
	sends    int64
	inFlight int
	reads    map[string]readAt
}

type readAt struct {
	what  any // an observer.Device or observer.Log
	sends int64
}

// sending counts a request from when it starts until done is called.
func (r *recent) sending() (done func()) {
	r.mu.Lock()
	r.sends++
	r.inFlight++
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.inFlight--
		r.mu.Unlock()
	}
}

// mark is the count of requests started, and whether none is in flight,
// when a read begins.
func (r *recent) mark() (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sends, r.inFlight == 0
}

// still says whether nothing was sent since a read that began at sends.
// r.mu is held.
func (r *recent) still(sends int64) bool { return r.sends == sends && r.inFlight == 0 }

func devPlace(mac, sn string) string {
	return "device " + catalog.HexOnly(mac) + "/" + catalog.HexOnly(sn)
}

func logPlace(mac string) string { return "messages " + catalog.HexOnly(mac) }

// keep keeps a read of a place that began at sends with nothing in
// flight, if nothing was sent while it was read.
func (r *recent) keep(place string, what any, sends int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.still(sends) {
		return
	}
	if r.reads == nil {
		r.reads = map[string]readAt{}
	}
	r.reads[place] = readAt{what, sends}
}

// last is the last read of a place, if nothing was sent since.
func (r *recent) last(place string) (any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.reads[place]
	if !ok || !r.still(at.sends) {
		return nil, false
	}
	return at.what, true
}

// readDevice reads a device and keeps what it read.
func (l *Link) readDevice(ctx context.Context, mac, sn string) (observer.Device, error) {
	sends, idle := l.recent.mark()
	d, err := l.cfg.Observer.Device(ctx, mac, sn)
	if err == nil && idle {
		l.recent.keep(devPlace(mac, sn), d, sends)
	}
	return d, err
}

// readLog reads a gateway's messages and keeps what it read.
func (l *Link) readLog(ctx context.Context, mac string) (observer.Log, error) {
	sends, idle := l.recent.mark()
	lg, err := l.cfg.Observer.Log(ctx, mac)
	if err == nil && idle {
		l.recent.keep(logPlace(mac), lg, sends)
	}
	return lg, err
}

// Unchanged is what the observer last showed of a device, when it shows
// the same now: see recent.
func (l *Link) Unchanged(mac, sn string) (observer.Device, bool) {
	if !l.reusable() || l.Pending(mac, sn) {
		return observer.Device{}, false
	}
	d, ok := l.recent.last(devPlace(mac, sn))
	if !ok {
		return observer.Device{}, false
	}
	return d.(observer.Device), true
}

// UnchangedLog is what the observer last showed of a gateway's messages,
// when it shows the same now: see recent.
func (l *Link) UnchangedLog(mac string) (observer.Log, bool) {
	if !l.reusable() || l.LogPending(mac) {
		return observer.Log{}, false
	}
	lg, ok := l.recent.last(logPlace(mac))
	if !ok {
		return observer.Log{}, false
	}
	return lg.(observer.Log), true
}

// reusable says whether a read may stand for a later one: the target was
// seen to apply every change it was sent before it answered (each change
// awaited showed at the first read after its answer), and no other
// process sends to it. A place with a change still to be seen (Pending,
// LogPending) is read again all the same.
func (l *Link) reusable() bool {
	if l.cfg.Shared || l.cfg.Settle <= 0 {
		return false
	}
	s := &l.settle
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sampled && s.lag == 0
}
