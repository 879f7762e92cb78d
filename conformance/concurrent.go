package conformance

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/schedule"
	"github.com/gwdmi/gwtools/conformance/trial"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// Scheduling by what a check touches. Against a target across a network
// (75 ms a round trip), some 5,000 requests one after another take six
// minutes, though most checks change nothing when the target is right.
// So once a target answers slower than batchFrom (any target that is not
// on this machine), each device's checks that are left, and the tested
// gateway's message checks, are planned by what they touch: those that
// judge only an answer (a case's MUST, SHOULD and parity checks) and the
// state checks of its refusals are sent together, Concurrency at a time:
// first the valid requests and the refusals' controls (they change the
// device, but none of these checks reads it), then, once the device is
// quiet, the refusals whose control was accepted (they must change
// nothing, and their state checks read the device, or the gateway's
// messages, before and after). A device's state checks of valid values
// go in its lane (lanes.go), never two in flight that would leave the same
// state. A device's batch is sent when its chain (ahead.go) reaches its
// first planned check: the devices proceed side by side, each in its own
// chain, all within the run's one bound of requests in flight (link.Link.Slot).
// Each check then judges what its own requests got; a check that fails so
// is run again alone, and only that result counts: a failure found while
// running concurrently is confirmed alone before it is reported. The valid
// messages' state checks stay one at a time in their chain. A device that
// is slow (slowAnswer) moves its valid state checks, when they run in
// their place, to a stand-in where the fleet has one (spread.go). Against
// a target on this machine nothing is batched: its requests cost CPU, not
// waiting, and the run is as fast one at a time.

const (
	// slowAnswer is the median answer time from which a device is slow.
	slowAnswer = 400 * time.Millisecond
	// batchFrom is the median answer time from which a device's checks
	// (or a gateway's messages) are sent together, Concurrency at a time.
	// A target on this machine answers in well under a millisecond and
	// its requests cost CPU, not waiting: sending them together gains
	// nothing there, and each batch waits for the device to be quiet. Any
	// target across a network answers slower than this.
	batchFrom = 5 * time.Millisecond
	// slowSamples is how many answers a device's median is taken over.
	slowSamples = 5
)

// planKind is what a check sends, for the concurrent part.
type planKind int

const (
	// planAnswer: the case in one format (or both: parity), judging the
	// answers only.
	planAnswer planKind = iota
	// planRefusalState: the state check of a refusal: read, send, read.
	planRefusalState
	// planValidState: the state check of a valid value: sent in its
	// device's lane (lanes.go) when the device has no stand-in (spread.go).
	planValidState
)

// plan is a check whose requests may be sent concurrently on a slow
// device.
type plan struct {
	id      string
	c       catalog.Case
	formats []device.Format
	kind    planKind
	// refusal: the case expects a refusal, judged against its controls.
	refusal bool
}

// step is one thing a check did, fetched ahead: a request and its answer,
// or what the observer showed.
type step struct {
	resp *client.Response
	ex   client.Exchange
	st   *state
}

// fetched are a check's steps, in the order its body takes them; shared:
// its answers are also those of the case's other checks that judge the
// same request.
type fetched struct {
	steps  []step
	next   int
	shared bool
	// lane: a valid value's state check sent in its device's lane (lanes.go).
	lane *laneResult
}

// slowState is a process's slow devices and their checks.
type slowState struct {
	mu sync.Mutex
	// answers are the last answer times per device (catalog.HexOnly
	// serial), target the last of every request, whatever it names (the
	// pre-flight's too).
	answers map[string][]time.Duration
	target  []time.Duration
	// plans by check ID; ran the checks that have started.
	plans map[string]plan
	ran   map[string]bool
	// batched: the devices whose checks were sent concurrently.
	batched map[string]bool
	fetched map[string]*fetched
	// ctlEx are the exchanges of controls sent concurrently, recorded by
	// the first check that uses each.
	ctlEx map[controlKey]client.Exchange
	// suite is the run's filter, to plan only checks that will run.
	suite types.SuiteConfig
	// stand: the state checks moved off slow devices (spread.go).
	stand standIns
	// lanes: the state checks sent in lanes, per slow device (lanes.go).
	lanes map[string]lanesNote
}

// timeAnswer keeps the answer time of a request about a device.
func (env *Env) timeAnswer(req client.Request, ex client.Exchange) {
	if ex.Duration <= 0 {
		return
	}
	sn := env.link().Key(req)
	s := &env.slow
	s.mu.Lock()
	defer s.mu.Unlock()
	s.target = lastAnswers(s.target, ex.Duration)
	if sn == "" {
		return
	}
	if s.answers == nil {
		s.answers = map[string][]time.Duration{}
	}
	s.answers[sn] = lastAnswers(s.answers[sn], ex.Duration)
}

// lastAnswers is a with d added, the last slowSamples kept.
func lastAnswers(a []time.Duration, d time.Duration) []time.Duration {
	a = append(a, d)
	if len(a) > slowSamples {
		a = a[len(a)-slowSamples:]
	}
	return a
}

// sentAhead says whether any device's checks were sent together.
func (s *slowState) sentAhead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.batched) > 0
}

// dueForBatch says whether a device of a target found far is to have
// its checks sent together now, and marks them sent: due unless its own
// answers say it is near, or they were sent. s.mu is held.
func (s *slowState) dueForBatch(sn string) bool {
	if m, ok := s.medianAnswer(sn); (ok && m < batchFrom) || s.batched[sn] {
		return false
	}
	if s.batched == nil {
		s.batched = map[string]bool{}
	}
	s.batched[sn] = true
	return true
}

// medianAnswer is a device's median answer time over its last answers,
// and whether it has enough of them.
func (s *slowState) medianAnswer(sn string) (time.Duration, bool) {
	return median(s.answers[sn])
}

// median is the median of answer times, and whether there are enough of
// them to tell.
func median(answers []time.Duration) (time.Duration, bool) {
	a := append([]time.Duration(nil), answers...)
	if len(a) < 3 {
		return 0, false
	}
	sort.Slice(a, func(i, j int) bool { return a[i] < a[j] })
	return a[len(a)/2], true
}

// SlowNote names the slow devices and their median answer times, and
// what was moved to a stand-in (spread.go), for the progress line (""
// when none is slow).
func (env *Env) SlowNote() string {
	s := &env.slow
	s.mu.Lock()
	defer s.mu.Unlock()
	var notes []string
	for _, sn := range s.sortedSlow() {
		m, _ := s.medianAnswer(sn)
		notes = append(notes, fmt.Sprintf("slow device %s: median answer %s%s%s", env.deviceName(sn), m.Round(10*time.Millisecond), env.standInNote(sn), s.lanesNoteFor(sn)))
	}
	return strings.Join(notes, ", ")
}

// deviceName is a device of the fleet by type and serial. It reads the
// fleet, never env.Target (a check may set that to a stand-in while the
// progress line is written).
func (env *Env) deviceName(sn string) string {
	if d, ok := env.fleetDevice(sn); ok {
		return d.Type + " " + d.SN
	}
	return sn
}

// fleetDevice is the fleet's device of a serial (catalog.HexOnly).
func (env *Env) fleetDevice(sn string) (fleet.Device, bool) {
	if env.Fleet != nil {
		for _, a := range env.Fleet.Accounts {
			for _, g := range a.Gateways {
				for _, d := range g.Devices {
					if catalog.HexOnly(d.SN) == sn {
						return d, true
					}
				}
			}
		}
	}
	return fleet.Device{}, false
}

// planCheck registers a check of a case for the concurrent part, when it
// will run in this process.
func (env *Env) planCheck(m check.Meta, p plan) {
	if env.collect != nil || env.DryRun || env.MaxRequests > 0 || p.c.WholeFleet || env.concurrency() < 2 {
		return
	}
	if strings.Contains(p.c.ID, ".timestamp.") && hasTag(p.c.Tags, "boundary") {
		// A timestamp a second from the window's edge means what it
		// tests only when sent in the second it names: never held back
		// behind other requests.
		return
	}
	if p.c.Op == device.SendMessage && p.kind == planValidState {
		// A valid message's state check wants its message last in the
		// gateway's log, which every message sent beside it would change:
		// it runs alone. A refusal's looks only for its own message
		// (observer.Log.UnchangedBy), whatever else the log gains.
		return
	}
	if env.Workers > 1 && env.workerOf(m.ID, env.Workers) != env.Worker {
		return
	}
	s := &env.slow
	if !willRun(s.suite, check.Finish(m)) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plans == nil {
		s.plans = map[string]plan{}
	}
	p.id = m.ID
	s.plans[m.ID] = p
}

// willRun says whether Ginkgo will run a check under the run's filter,
// as Ginkgo decides it (its label filter, focus and skip on the spec's
// full text).
func willRun(cfg types.SuiteConfig, m check.Meta) bool {
	if cfg.LabelFilter != "" {
		f, err := types.ParseLabelFilter(cfg.LabelFilter)
		if err != nil || !f(m.Labels()) {
			return false
		}
	}
	text := "gwconform " + suiteText + " " + m.Text()
	if len(cfg.FocusStrings) > 0 {
		re, err := regexp.Compile(strings.Join(cfg.FocusStrings, "|"))
		if err != nil || !re.MatchString(text) {
			return false
		}
	}
	if len(cfg.SkipStrings) > 0 {
		re, err := regexp.Compile(strings.Join(cfg.SkipStrings, "|"))
		if err != nil || re.MatchString(text) {
			return false
		}
	}
	return true
}

// concurrently runs a planned check's body: on a slow device from the
// steps fetched ahead, confirmed alone when it fails so; else as it is.
func (env *Env) concurrently(ctx context.Context, id string, body func(context.Context)) {
	ginkgo.GinkgoHelper()
	f := env.takeFetched(ctx, id)
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
// (replayStep).
type fetchedKey struct{}

// takeFetched is a check's steps fetched ahead, when its device is slow:
// the first such check of a device sends the concurrent part.
func (env *Env) takeFetched(ctx context.Context, id string) *fetched {
	s := &env.slow
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
	if !env.ahead.Running() {
		// A device's checks are sent together in its chain, when the run
		// runs them ahead of their place (ahead.go); in their place they
		// go one at a time.
		return nil
	}
	sn := env.planDevice(p)
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
	env.sendConcurrently(ctx, sn, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	f = s.fetched[id]
	delete(s.fetched, id)
	return f
}

// planDevice is what a planned check's requests touch, by which its
// checks are sent together: the device (catalog.HexOnly serial), or for a message
// its gateway (link.LogKey).
func (env *Env) planDevice(p plan) string {
	c, skip := p.c.Build(&env.Bench, p.formats[0], p.c.ID)
	switch {
	case skip != "":
		return ""
	case c.Op == device.SendMessage:
		// Every message case is about the tested gateway's log, whatever
		// mac it sends (the others are WholeFleet, never planned).
		return link.LogKey(env.Target.MAC)
	case c.SN == "":
		return ""
	}
	return catalog.HexOnly(c.SN)
}

// runAll runs jobs, Concurrency at a time, and waits for them.
func (env *Env) runAll(jobs []func()) { schedule.N(jobs, env.concurrency()) }

// replayStep is the next step fetched ahead for the running check, if
// it has one of that kind.
func (env *Env) replayStep(ctx context.Context, wantState bool) (step, bool) {
	f, _ := ctx.Value(fetchedKey{}).(*fetched)
	if f == nil || f.next >= len(f.steps) {
		return step{}, false
	}
	st := f.steps[f.next]
	if (st.st != nil) != wantState {
		return step{}, false
	}
	f.next++
	return st, true
}

// asked is what a probe's request got: the answer (nil when none came)
// and the words ask gives it.
type asked struct {
	r   *client.Response
	got string
}

// askAll asks each call in format f, as ask does one after another, and
// gives what each got, in order. When they all name one device of a
// target across a network (batchFrom), they are sent together
// (Concurrency at a time): a probe judges nothing
// and only reports answers, which do not depend on the order the device
// takes them in. Their exchanges are recorded in order; the device's
// expected state is then unknown (the order the target applied the
// accepted ones in is), so it is forgotten rather than waited for.
func (env *Env) askAll(ctx context.Context, calls []catalog.Call, f device.Format) []asked {
	out := make([]asked, len(calls))
	sn := ""
	for i, c := range calls {
		if i == 0 {
			sn = catalog.HexOnly(c.SN)
		}
		if c.SN == "" || catalog.HexOnly(c.SN) != sn {
			sn = ""
			break
		}
	}
	s := &env.slow
	s.mu.Lock()
	m, ok := s.medianAnswer(sn)
	s.mu.Unlock()
	if len(calls) < 2 || sn == "" || !ok || m < batchFrom || env.concurrency() < 2 || env.DryRun || env.MaxRequests > 0 || env.link().Stopped() {
		for i, c := range calls {
			out[i].r, out[i].got = env.ask(ctx, c, f)
		}
		return out
	}
	trial.From(ctx).By(fmt.Sprintf("%d requests to the device %s sent together (they are only reported, not judged)", len(calls), env.deviceName(sn)))
	exs := make([]client.Exchange, len(calls))
	errs := make([]error, len(calls))
	jobs := make([]func(), len(calls))
	for i, c := range calls {
		jobs[i] = func() { out[i].r, exs[i], errs[i] = env.link().RoundTrip(ctx, c.Request(f)) }
	}
	env.runAll(jobs)
	anyAccepted := false
	for i := range calls {
		env.link().Record(ctx, exs[i])
		if errs[i] != nil {
			out[i].r, out[i].got = nil, fmt.Sprintf("no answer from the target: %v", errs[i])
			continue
		}
		verdict := "rejected"
		if link.Accepted(out[i].r) {
			verdict, anyAccepted = "accepted", true
		}
		out[i].got = verdict + " (" + describe(out[i].r) + ")"
	}
	if anyAccepted {
		env.link().Forget(sn)
	}
	return out
}
