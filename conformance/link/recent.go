package link

import (
	"context"
	"sync"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/gatewayapi/client"
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

// A check run ahead of its place, beside the checks of other devices
// (package schedule), reads its device while other requests are in
// flight, the refusals of its own device among them (they run beside its
// chain of changes): the rule above never holds for it. For such a check
// a read of its device stands for a later one when no request that names
// the device (a field sn in any letter case with its serial, or a body
// the link cannot read, which may name any) was answered since it began
// other than with a refusal (a status under 500 and no success): on a
// target that applies each change before it answers, only a request about
// a device that it accepts changes it (CONTRACT 3: a rejected request
// changes nothing). A request still in flight is counted when it is
// answered: until then it may land before or after any read, a fresh one
// as well. A target that breaks this makes such a check fail where a
// fresh read would have let it pass, and a check that fails ahead of its
// place is run again alone, with every read fresh, before its failure
// counts. So a device's chain of changes and read-backs (schedule.Trips)
// costs two round trips per change instead of three: the read before a
// change is the read-back of the one before.

// count is the requests started, and in flight.
type count struct {
	sends    int64
	inFlight int
}

// recent is the last read of each place (devPlace, logPlace), with the
// counts of requests when it began: every request started (all), and the
// requests answered with anything but a refusal that name its device
// (changes, by serial, catalog.HexOnly) or may name any (anyDevice).
type recent struct {
	mu        sync.Mutex
	all       count
	anyDevice int64
	changes   map[string]int64
	reads     map[string]readAt
}

// mark is the counts when a read began; key is the serial of the device
// read ("" for a gateway's messages).
type mark struct {
	all             count
	anyDevice, here int64
	key             string
}

type readAt struct {
	what any // an observer.Device or observer.Log
	at   mark
	// anywhere: nothing was in flight when the read began and nothing was
	// sent while it was read; else only nothing about its device.
	anywhere bool
}

// sending counts a request that names s.devices (or, s.anyDevice, may
// name any) from when it starts until done is called with its answer.
func (r *recent) sending(s sent) (done func(*client.Response, error)) {
	r.mu.Lock()
	r.all.sends++
	r.all.inFlight++
	r.mu.Unlock()
	return func(resp *client.Response, err error) {
		refused := err == nil && resp != nil && resp.Status < 500 && !Accepted(resp)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.all.inFlight--
		if refused {
			return
		}
		if s.anyDevice {
			r.anyDevice++
		}
		if len(s.devices) > 0 && r.changes == nil {
			r.changes = map[string]int64{}
		}
		for _, k := range s.devices {
			r.changes[k]++
		}
	}
}

// mark is the counts when a read of a place begins: of the device key,
// or "" for a gateway's messages.
func (r *recent) mark(key string) mark {
	r.mu.Lock()
	defer r.mu.Unlock()
	return mark{all: r.all, anyDevice: r.anyDevice, here: r.changes[key], key: key}
}

// stillAnywhere says whether nothing was sent since m and nothing was in
// flight then or is now. r.mu is held.
func (r *recent) stillAnywhere(m mark) bool {
	return m.all.inFlight == 0 && r.all == count{sends: m.all.sends}
}

// stillHere says whether nothing that names m's device, or may name any,
// was answered since m other than with a refusal. r.mu is held.
func (r *recent) stillHere(m mark) bool {
	return m.key != "" && r.anyDevice == m.anyDevice && r.changes[m.key] == m.here
}

func devPlace(mac, sn string) string {
	return "device " + catalog.HexOnly(mac) + "/" + catalog.HexOnly(sn)
}

func logPlace(mac string) string { return "messages " + catalog.HexOnly(mac) }

// keep keeps a read of a place that began at m, if it may stand for a
// later one by either rule.
func (r *recent) keep(place string, what any, m mark) {
	r.mu.Lock()
	defer r.mu.Unlock()
	anywhere := r.stillAnywhere(m)
	if !anywhere && !r.stillHere(m) {
		return
	}
	if r.reads == nil {
		r.reads = map[string]readAt{}
	}
	r.reads[place] = readAt{what, m, anywhere}
}

// last is the last read of a place, if nothing was sent since.
func (r *recent) last(place string) (any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.reads[place]
	if !ok || !at.anywhere || !r.stillAnywhere(at.at) {
		return nil, false
	}
	return at.what, true
}

// lastHere is the last read of a device's place, if nothing that names
// the device, or may name any, was answered since other than with a
// refusal.
func (r *recent) lastHere(place string) (any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.reads[place]
	if !ok || !r.stillHere(at.at) {
		return nil, false
	}
	return at.what, true
}

// readDevice reads a device and keeps what it read.
func (l *Link) readDevice(ctx context.Context, mac, sn string) (observer.Device, error) {
	m := l.recent.mark(catalog.HexOnly(sn))
	d, err := l.cfg.Observer.Device(ctx, mac, sn)
	if err == nil {
		l.recent.keep(devPlace(mac, sn), d, m)
	}
	return d, err
}

// readLog reads a gateway's messages and keeps what it read.
func (l *Link) readLog(ctx context.Context, mac string) (observer.Log, error) {
	m := l.recent.mark("")
	lg, err := l.cfg.Observer.Log(ctx, mac)
	if err == nil {
		l.recent.keep(logPlace(mac), lg, m)
	}
	return lg, err
}

// Unchanged is what the observer last showed of a device, when it shows
// the same now: see recent.
func (l *Link) Unchanged(mac, sn string) (observer.Device, bool) {
	if !l.Reusable() || l.Pending(mac, sn) {
		return observer.Device{}, false
	}
	d, ok := l.recent.last(devPlace(mac, sn))
	if !ok {
		return observer.Device{}, false
	}
	return d.(observer.Device), true
}

// UnchangedHere is what the observer last showed of a device, when no
// request that names it was answered since other than with a refusal
// (see recent): for a check whose failure
// is confirmed alone, with every read fresh, before it counts.
func (l *Link) UnchangedHere(mac, sn string) (observer.Device, bool) {
	if !l.Reusable() || l.Pending(mac, sn) {
		return observer.Device{}, false
	}
	d, ok := l.recent.lastHere(devPlace(mac, sn))
	if !ok {
		return observer.Device{}, false
	}
	return d.(observer.Device), true
}

// UnchangedLog is what the observer last showed of a gateway's messages,
// when it shows the same now: see recent.
func (l *Link) UnchangedLog(mac string) (observer.Log, bool) {
	if !l.Reusable() || l.LogPending(mac) {
		return observer.Log{}, false
	}
	lg, ok := l.recent.last(logPlace(mac))
	if !ok {
		return observer.Log{}, false
	}
	return lg.(observer.Log), true
}

// Reusable says whether a read may stand for a later one: the target was
// seen to apply every change it was sent before it answered (each change
// awaited showed at the first read after its answer), and no other
// process sends to it. A place with a change still to be seen (Pending,
// LogPending) is read again all the same.
func (l *Link) Reusable() bool {
	if l.cfg.Shared || l.cfg.Settle <= 0 {
		return false
	}
	s := &l.settle
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sampled && s.lag == 0
}
