// Package engine runs checks as Ginkgo v2 specs against a target URL
// (Execute) and writes the reports (package report). It knows no check:
// a suite (package checks) declares its checks on the run's Env through
// It, ItAbout and ItPlanned, and sends, observes and arranges for devices
// to be put back through the Env's other exported methods. The Env holds
// the run's configuration, filled from the command line, and its state:
// the link to the target, the batches and chains of a far run, the
// devices to put back.
package engine

import (
	"context"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/internal/batch"
	"github.com/gwdmi/gwtools/conformance/internal/control"
	"github.com/gwdmi/gwtools/conformance/internal/putback"
	"github.com/gwdmi/gwtools/conformance/internal/schedule"
	"github.com/gwdmi/gwtools/conformance/link"
)

// Env is everything the checks need to know about the run, filled from the
// flags and checked before any spec runs. The suite reads it through env.
type Env struct {
	// Bench is what the checks' requests are built against: the fleet,
	// the tested target, how it signs, the clock, the seed.
	catalog.Bench
	// Observer is the base URL of a service answering the CONTRACT 7
	// reads of the target's devices and messages (empty: effects are not
	// observed, for the reason NotObserved gives), and AdminToken its
	// bearer token. ObserverCounts says it also has gwsim's additions
	// (?limit= and X-Total-Count on the messages), used when present.
	Observer       string
	AdminToken     string
	ObserverCounts bool
	// NotObserved is the one line saying why effects are not observed
	// ("effects not observed: ..."), empty when Observer is set.
	NotObserved string
	// Embedded says the target is the in-process simulator.
	Embedded bool
	// DryRun records each request and skips the check instead of sending.
	DryRun bool
	// MaxRequests caps the requests of a run (--max-requests; 0: none).
	MaxRequests int
	// ReportCredentials keeps api_keys whole in the reports
	// (--report-credentials); by default they are masked.
	ReportCredentials bool
	// Settle is how long a change may take to appear at the observer
	// after its answer (--settle; package link); 0: read at once.
	Settle time.Duration
	// Concurrency is the most requests in flight at once (--concurrency):
	// a device's checks that judge only an answer, or a refusal that must
	// change nothing, are sent together this many at a time, and each
	// gateway's message answers too (package batch); 1 sends every
	// request alone, one after another; 0 is DefaultConcurrency.
	Concurrency int
	// started is when the run began (Started).
	started time.Time
	// catalog is every check of the suite, whichever this process
	// declares (Checks.Catalog).
	catalog func() check.Catalog
	// lk is how the run speaks to its target (link).
	linkOnce sync.Once
	lk       *link.Link
	// back holds each device the run changed as it was before, to be
	// put back when the run ends (package putback).
	backOnce sync.Once
	back     *putback.Devices
	// collect, when set, makes the declarations list the checks instead
	// of declaring specs: the catalog.
	collect *[]check.Meta
	// assignment is the worker of each check in a --parallel run.
	assignOnce sync.Once
	assignment map[string]int
	// controls are the answers to the valid twins of refusals, one per
	// operation, format and device (control).
	controls control.Store
	// bt holds the devices' answer times and the checks sent together
	// against a far target (package batch); filter is the run's filter,
	// to plan only checks that will run.
	batchOnce sync.Once
	bt        *batch.Sender
	filter    filter
	// ahead holds the checks run ahead of their place, devices side by
	// side (ahead.go).
	ahead schedule.Ahead
	// expected: the time a check is known to take beforehand, by ID, for
	// the schedule's estimate of the time left (Expect).
	expected map[string]func() time.Duration
	// chain counts each device's round trips one after another (chain.go).
	chain schedule.Trips
}

// DefaultConcurrency is --concurrency's default. Against a service in
// another region (75 ms a round trip) the suite's some 5,000 requests
// need only about six in flight on average to end within a minute
// (Little's law: 5,000 / 60 s × 0.075 s), but they come in bursts on each
// device's chain: a device's checks that judge only an answer go together
// in waves of this many (some fifty refusals of one device: two waves at
// 32, four at 16), and an effect check reads the twenty-odd places it
// watches at once (one wave at 32, two at 16); each wave costs the
// slowest of its answers. 32 takes most of the gain on a far service
// (docs/performance.md, "A target across a network", gives the figures)
// and is little for any service on a LAN or loopback, which answers each
// request in a millisecond or less.
const DefaultConcurrency = 32

// PutBack arranges for the device a call may change to be put back when
// the run ends (package putback).
func (env *Env) PutBack(ctx context.Context, c catalog.Call) { env.devices().Note(ctx, c) }

// WatchDevices reads the fleet's devices as they are before anything is
// sent (putback.Devices.Watch): call it before the pre-flight.
func (env *Env) WatchDevices(ctx context.Context) { env.devices().Watch(ctx) }

// devices are the devices the run changed, made on first use. The flags
// they keep (DryRun, Concurrency, Observer) are set with the Env, before
// the pre-flight; the tested target and the worker are read from the
// Bench as they are when asked.
func (env *Env) devices() *putback.Devices {
	env.backOnce.Do(func() {
		env.back = putback.New(putback.Config{Bench: &env.Bench, Link: env.Link, Observed: env.Observer != "",
			DryRun: env.DryRun, Concurrency: env.InFlight(), Settle: env.Settle, Solo: func() bool { return env.Workers <= 1 }})
	})
	return env.back
}

// Batch is the run's batches (package batch), made on first use (the
// pre-flight's answers are timed too); like devices, it keeps only flags
// set with the Env.
func (env *Env) Batch() *batch.Sender {
	env.batchOnce.Do(func() {
		env.bt = batch.New(batch.Config{Bench: &env.Bench, Link: env.Link, Controls: &env.controls, PutBack: env.PutBack,
			Concurrency: env.InFlight(), DryRun: env.DryRun, Ahead: &env.ahead, Trips: &env.chain})
	})
	return env.bt
}

// InFlight is the most requests in flight at once: Concurrency with its
// default.
func (env *Env) InFlight() int {
	if env.Concurrency <= 0 {
		return DefaultConcurrency
	}
	return env.Concurrency
}

// Controls are the answers to the valid twins of refusals (package
// control), shared by the checks and the batches that send them ahead.
func (env *Env) Controls() *control.Store { return &env.controls }

// Expect tells the schedule beforehand how long a check will take (a
// phase with a time budget), for the estimate of the time left; declare
// it before the check.
func (env *Env) Expect(id string, d func() time.Duration) {
	if env.expected == nil {
		env.expected = map[string]func() time.Duration{}
	}
	env.expected[id] = d
}

// Started is when the run began (zero before Execute).
func (env *Env) Started() time.Time { return env.started }
