// Package link is how a run speaks to its target: it sends each request
// (the client signs every attempt afresh and honours Retry-After),
// records the exchange in the running check's report, keeps the run
// within its bound of requests in flight, stops the run once the target
// has stopped answering, reads the observer (CONTRACT 7) and waits there
// for the changes the target accepted to settle.
//
// It knows nothing of which checks there are or of how they are
// scheduled: the run gives it the tested gateway, where to count each
// chain's round trips and whom to tell each answer's time.
package link

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/internal/schedule"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Config is what a Link is given by the run.
type Config struct {
	// Client sends the requests to the target.
	Client *client.Client
	// Observer reads the observer (empty Base: effects are not observed);
	// the Link sets its Slot.
	Observer observer.Reader
	// Settle is how long a change may take to appear at the observer
	// after its answer (--settle); 0: read at once.
	Settle time.Duration
	// Concurrency is the most requests in flight at once (at least 1).
	Concurrency int
	// MaxRequests caps the requests of a run (0: none).
	MaxRequests int
	// WholeKeys keeps api_keys whole in the reports; by default they are
	// masked.
	WholeKeys bool
	// Tested is the tested gateway's MAC as the running check sees it (a
	// stand-in's while a check runs on one).
	Tested func() string
	// Answered, when set, is told each answer's time and the chain of the
	// request it answers: the device it names (catalog.HexOnly), the
	// tested gateway's messages (LogKey), or "".
	Answered func(key string, ex client.Exchange)
	// Trips, when set, counts each chain's round trips one after another.
	Trips *schedule.Trips
	// Shared says that other processes send to the target too (the
	// workers of a --parallel run): what the observer showed is never
	// taken for what it shows now (recent.go).
	Shared bool
}

// Link is one run's way to its target. Its methods may be called from
// several goroutines.
type Link struct {
	cfg Config
	// silence counts requests in a row that got no answer or a 5xx;
	// sent counts every request.
	silence silence
	sent    atomic.Int64
	// slots bound the requests in flight.
	slots chan struct{}
	// settle holds what the observer should show once the accepted
	// requests are applied.
	settle settling
	// recent holds what the observer last showed (recent.go).
	recent recent
	// ending is set once the run is ending (Drain): a check's request is
	// no longer sent, only the put-back's.
	ending atomic.Bool
}

// errEnding is the error of a check's request not sent because the run is
// ending (interrupted, or past its last check): what it would change could
// no longer be put back.
var errEnding = errors.New("not sent: the run is ending")

// Drain ends the sending of checks' requests: none is sent after it, and
// it returns once those in flight have their answers (or their contexts
// end), so that the devices can be put back with nothing changing them
// behind. Send still sends (the put-back's requests).
func (l *Link) Drain() {
	l.ending.Store(true)
	n := cap(l.slots)
	for i := 0; i < n; i++ {
		l.slots <- struct{}{}
	}
	for i := 0; i < n; i++ {
		<-l.slots
	}
}

// New is a Link as cfg says.
func New(cfg Config) *Link {
	l := &Link{}
	l.Configure(cfg)
	return l
}

// Configure sets what the run gives the Link, keeping its accounts (what
// is still to settle, the answers in a row that did not come, the
// requests sent): the run's flags may be set after a pre-flight has used
// it. Call it only while nothing is in flight.
func (l *Link) Configure(cfg Config) {
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	if cfg.Tested == nil {
		cfg.Tested = func() string { return "" }
	}
	if cfg.Trips == nil {
		cfg.Trips = &schedule.Trips{}
	}
	if l.slots == nil || cap(l.slots) != cfg.Concurrency {
		l.slots = make(chan struct{}, cfg.Concurrency)
	}
	l.cfg = cfg
	l.cfg.Observer.Slot = l.readSlot
}

// MaxSilent is how many requests in a row may go unanswered (or answered
// 5xx) before the run stops: against a target that has stopped answering,
// a full run would otherwise take every check's timeout in turn.
const MaxSilent = 20

// Stopped says whether the target has stopped answering: the last
// MaxSilent requests in a row got no answer or a 5xx. Nothing more is
// sent then; the check that needs an answer stops the run.
func (l *Link) Stopped() bool { return l.silence.row.Load() >= MaxSilent }

// Slot waits for one of the run's places for a request in flight and
// gives the func that frees it: whatever sends (checks one at a time,
// batches of several devices side by side, lanes, observer reads), the
// target never has more than Concurrency of the run's requests at once.
func (l *Link) Slot() func() {
	l.slots <- struct{}{}
	return func() { <-l.slots }
}

// readSlot is Slot for an observer's read, which is not sent either once
// the target has stopped answering: the checks still running (those sent
// ahead, a far device's batch) would otherwise read the observer on and
// on, each read refused, until the run ends.
func (l *Link) readSlot() (func(), error) {
	release := l.Slot()
	if l.Stopped() {
		release()
		return nil, stopped{"read"}
	}
	return release, nil
}

// Exchange sends one request and records it in the running check's
// report. Once MaxSilent requests in a row got no answer or a 5xx, or the
// run has sent MaxRequests, it sends nothing more: the run stops there
// with verdict INCOMPLETE and the reason, so that a target that has
// stopped answering (or a shared staging that is failing) does not cost
// every remaining request its timeout, and is not blamed check by check
// for it.
func (l *Link) Exchange(ctx context.Context, req client.Request) (*client.Response, error) {
	if l.Stopped() {
		Stop(ctx, stopped{"sent"}.Error())
	}
	if max := l.cfg.MaxRequests; max > 0 && l.sent.Add(1) > int64(max) {
		Stop(ctx, fmt.Sprintf("not sent: the run reached --max-requests %d", max))
	}
	s := l.sentOf(req, true)
	resp, ex, err := l.roundTrip(ctx, req, s)
	if errors.Is(err, stopped{"sent"}) {
		// The target stopped answering while this request waited for its
		// place among those in flight.
		Stop(ctx, err.Error())
	}
	l.cfg.Trips.Add(s.key, 1+len(ex.Earlier), ex.Duration)
	l.Record(ctx, ex)
	if err != nil {
		return nil, fmt.Errorf("no answer from the target: %v", err)
	}
	return resp, nil
}

// stopped is the error of a request not sent (verb "sent") or a read not
// made ("read") because the last MaxSilent requests in a row got no
// answer or a 5xx. It names MaxSilent rather than the count, which the
// requests still in flight may raise: the reason reads the same in every
// run against a target that stopped.
type stopped struct{ verb string }

func (e stopped) Error() string {
	return fmt.Sprintf("not %s: the target gave no answer or a 5xx to the last %d requests in a row", e.verb, MaxSilent)
}

// IsStopped says whether err is a request not sent or a read not made
// because the target has stopped answering: the check that meets it stops
// the run (Stop), rather than failing for it.
func IsStopped(err error) bool {
	var s stopped
	return errors.As(err, &s)
}

// Stop stops the run at the running check: the reason goes into the
// check's report as a StopEntry, which the report reads (the verdict is
// INCOMPLETE), and into the failure message, which people read.
func Stop(ctx context.Context, reason string) {
	trial.From(ctx).Entry(report.StopEntry, reason, ginkgo.ReportEntryVisibilityNever)
	trial.From(ctx).Stop(reason + "; the run stops here, INCOMPLETE")
}

// RoundTrip sends one request and keeps the run's accounts of it (the
// answers in a row that did not come, the changes to wait for, each
// answer's time), recording nothing in a check's report: requests sent
// together from other goroutines use it, and their checks record the
// exchanges in order.
func (l *Link) RoundTrip(ctx context.Context, req client.Request) (*client.Response, client.Exchange, error) {
	return l.roundTrip(ctx, req, l.sentOf(req, true))
}

// roundTrip is RoundTrip of req, which touches and sends s.
func (l *Link) roundTrip(ctx context.Context, req client.Request, s sent) (*client.Response, client.Exchange, error) {
	// Requests sent ahead together stop too once the target has stopped
	// answering; the check that needs one stops the run. The count is read
	// once the request holds its place among those in flight: requests
	// that waited for one while the target stopped answering are not sent.
	order := l.silence.next()
	resp, ex, err := l.sendInSlot(ctx, req, s, true, true)
	if errors.Is(err, stopped{"sent"}) || errors.Is(err, errEnding) {
		return nil, ex, err
	}
	l.track(s, resp)
	if err != nil && ctx.Err() != nil {
		// The run gave up waiting (an interrupt): the target's silence
		// is not told by it.
		return nil, ex, err
	}
	l.silence.answered(order, err == nil && (resp.Status < 500 || RefusesInput(resp.ErrorCode)))
	if err != nil {
		return nil, ex, err
	}
	return resp, ex, nil
}

// silence counts the requests in a row, in the order they were sent,
// that got no answer or a 5xx. An answer to a request sent before the
// first of them does not end the row: with many requests in flight, the
// answers to those sent before a target began failing come after its
// first failures, and would start the count again.
type silence struct {
	mu    sync.Mutex
	order int64 // requests numbered in the order they asked to be sent
	first int64 // the number of the row's first request
	// row is the row's length, written under mu, read without it.
	row atomic.Int64
}

// next numbers a request about to be sent.
func (s *silence) next() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.order++
	return s.order
}

// answered counts the request numbered order, answered (ok) or not, and
// gives the row's length.
func (s *silence) answered(order int64, ok bool) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.row.Load()
	switch {
	case !ok && n == 0:
		n, s.first = 1, order
	case !ok:
		n++
		s.first = min(s.first, order)
	case order > s.first:
		n = 0
	}
	s.row.Store(n)
	return n
}

// Send sends a request outside any check (the pre-flight's, the put-back
// at the end of a run): within the bound of requests in flight and
// counted among the requests sent (recent.go), its answer's time told,
// but recorded nowhere, and nothing of it tracked or counted against the
// target's health.
func (l *Link) Send(ctx context.Context, req client.Request) (*client.Response, client.Exchange, error) {
	return l.sendInSlot(ctx, req, l.sentOf(req, false), true, false)
}

// SendTogether is Send for a request sent outside any check together
// with others (the pre-flight's): its answer's time is not told, since it
// says how busy the target was as much as how far it is.
func (l *Link) SendTogether(ctx context.Context, req client.Request) (*client.Response, client.Exchange, error) {
	return l.sendInSlot(ctx, req, l.sentOf(req, false), false, false)
}

// sendInSlot sends req, which touches and sends s, once it holds a place
// among the requests in flight; tell says whether its answer's time tells
// how far the target is, and guard whether it is not sent once the target
// has stopped answering.
func (l *Link) sendInSlot(ctx context.Context, req client.Request, s sent, tell, guard bool) (*client.Response, client.Exchange, error) {
	release := l.Slot()
	defer release()
	if guard && l.Stopped() {
		return nil, client.Exchange{}, stopped{"sent"}
	}
	if guard && l.ending.Load() {
		return nil, client.Exchange{}, errEnding
	}
	done := l.recent.sending(s)
	resp, ex, err := l.cfg.Client.Do(ctx, req)
	done(resp, err)
	if err == nil && tell && l.cfg.Answered != nil {
		// Only an answer tells how far the target is: a request that got
		// none (a timeout) says nothing of it.
		l.cfg.Answered(s.key, ex)
	}
	return resp, ex, err
}

// RefusesInput says whether an error code judges the request rather than
// the target's health: a target that answers such a code, whatever its
// status, is answering (wrongly, perhaps: the checks judge that), not
// failing.
func RefusesInput(code string) bool {
	switch code {
	case device.CodeInvalidField, device.CodeMissingField, device.CodeUnexpectedField, device.CodeMalformedBody:
		return true
	}
	return false
}

// Accepted is the MUST-level verdict: a 2xx answer whose status is success.
func Accepted(r *client.Response) bool {
	return r != nil && r.Status/100 == 2 && r.StatusField == "success"
}

// Describe says in one line what the target answered.
func Describe(r *client.Response) string {
	if r == nil {
		return "no answer"
	}
	s := fmt.Sprintf("HTTP %d", r.Status)
	if r.StatusField != "" {
		s += ", status " + r.StatusField
	}
	if r.ErrorCode != "" {
		s += ", error " + r.ErrorCode
		if r.ErrorField != "" {
			s += " (" + r.ErrorField + ")"
		}
	}
	if r.ParseError != "" {
		s += ", body unreadable: " + r.ParseError
	}
	return s
}

// sent is what one request touches and what it sent, worked out once,
// from the request as the engine built it, before it is sent: the chain
// it counts in (schedule.Trips, the batches' answer times), the devices
// it may change (recent.go), and what it leaves at the observer once
// accepted (settle.go).
type sent struct {
	// key is the request's chain: the device its field sn names
	// (catalog.HexOnly), the tested gateway's messages (LogKey), or "".
	key string
	// devices are the serials (catalog.HexOnly) named in a field sn in
	// any letter case; anyDevice says the body is not the fields
	// (RawBody) and names none of them, so it may name any.
	devices   []string
	anyDevice bool
	// tested is the tested gateway as the running check saw it when the
	// request was sent, read where it is needed: for the key of a message
	// that names no device, and for a request that may be tracked.
	tested string
	// op is the operation served at the request's path, and fields what
	// the target reads of it: its fields as text by canonical name (the
	// first of a repeated field counts). known says they are known: false
	// when the request is not tracked, is sent to no operation's path, or
	// carries a body written by hand that cannot be read; nothing is
	// awaited of it then, whatever its answer.
	op     device.Operation
	fields map[string]string
	known  bool
}

// sentOf works out what req touches and sends; track says whether its
// answer may be tracked (settle.go), which needs its fields.
func (l *Link) sentOf(req client.Request, track bool) sent {
	var s sent
	// The key is the first field named sn exactly; a device is named by a
	// field sn in any letter case, with white space around.
	keyed := false
	for _, f := range req.Fields {
		if strings.EqualFold(strings.TrimSpace(f.Key), device.FieldSN) {
			sn := catalog.HexOnly(fmt.Sprint(f.Value))
			s.devices = append(s.devices, sn)
			if !keyed && f.Key == device.FieldSN {
				s.key, keyed = sn, true
			}
		}
	}
	s.anyDevice = len(s.devices) == 0 && req.RawBody != nil
	message := !keyed && req.Path == device.SendMessage.Path()
	op, atOp := operationAt(req.Path)
	track = track && atOp && l.cfg.Settle > 0 && l.Observed()
	if message || track {
		s.tested = l.cfg.Tested()
	}
	if message {
		s.key = LogKey(s.tested)
	}
	if track {
		s.op = op
		s.fields, s.known = readFields(req)
	}
	return s
}

// readFields are the fields of a request as the target reads them, by
// their canonical names (the first of a repeated field counts): false
// when a body written by hand cannot be read.
//
// A body written by hand (RawBody) is the one thing read back from its
// bytes, its fields first, the request's own filling in what it lacks:
// the checks write such bodies by editing a valid body's text (cut,
// padded, a field twice, a number or an escape written another way, the
// grammars' near misses, the wire checks' bodies), and neither the call
// nor the request says which fields the edited text holds, or whether a
// lenient reader finds any.
func readFields(req client.Request) (map[string]string, bool) {
	fields := map[string]string{}
	if req.RawBody != nil {
		pairs, derr := codec.Decode(req.Format, req.RawBody)
		if derr != nil {
			return nil, false
		}
		for _, p := range pairs {
			addField(fields, p.Key, p.Value.Text)
		}
	}
	for _, f := range req.Fields {
		addField(fields, f.Key, fmt.Sprint(f.Value))
	}
	return fields, true
}

// LogPrefix begins the key of a gateway's messages (LogKey).
const LogPrefix = "gw:"

// LogKey is the chain of a gateway's messages.
func LogKey(mac string) string { return LogPrefix + catalog.HexOnly(mac) }

// operationAt is the operation served at a path.
func operationAt(path string) (device.Operation, bool) {
	for _, op := range device.Operations {
		if op.Path() == path {
			return op, true
		}
	}
	return 0, false
}

// addField adds a field by its canonical name, unless one of that name
// came first.
func addField(fields map[string]string, k, v string) {
	for canon, j := range catalog.JSONNames {
		if j == k {
			k = canon
		}
	}
	if _, seen := fields[k]; !seen {
		fields[k] = v
	}
}
