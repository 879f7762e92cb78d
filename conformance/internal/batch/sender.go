// Package batch sends the checks of a target across a network together,
// by what each touches. Against a target 75 ms away some 5,000 requests
// one after another take six minutes, though most checks change nothing
// when the target is right. So once a target answers slower than
// batchFrom (any target that is not on this machine), each device's
// checks that are left, and the tested gateway's message checks, are
// planned by what they touch: those that judge only an answer (a case's
// MUST, SHOULD and parity checks) and the state checks of its refusals
// are sent together, Concurrency at a time: first the valid requests and
// the refusals' controls (they change the device, but none of these
// checks reads it), then, once the device is quiet, the refusals whose
// control was accepted (they must change nothing, and their state checks
// read the device, or the gateway's messages, before and after). A
// device's state checks of valid values go in its lane (lanes.go), never
// two in flight that would leave the same state. A device's batch is sent
// when its chain (schedule.Ahead) reaches its first planned check: the
// devices proceed side by side, each in its own chain, all within the
// run's one bound of requests in flight (link.Link.Slot). Each check then
// judges what its own requests got (Run, Replay); a check that fails so
// is run again alone, and only that result counts: a failure found while
// running concurrently is confirmed alone before it is reported. The
// valid messages' state checks stay one at a time in their chain. A
// device that is slow (slowAnswer) moves its valid state checks, when
// they run in their place, to a stand-in where the fleet has one
// (standin.go). Against a target on this machine nothing is batched: its
// requests cost CPU, not waiting, and the run is as fast one at a time.
//
// The package decides what is sent together and hands each check what
// its requests got; the check bodies, what they judge and in which order
// the run reaches them are the run's (package conformance).
package batch

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/internal/control"
	"github.com/gwdmi/gwtools/conformance/internal/schedule"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Config is what a Sender works with, all of it the run's.
type Config struct {
	// Bench builds the checks' requests; its Target is the one the run's
	// check has now (a stand-in while a check runs on one).
	Bench *catalog.Bench
	// Link is how the run speaks to its target.
	Link func() *link.Link
	// Controls are the run's controls of refusals.
	Controls *control.Store
	// PutBack arranges for a device a call may change to be put back
	// when the run ends.
	PutBack func(context.Context, catalog.Call)
	// Concurrency is the most requests in flight at once (2 or more to
	// send anything together); DryRun sends nothing.
	Concurrency int
	DryRun      bool
	// Ahead is the run's checks run ahead of their place: a device's
	// checks are sent together only in its chain.
	Ahead *schedule.Ahead
	// Trips counts each device's round trips one after another.
	Trips *schedule.Trips
}

// Sender is a process's devices' answer times and the checks it sends
// together. Make it with New.
type Sender struct {
	cfg   Config
	bench *catalog.Bench
	mu    sync.Mutex
	// answers are the last answer times per device (catalog.HexOnly
	// serial), target the last of every request, whatever it names (the
	// pre-flight's too).
	answers map[string][]time.Duration
	target  []time.Duration
	// farKeys are the devices whose median answer is batchFrom or more,
	// targetFar whether the target's is (Far).
	farKeys   map[string]bool
	targetFar bool
	// plans by check ID; ran the checks that have started.
	plans map[string]Plan
	ran   map[string]bool
	// batched: the devices whose checks were sent concurrently.
	batched map[string]bool
	fetched map[string]*fetched
	// stand: the state checks moved off slow devices (standin.go).
	stand standIns
	// lanes: the state checks sent in lanes, per slow device (lanes.go).
	lanes map[string]lanesNote
}

// New is a Sender over the run's cfg.
func New(cfg Config) *Sender { return &Sender{cfg: cfg, bench: cfg.Bench} }

// Kind is what a planned check sends.
type Kind int

const (
	// Answer: the case in one format (or both: parity), judging the
	// answers only.
	Answer Kind = iota
	// RefusalState: the state check of a refusal: read, send, read.
	RefusalState
	// ValidState: the state check of a valid value: sent in its device's
	// lane (lanes.go) when the device has no stand-in (standin.go).
	ValidState
)

// Plan is a check whose requests may be sent together with others.
type Plan struct {
	ID      string
	Case    catalog.Case
	Formats []device.Format
	Kind    Kind
	// Refusal: the case expects a refusal, judged against its controls.
	Refusal bool
}

// Step is one thing a check did, fetched ahead: a request and its answer,
// or what the observer showed (State).
type Step struct {
	Resp  *client.Response
	Ex    client.Exchange
	State *observer.State
}

// fetched are a check's steps, in the order its body takes them; shared:
// its answers are also those of the case's other checks that judge the
// same request.
type fetched struct {
	steps  []Step
	next   int
	shared bool
	// lane: a valid value's state check sent in its device's lane (lanes.go).
	lane *laneResult
}

// Plan registers a check that will run in this process and may be sent
// with its device's others; the run decides which (it never plans a
// check whose request must go alone).
func (s *Sender) Plan(p Plan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plans == nil {
		s.plans = map[string]Plan{}
	}
	s.plans[p.ID] = p
}

// Run runs a planned check's body: on a far device from the steps fetched
// ahead, confirmed alone when it fails so; else as it is.
func (s *Sender) Run(ctx context.Context, id string, body func(context.Context)) {
	trial.Helper()
	f := s.take(ctx, id)
	if f == nil {
		body(ctx)
		return
	}
	t := trial.From(ctx)
	if f.shared {
		t.By("sent with the other checks of its slow device, concurrently: the case's request in each format was sent once, and its answer judged by each of the case's checks that judge that request")
	}
	rec := trial.Recording()
	end := rec.Run(func() { body(trial.With(context.WithValue(ctx, fetchedKey{}, f), rec)) })
	if end.Outcome != trial.Failed || !end.Expectation {
		rec.Replay(t, end)
		return
	}
	rec.ReplaySteps(t)
	t.By("failed while sent concurrently with other checks of its slow device (" + strings.SplitN(end.Message, "\n", 2)[0] + "): confirmed alone")
	body(ctx)
}

// fetchedKey carries in a check's context the steps fetched ahead for it
// (Replay).
type fetchedKey struct{}

// Fetched says whether the running check's steps were fetched ahead (its
// reads and requests are replayed, not made now).
func Fetched(ctx context.Context) bool {
	f, _ := ctx.Value(fetchedKey{}).(*fetched)
	return f != nil && len(f.steps) > 0
}

// Replay is the next step fetched ahead for the running check, if it has
// one of that kind (wantState: what the observer showed; else an answer).
func Replay(ctx context.Context, wantState bool) (Step, bool) {
	f, _ := ctx.Value(fetchedKey{}).(*fetched)
	if f == nil || f.next >= len(f.steps) {
		return Step{}, false
	}
	st := f.steps[f.next]
	if (st.State != nil) != wantState {
		return Step{}, false
	}
	f.next++
	return st, true
}

// take is a check's steps fetched ahead, when its device is far: the
// first such check of a device sends its batch.
func (s *Sender) take(ctx context.Context, id string) *fetched {
	s.mu.Lock()
	if s.ran == nil {
		s.ran = map[string]bool{}
	}
	s.ran[id] = true
	p, planned := s.plans[id]
	f := s.fetched[id]
	delete(s.fetched, id)
	s.mu.Unlock()
	if f != nil || !planned {
		return f
	}
	if !s.cfg.Ahead.Running() {
		// A device's checks are sent together in its chain, when the run
		// runs them ahead of their place; in their place they go one at a
		// time.
		return nil
	}
	sn := DeviceOf(s.bench, p.Case, p.Formats[0])
	if sn == "" {
		return nil
	}
	// The target is far: a device's checks are sent together when its
	// chain reaches them, unless its own answers say it is near.
	s.mu.Lock()
	first := s.dueForBatch(sn)
	s.mu.Unlock()
	if !first {
		return nil
	}
	s.send(ctx, sn, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	f = s.fetched[id]
	delete(s.fetched, id)
	return f
}

// DeviceOf is what a case's requests in format f touch, by which its
// checks are sent together: the device (catalog.HexOnly serial), or for a
// message its gateway (link.LogKey); "" when none.
func DeviceOf(b *catalog.Bench, c catalog.Case, f device.Format) string {
	call, skip := c.Build(b, f, c.ID)
	switch {
	case skip != "":
		return ""
	case call.Op == device.SendMessage:
		// Every message case is about the tested gateway's log, whatever
		// mac it sends (the others are WholeFleet, never planned).
		return link.LogKey(b.Target.MAC)
	case call.SN == "":
		return ""
	}
	return catalog.HexOnly(call.SN)
}

// link is the run's link.
func (s *Sender) link() *link.Link { return s.cfg.Link() }

// runAll runs jobs, Concurrency at a time, and waits for them.
func (s *Sender) runAll(jobs []func()) { schedule.N(jobs, s.cfg.Concurrency) }

// waves is how many round trips one after another n requests take when
// sent Concurrency at a time.
func (s *Sender) waves(n int) int {
	k := max(s.cfg.Concurrency, 1)
	return (n + k - 1) / k
}
