package engine

import (
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/gatewayapi/client"
)

// The effects a check judges are read from the observer (package
// observer) through the run's link (package link), within its bound of
// requests in flight.

// NotObservedPrefix starts the one line a run says when it did not observe
// effects: the summary, report.json, the bundle's manifest and gwconform
// verify all carry it.
const NotObservedPrefix = "effects not observed"

// Reasons effects are not observed.
const (
	// NoObserverFlag: the run was told not to observe (--no-observer).
	NoObserverFlag = NotObservedPrefix + ": --no-observer (the certificate records it)"
)

// logWindow is how many of the newest messages a --parallel worker reads:
// enough to hold what the other workers append while a check sends one.
const logWindow = 64

// link is how the run speaks to its target (package link), made at its
// first use from the run's flags: the pre-flight's requests and the
// run's share its accounts (what is still to settle, the answers in a row
// that did not come).
func (env *Env) Link() *link.Link {
	env.linkOnce.Do(func() { env.lk = link.New(env.linkConfig()) })
	return env.lk
}

// linkConfig is the run's link as its flags say.
func (env *Env) linkConfig() link.Config {
	r := observer.Reader{Base: env.Observer, Token: env.AdminToken, Counts: env.ObserverCounts}
	if env.Workers > 1 {
		r.Window = logWindow
	}
	return link.Config{
		Client: env.Client, Observer: r, Settle: env.Settle, Concurrency: env.InFlight(),
		MaxRequests: env.MaxRequests, WholeKeys: env.ReportCredentials,
		Tested: func() string {
			if env.Target == nil {
				return ""
			}
			return env.Target.MAC
		},
		Answered: env.timeAnswer, Trips: &env.chain, Shared: env.Workers > 1,
	}
}

// observeSkip is why an effect check cannot run, or "" when it can.
func (env *Env) ObserveSkip() string {
	if env.Observer != "" {
		return ""
	}
	if env.NotObserved != "" {
		return env.NotObserved
	}
	return NotObservedPrefix + ": no observer (--observer URL; docs/observer.md)"
}

// AnyDeviceSN is the serial number of a device of the tested gateway, the
// one the observer is first asked about ("" when the fleet has none).
func (env *Env) AnyDeviceSN() string {
	d, _ := env.AnyDevice()
	return d.SN
}

// CloseIdleConnections closes the connections the run keeps for reuse,
// to the target and to the observer. Run it before stopping a server the
// run talked to: a connection dialed for a request that another one
// served sits unused in the pool, and net/http's Shutdown waits 5 s for
// such a connection before it counts it idle.
func (env *Env) CloseIdleConnections() {
	if env.Client != nil {
		env.Client.CloseIdleConnections()
	}
	observer.CloseIdleConnections()
}

// timeAnswer keeps the answer time of a request, by the chain the link
// keyed it to when it sent it (the device it names), for the run's
// batches (package batch).
func (env *Env) timeAnswer(key string, ex client.Exchange) {
	if ex.Duration > 0 {
		env.Batch().TimeAnswer(key, ex.Duration)
	}
}
