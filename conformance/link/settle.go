package link

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Asynchronous devices. A gateway often answers before the device has
// taken the change: the observer shows it some time later. Every request
// the target accepts leaves an expectation on the device (or the
// gateway's messages) it changes: the values sent, in their canonical
// form. A read of the observer first waits, up to --settle after the
// answer, until the expected state appears: the effect checks then judge
// what the device shows once settled, and the checks that read a device
// before sending see it with the changes of earlier requests applied.
// How long each change took to appear goes into the check's report
// (report.SettleEntry): "changed after 312 ms", or "never changed within
// 2s". A device that has once shown that it does not settle is not waited
// for again (until it settles): a target that never applies a change
// costs one settle time per device, not one per check.

// DefaultSettle is how long a change may take to appear at the observer
// (--settle); explore's model gives observed state the same time.
const DefaultSettle = 2 * time.Second

// settlePoll is how often the observer is read while waiting.
const settlePoll = 25 * time.Millisecond

// expected is what the observer should show once the accepted requests
// to one device or gateway have been applied.
type expected struct {
	// name and state (canonical values by field).
	name  *string
	state map[string]string
	// since is when the last accepted request was answered.
	since time.Time
	// varied: the accepted requests since the device was last seen
	// settled did not all leave what the last one leaves. The target may
	// take them one after another, so the device may show the last one's
	// value (or its value from before them) while an older one has still
	// to land: what it shows then proves nothing until the device has
	// been quiet for the time changes take to appear (quietFor).
	varied bool
	// shownAfter is how long after since the device first showed it (a
	// varied expectation is then waited on until quiet).
	shownAfter time.Duration
	// mac is the gateway the device was changed through (hexOnly): a
	// serial is unique on its gateway only.
	mac string
}

// settling is a process's expectations, by device serial (lower case) or
// "messages of " + gateway.
type settling struct {
	mu        sync.Mutex
	pending   map[string]*expected
	unsettled map[string]bool
	logs      map[string]*logTrack
	// lag is the longest a change was seen to take to appear, among
	// those that were not there at the first read (an upper bound of
	// each: the read that showed it ended then); sampled says whether
	// any change was awaited at all.
	lag     time.Duration
	sampled bool
}

// logTrack is what a gateway's messages should show: the count the
// observer last showed once settled (base, when known), how many messages
// were accepted since, and the newest of them.
type logTrack struct {
	base  int
	known bool
	sent  int
	last  observer.Message
	since time.Time
}

func msgKey(mac string) string { return "messages of " + catalog.HexOnly(mac) }

// CountLog takes the tested gateway's message count before the run sends
// anything, where the observer gives it: every message the run sends from
// then on is awaited by count as well as by content. Without the count,
// a message like the last one awaited, still on its way, would pass for
// it (every valid message of a serial run is alike), and land in the
// middle of a later check.
func (l *Link) CountLog(ctx context.Context) {
	if l.cfg.Settle <= 0 || !l.Observed() || !l.cfg.Observer.Counts || l.cfg.Tested() == "" {
		return
	}
	lg, err := l.ReadLogNow(ctx, l.cfg.Tested())
	if err != nil || !lg.Counted {
		return
	}
	s := &l.settle
	s.mu.Lock()
	defer s.mu.Unlock()
	if lt, fresh := s.logOf(l.cfg.Tested()); fresh {
		lt.base, lt.known = lg.Total, true
	}
}

// logOf is what is tracked of a gateway's messages, made when there is
// none yet (fresh). s.mu is held.
func (s *settling) logOf(mac string) (lt *logTrack, fresh bool) {
	if s.logs == nil {
		s.logs = map[string]*logTrack{}
	}
	lt = s.logs[catalog.HexOnly(mac)]
	if lt == nil {
		lt, fresh = &logTrack{}, true
		s.logs[catalog.HexOnly(mac)] = lt
	}
	return lt, fresh
}

// Track records what an accepted request to the tested gateway should
// leave at the observer.
func (l *Link) Track(req client.Request, r *client.Response) {
	l.track(l.sentOf(req, true), r)
}

// track records what an accepted request, which sent s, should leave at
// the observer.
func (l *Link) track(s sent, r *client.Response) {
	if l.cfg.Settle <= 0 || !l.Observed() || !Accepted(r) || !s.known {
		return
	}
	// An identifier in another accepted form (capitals, dashes) names the
	// same gateway or device. A message is awaited on whatever gateway it
	// names (the effect checks send one to another gateway of the
	// account); a device, on the tested gateway.
	mac := catalog.HexOnly(s.fields[device.FieldMAC])
	if s.op != device.SendMessage && mac != catalog.HexOnly(s.tested) {
		return
	}
	st := &l.settle
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.pending == nil {
		st.pending = map[string]*expected{}
	}
	if s.op == device.SendMessage {
		st.expectMessage(mac, s.fields)
		return
	}
	st.expectDevice(s.op, mac, s.fields)
}

// expectMessage records an accepted message to gateway mac: one more
// awaited by count, and the newest awaited by content. The caller holds
// s.mu.
func (s *settling) expectMessage(mac string, fields map[string]string) {
	lt, _ := s.logOf(mac)
	lt.sent++
	lt.last = observer.Message{Type: fields[device.FieldMessageType], Value: fields[device.FieldMessageValue]}
	lt.since = time.Now()
}

// expectDevice adds what an accepted command or rename leaves to the
// expectation of the device it names, and marks the expectation varied
// when the change leaves something other than the requests before it did
// (awaitDevice then waits until the device is quiet). The caller holds
// s.mu.
func (s *settling) expectDevice(op device.Operation, mac string, fields map[string]string) {
	key := catalog.HexOnly(fields[device.FieldSN])
	e := s.pending[key]
	var was *expected
	if e == nil {
		e = &expected{state: map[string]string{}, mac: mac}
		s.pending[key] = e
	} else {
		was = e.clone()
	}
	e.since = time.Now()
	switch op {
	case device.SendCommand:
		e.expectCommand(fields)
	case device.UpdateName:
		n := strings.TrimSpace(fields[device.FieldName])
		e.name = &n
	}
	if was != nil && !e.varied && !was.same(e) {
		e.varied = true
	}
}

// expectCommand sets, in e, each field of the command's type that the
// command carries to its canonical value; a type the rule table does not
// have leaves e as it is.
func (e *expected) expectCommand(fields map[string]string) {
	t, ok := oracle.LookupType(fields[device.FieldType])
	if !ok {
		return
	}
	for i := range t.Fields {
		fd := &t.Fields[i]
		v, sent := fields[fd.Name]
		if !sent {
			continue
		}
		// The fields arrive as text: a value that is not valid as a
		// string is read as a JSON number (CONTRACT 2), as the target
		// accepted it.
		c, ok := catalog.Canonical(fd, v, false)
		if !ok {
			c, ok = catalog.Canonical(fd, v, true)
		}
		if ok {
			e.state[fd.Name] = c
		}
	}
}

// clone is a copy of e that shares nothing with it.
func (e *expected) clone() *expected {
	c := *e
	c.state = make(map[string]string, len(e.state))
	for k, v := range e.state {
		c.state[k] = v
	}
	if e.name != nil {
		n := *e.name
		c.name = &n
	}
	return &c
}

// same says whether two expectations leave the same name and state (an
// expectation with a field the other lacks leaves something else).
func (e *expected) same(o *expected) bool {
	if (e.name == nil) != (o.name == nil) || e.name != nil && *e.name != *o.name {
		return false
	}
	return observer.SameValues(e.state, o.state)
}

// quietFor is how long after the last accepted request to a device what
// it shows can be trusted when the requests since it was last seen
// settled varied: twice the longest a change took to appear in this run
// (nothing against a target that applies changes before it answers), the
// whole settle time before any change was awaited.
func (l *Link) quietFor() time.Duration {
	s := &l.settle
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.sampled {
		return l.cfg.Settle
	}
	return min(l.cfg.Settle, 2*s.lag)
}

// Lagged says whether the target was seen to show an accepted change at
// its observer only some time after its answer (CONTRACT's preamble lets
// it, up to --settle).
func (l *Link) Lagged() bool {
	s := &l.settle
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sampled && s.lag > 0
}

// sampleLag records how long an awaited change to the device key took to
// appear: waited says that the first read did not show it yet. A wait
// during which another change to the device was accepted (a chain of
// checks about it going on beside the read) measures that chain, not how
// late the target applies a change: it is not a sample. A change shown
// at the first read is one, whatever came beside it.
func (l *Link) sampleLag(key string, e *expected, waited bool) {
	s := &l.settle
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.pending[key]; waited && (cur == nil || !cur.since.Equal(e.since)) {
		return
	}
	s.sampled = true
	if waited && e.shownAfter > s.lag {
		s.lag = e.shownAfter
	}
}

// shows says whether a device as the observer shows it holds what e
// expects: a number by its value, an enumerated value in any letter case,
// a name trimmed (the CONTRACT's forms are judged by the checks, not here).
func (e *expected) shows(d observer.Device) bool {
	if e.name != nil && strings.TrimSpace(d.Name) != *e.name {
		return false
	}
	got := observer.Values(d.State)
	for k, v := range e.state {
		g, ok := got[k]
		if !ok || !(observer.SameNumber(g, v) || strings.EqualFold(strings.TrimSpace(g), v)) {
			return false
		}
	}
	return true
}

// awaitDevice reads a device, first waiting until the changes accepted for
// it have appeared (at most --settle after the last answer). Inside a
// check it records how long they took.
func (l *Link) awaitDevice(ctx context.Context, mac, sn string) (observer.Device, error) {
	key := catalog.HexOnly(sn)
	e, skip := l.pendingFor(key, mac)
	if e == nil {
		if d, ok := l.Unchanged(mac, sn); ok {
			return d, nil // as the observer last showed it, nothing sent since (recent.go)
		}
		if !trial.From(ctx).IsLive() {
			// A check run ahead of its place: nothing about the device
			// sent since will do (recent.go).
			if d, ok := l.UnchangedHere(mac, sn); ok {
				return d, nil
			}
		}
	}
	began := time.Now()
	defer func() { l.cfg.Trips.Add(key, 1, time.Since(began)) }()
	if e == nil {
		return l.ReadDeviceNow(ctx, mac, sn)
	}
	var first *observer.Device
	changed, shown := false, false
	for {
		d, err := l.ReadDeviceNow(ctx, mac, sn)
		if err != nil {
			return d, err
		}
		if e.shows(d) {
			if !shown {
				shown = true
				e.shownAfter = time.Since(e.since)
				l.sampleLag(key, e, first != nil)
			}
			if !e.varied || time.Since(e.since) >= l.quietFor() {
				l.settled(ctx, key, e, true, false, sn)
				return d, nil
			}
		}
		if first == nil {
			first = &d
		} else if !changed && (d.Name != first.Name || !observer.SameValues(observer.Values(d.State), observer.Values(first.State))) {
			changed = true
		}
		if skip || time.Since(e.since) >= l.cfg.Settle || ctx.Err() != nil {
			l.settled(ctx, key, e, e.shows(d), changed, sn)
			return d, nil
		}
		time.Sleep(settlePoll)
	}
}

// QuietAfterBatch waits, once requests to a device were sent
// concurrently, until the settle time has passed since the last of them
// was answered, and then expects nothing more of it: a target that
// applies changes late may apply concurrent ones in another order than it
// answered them, so the device may show what the last answer said and
// take an older request's value a moment later (a refusal's state check
// read then sees a change it did not make). Which of the concurrent
// values the device ends with is not the checks' to judge; what it shows
// once quiet is what the next reads start from. Once per slow device.
func (l *Link) QuietAfterBatch(ctx context.Context, sn string) {
	if l.cfg.Settle <= 0 || !l.Observed() {
		return
	}
	key := catalog.HexOnly(sn)
	s := &l.settle
	s.mu.Lock()
	e := s.pending[key]
	var since time.Time
	if e != nil {
		since = e.since
	}
	s.mu.Unlock()
	if e == nil {
		return
	}
	// As long as a change may take to show (quietFor): the whole settle
	// time until this run has seen one appear, then twice the longest
	// any took (nothing for a target that applies before it answers).
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(since.Add(l.quietFor()))):
	}
	s.mu.Lock()
	if cur := s.pending[key]; cur != nil && cur.since.Equal(since) {
		delete(s.pending, key)
	}
	s.mu.Unlock()
}

// Forget expects nothing more of a device: it was seen to show
// each change it was sent (a slow device's lane read each right after
// its answer), so there is nothing left to wait for.
func (l *Link) Forget(sn string) {
	s := &l.settle
	s.mu.Lock()
	delete(s.pending, catalog.HexOnly(sn))
	s.mu.Unlock()
}

// awaitLog reads a gateway's messages, first waiting until the messages
// accepted since the last read have appeared: as many more as were
// accepted (where the count is known), the newest of them the newest.
func (l *Link) awaitLog(ctx context.Context, mac string) (observer.Log, error) {
	key := msgKey(mac)
	s := &l.settle
	s.mu.Lock()
	var lt logTrack
	if t := s.logs[catalog.HexOnly(mac)]; t != nil && l.cfg.Settle > 0 {
		lt = *t
	}
	skip := s.unsettled[key]
	s.mu.Unlock()
	done := func(lg observer.Log) {
		s.mu.Lock()
		t, _ := s.logOf(mac)
		t.base, t.known = lg.Total, true
		t.sent -= lt.sent // what came meanwhile is still awaited
		s.mu.Unlock()
	}
	if lt.sent == 0 {
		lg, ok := l.UnchangedLog(mac) // as the observer last showed it, nothing sent since (recent.go)
		if !ok {
			began := time.Now()
			var err error
			lg, err = l.ReadLogNow(ctx, mac)
			l.cfg.Trips.Add(LogKey(mac), 1, time.Since(began))
			if err != nil {
				return lg, err
			}
		}
		if lg.Counted && strings.EqualFold(mac, l.cfg.Tested()) {
			done(lg)
		}
		return lg, nil
	}
	began := time.Now()
	defer func() { l.cfg.Trips.Add(LogKey(mac), 1, time.Since(began)) }()
	e := &expected{since: lt.since}
	firstTotal := -1
	changed := false
	what := "the messages of gateway " + mac
	for {
		lg, err := l.ReadLogNow(ctx, mac)
		if err != nil {
			return lg, err
		}
		if logShows(lg, lt) {
			done(lg)
			l.settled(ctx, key, e, true, false, what)
			return lg, nil
		}
		if firstTotal < 0 {
			firstTotal = lg.Total
		} else if lg.Total != firstTotal {
			changed = true
		}
		if skip || time.Since(e.since) >= l.cfg.Settle || ctx.Err() != nil {
			done(lg)
			l.settled(ctx, key, e, false, changed, what)
			return lg, nil
		}
		time.Sleep(settlePoll)
	}
}

// logShows says whether the log holds the messages accepted since the count
// lt.base: as many more, the newest of them last (in a --parallel run,
// where other workers append too: the newest of them among those appended
// since).
func logShows(l observer.Log, lt logTrack) bool {
	if l.Shared {
		k := l.Total - lt.base
		if lt.known && l.Counted && k >= 0 && k <= len(l.Recent) {
			return observer.CountMessage(l.Recent[len(l.Recent)-k:], lt.last) > 0
		}
		return observer.CountMessage(l.Recent, lt.last) > 0
	}
	countOK := !lt.known || !l.Counted || l.Total >= lt.base+lt.sent
	return countOK && l.Last != nil && *l.Last == lt.last
}

// pendingFor is the expectation of a device of a gateway, if any, and
// whether not to wait for it (it showed it does not settle): of the
// tested gateway, or of a stand-in's (package batch), which the effect checks
// read as a place a change must not land (conformance/checks/landing.go).
func (l *Link) pendingFor(key, mac string) (*expected, bool) {
	if l.cfg.Settle <= 0 {
		return nil, false
	}
	s := &l.settle
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.pending[key]
	if e == nil || e.mac != catalog.HexOnly(mac) {
		return nil, false
	}
	// A copy that shares nothing with e: a change accepted while the
	// caller reads writes into e's state.
	return e.clone(), s.unsettled[key]
}

// settled ends a wait: the expectation is dropped unless a newer request
// replaced it meanwhile, the device is marked as one that does not settle
// or cleared, and the check's report says how long it took.
func (l *Link) settled(ctx context.Context, key string, e *expected, ok, changed bool, what string) {
	took := time.Since(e.since)
	if ok && e.shownAfter > 0 {
		took = e.shownAfter
	}
	s := &l.settle
	s.mu.Lock()
	if cur := s.pending[key]; cur != nil && cur.since.Equal(e.since) {
		delete(s.pending, key)
	}
	wasUnsettled := s.unsettled[key]
	if s.unsettled == nil {
		s.unsettled = map[string]bool{}
	}
	s.unsettled[key] = !ok
	s.mu.Unlock()
	var line string
	switch {
	case ok:
		line = fmt.Sprintf("%s: changed after %d ms", what, took.Milliseconds())
	case wasUnsettled && !changed:
		line = fmt.Sprintf("%s: not changed after %d ms, not waited for (it did not settle earlier in the run)", what, took.Milliseconds())
	case changed:
		line = fmt.Sprintf("%s: changed within %s, but never to what was sent", what, l.cfg.Settle)
	default:
		line = fmt.Sprintf("%s: never changed within %s", what, l.cfg.Settle)
	}
	// The check's report says how long the changes it made took; a wait
	// for an earlier check's change is that check's.
	if t := trial.From(ctx); t.InSpec() && e.since.After(t.Started()) {
		t.Entry(report.SettleEntry, line, ginkgo.ReportEntryVisibilityNever)
	}
}

// Pending says whether changes accepted for a device of a gateway have
// still to be seen at the observer.
func (l *Link) Pending(mac, sn string) bool {
	e, _ := l.pendingFor(catalog.HexOnly(sn), mac)
	return e != nil
}

// LogPending says whether messages accepted for a gateway have still to
// be seen at the observer.
func (l *Link) LogPending(mac string) bool {
	s := &l.settle
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.logs[catalog.HexOnly(mac)]
	return l.cfg.Settle > 0 && t != nil && t.sent > 0
}
