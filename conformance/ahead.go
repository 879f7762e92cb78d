package conformance

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/conformance/schedule"
	"github.com/gwdmi/gwtools/conformance/trial"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Devices side by side. Ginkgo runs a process's checks one at a time, in
// their place; against a target across a network each waits for its round
// trips, and the run takes the sum of every device's chain of changes and
// read-backs. So once the target is found far (a device's median answer
// batchFrom or more), the checks about one device, or about the tested
// gateway's messages, that have not run yet are run ahead of their place,
// a stretch at a time: from the check whose place has come to the next
// check that runs in its place (an effect check), so that no check runs
// before one declared ahead of it that runs in its place. In a stretch,
// each device's checks run one after another in the order of the run (a
// change, its read-back, the next change, as in a serial run), the devices
// side by side (package schedule), all within the run's one bound of
// requests in flight (Env.slot). What each check's body tells (its steps, its
// exchanges, how it ended) is recorded (package trial), and told to
// Ginkgo when the check's place comes: the reports read as a serial run's.
// A check that failed ahead is run again alone in its place, and only that
// result counts: a failure found while devices ran side by side is
// confirmed alone before it is reported. A request is written, timestamp
// and sign, when it goes (client.Request.Renew), so a timestamp a second
// from the window's edge means what it tests in a chain as well. The
// effect checks, which change one device and watch every other, a slow
// device's state checks that may move to a stand-in (spread.go), and every
// check of a run sent one request at a time (--concurrency 1, a dry run,
// --max-requests) run in their place.

// aheadCheck is a check of this process, in the order of the run: key
// names what it touches when it is about one device or the tested
// gateway's messages, and is nil for a check that runs in its place.
type aheadCheck struct {
	m    check.Meta
	key  func() string
	body func(context.Context)
}

// aheadResult is what a check run ahead told, and how it ended.
type aheadResult struct {
	t   *trial.T
	end trial.Ending
}

// ahead is a process's checks, and those run ahead of their place.
type ahead struct {
	mu      sync.Mutex
	checks  []aheadCheck
	index   map[string]int
	started map[string]bool
	// covered: the checks a stretch has gone over, run ahead or not
	// (results: what each run ahead told).
	covered map[string]bool
	running atomic.Bool
	results map[string]aheadResult
	// progress is the chains running; checks, chains and took what all
	// the stretches run ahead came to.
	progress    *schedule.Progress
	checksAhead int
	chains      int
	took        time.Duration
}

// declare registers a check that will run in this process, in the order
// of the run. A check that runs in its place (key nil) ends a stretch:
// no check declared after it runs before it.
func (a *ahead) declare(env *Env, m check.Meta, key func() string, body func(context.Context)) {
	if !willRun(env.slow.suite, check.Finish(m)) {
		return
	}
	if !env.mayRunAhead() {
		key = nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.index == nil {
		a.index = map[string]int{}
	}
	a.index[m.ID] = len(a.checks)
	a.checks = append(a.checks, aheadCheck{m: m, key: key, body: body})
}

// caseKey is what a case's requests in format f touch, for the chains:
// the device it names, or the tested gateway's messages (a case about
// another gateway or account names a device no chain of the tested
// gateway touches, or that gateway's messages, which only the effect
// checks read).
func (env *Env) caseKey(c catalog.Case, f device.Format) func() string {
	return func() string { return env.planDevice(plan{c: c, formats: []device.Format{f}}) }
}

// probeKey is what a probe's requests touch: the device of its type, the
// tested gateway's messages, or the first device of the fleet (the one a
// probe about no type sends to: Bench.AnyDevice).
func (env *Env) probeKey(p probe) func() string {
	return func() string {
		switch {
		case p.op == device.SendMessage:
			return gatewayKey + hexOnly(env.Target.MAC)
		case p.typ != "":
			if d, ok := env.Device(p.typ); ok {
				return hexOnly(d.SN)
			}
		default:
			if d, ok := env.AnyDevice(); ok {
				return hexOnly(d.SN)
			}
		}
		return ""
	}
}

// mayRunAhead says whether the run may send several requests at once.
func (env *Env) mayRunAhead() bool {
	return env.collect == nil && !env.DryRun && env.MaxRequests == 0 && env.concurrency() >= 2
}

// runCheck runs a check in its place: told from what it recorded ahead,
// or confirmed alone when it failed there, or run as it is. A check about
// one device that finds the target far first runs ahead the checks of
// its stretch that have not started.
func (env *Env) runCheck(ctx context.Context, id string, body func(context.Context)) {
	env.ahead.mu.Lock()
	if env.ahead.started == nil {
		env.ahead.started = map[string]bool{}
	}
	env.ahead.started[id] = true
	env.ahead.mu.Unlock()
	env.runAhead(ctx, id)
	env.ahead.mu.Lock()
	r, ok := env.ahead.results[id]
	delete(env.ahead.results, id)
	env.ahead.mu.Unlock()
	if !ok {
		body(ctx)
		return
	}
	live := trial.From(ctx)
	if r.end.Outcome != trial.Failed {
		r.t.Replay(live, r.end)
		return
	}
	r.t.ReplaySteps(live)
	live.By("failed while run ahead of its place, beside the checks of other devices (" + strings.SplitN(r.end.Message, "\n", 2)[0] + "): confirmed alone")
	body(ctx)
}

// runAhead runs ahead of their place, when the target is found far, the
// checks of id's stretch (from id to the next check that runs in its
// place) that have not started and were not run ahead: each device's in
// a chain, the chains side by side. It returns when they have all run.
func (env *Env) runAhead(ctx context.Context, id string) {
	a := &env.ahead
	a.mu.Lock()
	i, ok := a.index[id]
	if !ok || a.checks[i].key == nil || a.covered[id] || !env.far() || env.silent.Load() >= maxSilent {
		a.mu.Unlock()
		return
	}
	if a.covered == nil {
		a.covered = map[string]bool{}
	}
	var tasks []schedule.Task
	for _, c := range a.checks[i:] {
		if c.key == nil {
			break // the stretch ends where a check runs in its place
		}
		if a.covered[c.m.ID] {
			continue
		}
		a.covered[c.m.ID] = true
		if a.started[c.m.ID] {
			continue
		}
		key := c.key()
		if key == "" {
			continue
		}
		c := c
		tasks = append(tasks, schedule.Task{ID: c.m.ID, Key: key, Run: func() { env.runOneAhead(ctx, c) }})
	}
	if len(tasks) == 0 {
		a.mu.Unlock()
		return
	}
	if a.results == nil {
		a.results = map[string]aheadResult{}
	}
	progress := schedule.NewProgress(tasks)
	a.progress = progress
	a.mu.Unlock()
	a.running.Store(true)
	began := time.Now()
	progress.Run(tasks)
	a.running.Store(false)
	a.mu.Lock()
	a.checksAhead += progress.Done()
	a.chains = max(a.chains, progress.Chains())
	a.took += time.Since(began)
	a.mu.Unlock()
}

// runOneAhead runs one check's body under a recording trial.
func (env *Env) runOneAhead(ctx context.Context, c aheadCheck) {
	rec := trial.Recording()
	end := rec.Run(func() { c.body(trial.With(ctx, rec)) })
	if end.Outcome == trial.InPlace {
		return // it runs in its place
	}
	env.ahead.mu.Lock()
	env.ahead.results[c.m.ID] = aheadResult{t: rec, end: end}
	env.ahead.mu.Unlock()
}

// aheadRun says what ran ahead of its place, for the reports (nil when
// nothing did).
func (env *Env) aheadRun() *report.Ahead {
	a := &env.ahead
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.checksAhead == 0 {
		return nil
	}
	return &report.Ahead{Checks: a.checksAhead, Chains: a.chains, Seconds: math.Round(a.took.Seconds()*100) / 100}
}

// far says whether the target answers a device (or the tested gateway's
// messages) in batchFrom or more: across a network.
func (env *Env) far() bool {
	s := &env.slow
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.answers {
		if m, ok := s.medianAnswer(k); ok && m >= batchFrom {
			return true
		}
	}
	return false
}

// AheadNote is the progress line's part on the checks run ahead: how
// many of them have run, and the chain expected to end last with its
// expected end ("" when none runs ahead).
func (env *Env) AheadNote() string {
	a := &env.ahead
	a.mu.Lock()
	p := a.progress
	a.mu.Unlock()
	if p == nil || !a.running.Load() {
		return ""
	}
	ch, ok := p.Longest()
	if !ok {
		return ""
	}
	s := fmt.Sprintf("%d checks run ahead, devices side by side; the last to end: %s, %d of %d checks", p.Done(), env.chainName(ch.Key), ch.Done, ch.Total)
	if ch.Left > 0 {
		s += fmt.Sprintf(", about %s left", ch.Left.Round(time.Second))
	}
	return s
}
