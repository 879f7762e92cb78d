// Package trial is what a check's body tells as it runs: the steps it
// takes, the entries it keeps for the report (the exchanges, what was
// observed) and how it ends (passed, skipped, failed, or the run stopped).
//
// A check's body never speaks to Ginkgo or Gomega itself: it takes its T
// from its context (From) and tells it. A live T, the one a spec runs
// with, hands each thing on to Ginkgo as it comes. A recording T, the one
// a check runs with when the run sends it ahead of its place (package
// schedule), keeps them; when Ginkgo reaches the check, Replay hands them
// on in order, so that the report reads as if the check had run in its
// place. The body is the same either way: which T it tells is the run's
// business, not the check's.
package trial

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	gtypes "github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
)

// Outcome is how a check's run ended.
type Outcome int

const (
	// Passed: the body returned.
	Passed Outcome = iota
	// Skipped: the body could not judge (no such device in the fleet, a
	// dry run, a control refused).
	Skipped
	// Failed: an expectation did not hold, or the body failed outright.
	Failed
	// Stopped: the run must stop here (the target stopped answering, the
	// request budget is spent).
	Stopped
	// InPlace: the body can be judged only in its place in the run, and
	// stopped before it sent anything (a recording T only).
	InPlace
)

// Ending is how a check's run ended and the message it ended with.
type Ending struct {
	Outcome Outcome
	Message string
	// Expectation: a failed expectation (Expect), as opposed to a failure
	// the body declared itself (Fail), which stands without confirmation.
	Expectation bool
}

// event is one thing the body told, kept by a recording T.
type event struct {
	step       bool
	text       string
	name       string
	value      any
	visibility ginkgo.ReportEntryVisibility
}

// T is one run of a check's body. Its Gomega judges expectations: a live
// T's fails the spec, a recording T's ends the run it records.
type T struct {
	types.Gomega
	live    bool
	fail    func(message string, callerSkip ...int)
	started time.Time
	mu      sync.Mutex
	events  []event
	end     Ending
}

// errEnded is the panic that stops a recorded body at its ending, as
// Ginkgo's own panic stops a live one.
var errEnded = errors.New("trial ended")

// Live is the T of a spec Ginkgo is running: expectations fail through
// fail (Gomega's fail handler of the run), the rest goes to Ginkgo.
func Live(fail func(message string, callerSkip ...int)) *T {
	return &T{Gomega: gomega.NewGomega(fail), live: true, fail: fail}
}

// Recording is the T of a check run ahead of its place: it keeps what
// the body tells, for Replay.
func Recording() *T {
	t := &T{started: time.Now()}
	t.fail = func(message string, _ ...int) {
		t.finish(Ending{Outcome: Failed, Message: message, Expectation: true})
	}
	t.Gomega = gomega.NewGomega(t.fail)
	return t
}

// IsLive says whether t hands on what it is told as it comes.
func (t *T) IsLive() bool { return t.live }

// Started is when the check's run began: for a live T, when Ginkgo
// started the spec.
func (t *T) Started() time.Time {
	if t.live {
		return ginkgo.CurrentSpecReport().StartTime
	}
	return t.started
}

// InSpec says whether t tells a check (a live T outside any spec, as in
// the suite's own nodes, tells nobody).
func (t *T) InSpec() bool {
	return !t.live || ginkgo.CurrentSpecReport().LeafNodeType != 0
}

// By tells a step the check takes.
func (t *T) By(text string) {
	if t.live {
		ginkgo.By(text)
		return
	}
	t.mu.Lock()
	t.events = append(t.events, event{step: true, text: text})
	t.mu.Unlock()
}

// Entry keeps a report entry: an exchange, an observation, a note for
// the report.
func (t *T) Entry(name string, value any, visibility ginkgo.ReportEntryVisibility) {
	if t.live {
		ginkgo.AddReportEntry(name, value, visibility)
		return
	}
	t.mu.Lock()
	t.events = append(t.events, event{name: name, value: value, visibility: visibility})
	t.mu.Unlock()
}

// Skip ends the check: it cannot judge, for the reason given.
func (t *T) Skip(message string) {
	if t.live {
		ginkgo.Skip(message, 1)
	}
	t.finish(Ending{Outcome: Skipped, Message: message})
}

// Fail ends the check failed, with a message that needs no confirmation:
// the body found the failure itself, not through an expectation.
func (t *T) Fail(message string) {
	if t.live {
		ginkgo.Fail(message, 1)
	}
	t.finish(Ending{Outcome: Failed, Message: message})
}

// Stop ends the check and the run: the run cannot go on (reason says
// why).
func (t *T) Stop(reason string) {
	if t.live {
		ginkgo.AbortSuite(reason, 1)
	}
	t.finish(Ending{Outcome: Stopped, Message: reason})
}

// InPlace ends a recorded body that can be judged only in its place in
// the run, before it sends anything, for the reason given; the run then
// runs it there. A live T is in its place: it goes on.
func (t *T) InPlace(reason string) {
	if t.live {
		return
	}
	t.finish(Ending{Outcome: InPlace, Message: reason})
}

func (t *T) finish(e Ending) {
	t.mu.Lock()
	t.end = e
	t.mu.Unlock()
	panic(errEnded)
}

// Run runs body under a recording t and gives how it ended. A panic
// other than an ending is not the check's to keep: it goes on.
func (t *T) Run(body func()) (e Ending) {
	defer func() {
		if r := recover(); r != nil {
			if r != errEnded {
				panic(r)
			}
			t.mu.Lock()
			e = t.end
			t.mu.Unlock()
		}
	}()
	body()
	return Ending{Outcome: Passed}
}

// Replay tells live what the recorded body told, in order, and ends as
// it ended. A failed expectation goes through live's fail handler, as it
// would have had the body run live.
func (t *T) Replay(live *T, e Ending) {
	t.ReplaySteps(live)
	switch e.Outcome {
	case Skipped:
		live.Skip(e.Message)
	case Failed:
		if e.Expectation {
			live.fail(e.Message, 1)
			return
		}
		live.Fail(e.Message)
	case Stopped:
		live.Stop(e.Message)
	}
}

// ReplaySteps tells live the steps and entries recorded, not the ending.
func (t *T) ReplaySteps(live *T) {
	t.mu.Lock()
	events := t.events
	t.mu.Unlock()
	for _, ev := range events {
		if ev.step {
			live.By(ev.text)
			continue
		}
		live.Entry(ev.name, ev.value, ev.visibility)
	}
}

// Entry is one report entry a recording T kept.
type Entry struct {
	Name  string
	Value any
}

// Entries are the report entries a recording T kept, in order.
func (t *T) Entries() []Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Entry
	for _, ev := range t.events {
		if !ev.step {
			out = append(out, Entry{Name: ev.name, Value: ev.value})
		}
	}
	return out
}

// Told is what a recording T was told, in order: each step's text, and
// each entry's name.
func (t *T) Told() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, len(t.events))
	for i, ev := range t.events {
		out[i] = ev.text
		if !ev.step {
			out[i] = ev.name
		}
	}
	return out
}

type key struct{}

// With is ctx carrying t: the body that gets it tells t.
func With(ctx context.Context, t *T) context.Context { return context.WithValue(ctx, key{}, t) }

// From is the T ctx carries. With none, the live T of the spec Ginkgo
// is running: what a body run straight by Ginkgo tells.
func From(ctx context.Context) *T {
	if ctx != nil {
		if t, ok := ctx.Value(key{}).(*T); ok {
			return t
		}
	}
	return spec
}

// Helper marks the function that calls it as a helper, as
// ginkgo.GinkgoHelper does: a failure in it is placed at the line that
// called it. Ginkgo looks the caller's name up on every call; a check's
// body calls its helpers thousands of times a run, so Helper marks each
// call site once.
func Helper() {
	var pc [1]uintptr
	if runtime.Callers(2, pc[:]) != 1 {
		gtypes.MarkAsHelper(1)
		return
	}
	if _, seen := helpers.Load(pc[0]); seen {
		return
	}
	gtypes.MarkAsHelper(1)
	helpers.Store(pc[0], struct{}{})
}

// helpers are the call sites of Helper already marked.
var helpers sync.Map

// RegisterFailHandler makes handler the run's fail handler: Gomega's
// (for any expectation outside a T) and every live T's, replays
// included.
func RegisterFailHandler(handler func(message string, callerSkip ...int)) {
	gomega.RegisterFailHandler(handler)
	failMu.Lock()
	failHandler = handler
	failMu.Unlock()
}

var (
	failMu      sync.Mutex
	failHandler = func(message string, callerSkip ...int) {
		skip := 1
		if len(callerSkip) > 0 {
			skip += callerSkip[0]
		}
		ginkgo.Fail(message, skip)
	}
	// spec is the live T of the spec running, over the registered
	// handler.
	spec = Live(func(message string, callerSkip ...int) {
		failMu.Lock()
		h := failHandler
		failMu.Unlock()
		skip := 1
		if len(callerSkip) > 0 {
			skip += callerSkip[0]
		}
		h(message, skip)
	})
)
