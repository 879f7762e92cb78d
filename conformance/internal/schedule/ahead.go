package schedule

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/conformance/internal/trial"
)

// Running ahead. A run's checks come to their place one at a time, in the
// order they are declared; against a target across a network each waits
// for its round trips, and the run takes the sum of every device's chain
// of changes and read-backs. Ahead runs the checks about one thing (a
// device, a gateway's messages) that have not started ahead of their
// place, a stretch at a time: from the check whose place has come to the
// next check that runs in its place, so that no check runs before one
// declared ahead of it that runs in its place. In a stretch, each key's
// checks run one after another in the order declared, the keys side by
// side (Chains); the stretch's checks about no such thing (a request that
// names no device of the fleet) then run side by side, once the chains
// have ended, each on its own. What each check's body tells (its steps,
// its exchanges, how it ended) is recorded (package trial) and told when the check's
// place comes, so the reports read as a serial run's. A check that failed
// ahead is run again alone in its place, and only that result counts: a
// failure found while other keys ran beside it is confirmed alone before
// it is reported. A body that can be judged only in its place ends with
// trial.T.InPlace before it sends anything, and runs again there.

// Check is a check as Ahead knows it: Key names what it touches when it is
// about one thing ("" when, as it turns out, it is about none of the
// things the chains touch: it runs ahead once the stretch's chains have
// ended, beside the stretch's other checks about none), and is nil for a
// check that runs in its place; Body runs it.
type Check struct {
	ID   string
	Key  func() string
	Body func(context.Context)
	// Expect, when set, is the time the check is known to take in its
	// place before it runs (a phase with a time budget), counted in Left
	// instead of the pace of checks run in place.
	Expect func() time.Duration
}

// aheadResult is what a check run ahead told, and how it ended.
type aheadResult struct {
	t   *trial.T
	end trial.Ending
}

// Ahead is a run's checks, in the order they run, and those run ahead of
// their place. Declare every check first, then Run each in its place.
type Ahead struct {
	mu      sync.Mutex
	checks  []Check
	index   map[string]int
	started map[string]bool
	// covered: the checks a stretch has gone over, run ahead or not
	// (results: what each run ahead told).
	covered map[string]bool
	running atomic.Bool
	results map[string]aheadResult
	// progress is the chains running; checks, chains and took what all
	// the stretches run ahead came to.
	progress    *Progress
	checksAhead int
	chains      int
	took        time.Duration
	// inPlace and inPlaceTook: the checks whose bodies ran in their place
	// so far, and the time they took (the pace of what is left to run in
	// place).
	inPlace     int
	inPlaceTook time.Duration
	// due: when each check with Expect running now is expected to end.
	due map[string]time.Time
	// now is the clock the paces are measured with (time.Now when nil).
	now func() time.Time
	// placed: the checks a stretch went over that end in their place
	// (trial.T.InPlace), still to run there.
	placed map[string]bool
}

// Declare adds a check, in the order the checks run. A check that runs in
// its place (Key nil) ends a stretch: no check declared after it runs
// before it.
func (a *Ahead) Declare(c Check) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.index == nil {
		a.index = map[string]int{}
	}
	a.index[c.ID] = len(a.checks)
	a.checks = append(a.checks, c)
}

// IDs are the checks declared, in order.
func (a *Ahead) IDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := make([]string, len(a.checks))
	for i, c := range a.checks {
		ids[i] = c.ID
	}
	return ids
}

// Run runs the check id in its place: told from what it recorded ahead,
// or confirmed alone when it failed there, or run as it is (body). When
// ahead says so (the target is found far) and the check is about one
// thing, it first runs ahead the checks of its stretch that have not
// started.
func (a *Ahead) Run(ctx context.Context, id string, body func(context.Context), ahead func() bool) {
	a.mu.Lock()
	if a.started == nil {
		a.started = map[string]bool{}
	}
	a.started[id] = true
	if i, ok := a.index[id]; ok && a.checks[i].Expect != nil {
		if a.due == nil {
			a.due = map[string]time.Time{}
		}
		a.due[id] = a.clock().Add(a.checks[i].Expect())
		defer func() {
			a.mu.Lock()
			delete(a.due, id)
			a.mu.Unlock()
		}()
	}
	a.mu.Unlock()
	a.runStretch(ctx, id, ahead)
	a.mu.Lock()
	r, ok := a.results[id]
	delete(a.results, id)
	a.mu.Unlock()
	if !ok {
		a.timed(ctx, body)
		return
	}
	live := trial.From(ctx)
	if r.end.Outcome != trial.Failed {
		r.t.Replay(live, r.end)
		return
	}
	r.t.ReplaySteps(live)
	live.By("failed while run ahead of its place, beside the checks of other devices (" + strings.SplitN(r.end.Message, "\n", 2)[0] + "): confirmed alone")
	a.timed(ctx, body)
}

// timed runs a check's body in its place and counts its time in the pace
// of checks run in place.
func (a *Ahead) timed(ctx context.Context, body func(context.Context)) {
	began := a.clock()
	defer func() {
		a.mu.Lock()
		a.inPlace++
		a.inPlaceTook += a.clock().Sub(began)
		a.mu.Unlock()
	}()
	body(ctx)
}

// minPlaced and minPlacedTime are how many checks run in their place, and
// how long they took, before their pace is taken to estimate the rest: the
// first checks (the pre-flight's controls, a far device's first) say
// nothing of the others.
const (
	minPlaced     = 20
	minPlacedTime = 2 * time.Second
)

// Left is the schedule's estimate of the time the checks not yet done
// will take, and whether there is one. Each check left is counted at the
// pace of its kind, as the schedule will run it: one that told its result
// ahead costs nothing more; one that runs in its place (it ends a
// stretch, or it ran ahead only to find it runs in its place) costs the
// mean time of the checks run in place so far; one a later stretch will
// run ahead costs the mean time a check took in the stretches so far
// (the devices side by side), or the in-place pace before any stretch
// ran. A stretch running now adds its longest chain's time left, a check
// with Expect running now what is left of its expected time. The pace of
// checks in place is measured over minPlaced checks and minPlacedTime;
// before that the estimate counts the others only, and says how many it
// leaves out (Estimate.Unpaced).
func (a *Ahead) Left() (Estimate, bool) {
	var chain, stretchPace time.Duration
	unknownChain := 0
	if p, ok := a.Progress(); ok {
		if ch, ok := p.Longest(); ok {
			chain = ch.Left
			if ch.Unknown {
				unknownChain = ch.Total - ch.Done
			} else if n := p.Done(); n > 0 {
				stretchPace = ch.Took / time.Duration(n)
			}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	placed, ahead, expected := 0, 0, time.Duration(0)
	for _, c := range a.checks {
		if a.started[c.ID] {
			continue
		}
		if r, told := a.results[c.ID]; told {
			if r.end.Outcome == trial.Failed {
				placed++ // confirmed alone in its place
			}
			continue
		}
		switch {
		case c.Expect != nil:
			expected += c.Expect()
		case c.Key == nil || a.placed[c.ID]:
			placed++
		case !a.covered[c.ID]:
			ahead++
		}
		// Otherwise it runs in the stretch under way: its time is in
		// the longest chain's.
	}
	now := a.clock()
	for _, due := range a.due {
		expected += max(0, due.Sub(now))
	}
	measured := a.inPlace >= minPlaced && a.inPlaceTook >= minPlacedTime
	var placePace time.Duration
	if measured {
		placePace = a.inPlaceTook / time.Duration(a.inPlace)
	}
	aheadPace := stretchPace
	if a.checksAhead > 0 {
		aheadPace = a.took / time.Duration(a.checksAhead)
	}
	if aheadPace == 0 {
		aheadPace = placePace
	}
	e := Estimate{Left: chain + expected + time.Duration(placed)*placePace + time.Duration(ahead)*aheadPace, Unpaced: unknownChain}
	if placePace == 0 {
		e.Unpaced += placed
	}
	if aheadPace == 0 {
		e.Unpaced += ahead
	}
	return e, e.Left > 0
}

// Estimate is the schedule's estimate of the time left.
type Estimate struct {
	Left time.Duration
	// Unpaced is how many checks left have no pace measured yet: Left
	// counts only the others.
	Unpaced int
}

// runStretch runs ahead of their place the checks of id's stretch (from
// id to the next check that runs in its place) that have not started and
// were not run ahead: each key's in a chain, the chains side by side. It
// returns when they have all run.
func (a *Ahead) runStretch(ctx context.Context, id string, ahead func() bool) {
	a.mu.Lock()
	i, ok := a.index[id]
	if !ok || a.checks[i].Key == nil || a.covered[id] || !ahead() {
		a.mu.Unlock()
		return
	}
	tasks, none := a.stretch(ctx, i)
	if len(tasks)+len(none) == 0 {
		a.mu.Unlock()
		return
	}
	progress := NewProgress(tasks)
	a.progress = progress
	a.mu.Unlock()
	a.running.Store(true)
	began := a.clock()
	progress.Run(tasks)
	// The checks about none of the chains' things, once the chains have
	// ended: each on its own, side by side, none of them beside a chain.
	others := NewProgress(none)
	others.Run(none)
	a.running.Store(false)
	a.mu.Lock()
	a.checksAhead += progress.Done() + others.Done()
	a.chains = max(a.chains, progress.Chains())
	a.took += a.clock().Sub(began)
	a.mu.Unlock()
}

func (a *Ahead) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

// stretch marks covered the checks from i to the next that runs in its
// place, and gives the tasks of those not started: of the checks about
// one thing each (tasks, keyed by it) and of those about none (none, each
// keyed by its ID). a.mu is held.
func (a *Ahead) stretch(ctx context.Context, i int) (tasks, none []Task) {
	if a.covered == nil {
		a.covered = map[string]bool{}
	}
	if a.results == nil {
		a.results = map[string]aheadResult{}
	}
	for _, c := range a.checks[i:] {
		if c.Key == nil {
			break // the stretch ends where a check runs in its place
		}
		if a.covered[c.ID] {
			continue
		}
		a.covered[c.ID] = true
		if a.started[c.ID] {
			continue
		}
		run := func() { a.runOne(ctx, c) }
		if key := c.Key(); key != "" {
			tasks = append(tasks, Task{ID: c.ID, Key: key, Run: run})
		} else {
			none = append(none, Task{ID: c.ID, Key: "\x00" + c.ID, Run: run})
		}
	}
	return tasks, none
}

// runOne runs one check's body under a recording trial.
func (a *Ahead) runOne(ctx context.Context, c Check) {
	rec := trial.Recording()
	end := rec.Run(func() { c.Body(trial.With(ctx, rec)) })
	if end.Outcome == trial.InPlace {
		a.mu.Lock()
		if a.placed == nil {
			a.placed = map[string]bool{}
		}
		a.placed[c.ID] = true
		a.mu.Unlock()
		return // it runs in its place
	}
	a.mu.Lock()
	a.results[c.ID] = aheadResult{t: rec, end: end}
	a.mu.Unlock()
}

// Unreached is what the checks run ahead told that were never reached in
// their place (the run ended first: interrupted, or stopped), by ID: the
// recording and how each ended, so that the reports keep the results.
func (a *Ahead) Unreached() map[string]Told {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]Told, len(a.results))
	for id, r := range a.results {
		if !a.started[id] {
			out[id] = Told{T: r.t, End: r.end}
		}
	}
	return out
}

// Told is what a check run ahead told and how it ended.
type Told struct {
	T   *trial.T
	End trial.Ending
}

// Running says whether a stretch is running ahead now.
func (a *Ahead) Running() bool { return a.running.Load() }

// Progress is the chains of the stretch running ahead now, if any.
func (a *Ahead) Progress() (*Progress, bool) {
	a.mu.Lock()
	p := a.progress
	a.mu.Unlock()
	if p == nil || !a.running.Load() {
		return nil, false
	}
	return p, true
}

// Ran is what ran ahead of its place in all: the checks, the most chains
// of a stretch side by side, and how long the stretches took.
func (a *Ahead) Ran() (checks, chains int, took time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.checksAhead, a.chains, a.took
}
