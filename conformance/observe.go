package conformance

import (
	"context"

	"github.com/gwdmi/gwtools/conformance/observer"
)

// The effects a check judges are read from the observer (package
// observer), within the run's bound of requests in flight.

// NotObservedPrefix starts the one line a run says when it did not observe
// effects: the summary, report.json, the bundle's manifest and gwconform
// verify all carry it.
const NotObservedPrefix = "effects not observed"

// Reasons effects are not observed.
const (
	// NoObserverFlag: the run was told not to observe (--no-observer).
	NoObserverFlag = NotObservedPrefix + ": --no-observer (the certificate records it)"
)

// readDevice reads a device from the observer once the changes accepted
// for it have appeared, or --settle has passed (awaitDevice).
func (env *Env) readDevice(ctx context.Context, mac, sn string) (observer.Device, error) {
	return env.awaitDevice(ctx, mac, sn)
}

// readDeviceNow reads a device from the observer.
func (env *Env) readDeviceNow(ctx context.Context, mac, sn string) (observer.Device, error) {
	return env.observer().Device(ctx, mac, sn)
}

// readLog reads a gateway's messages from the observer once the newest
// accepted message has appeared, or --settle has passed (awaitLog).
func (env *Env) readLog(ctx context.Context, mac string) (observer.Log, error) {
	return env.awaitLog(ctx, mac)
}

// readLogNow reads a gateway's messages from the observer as they are.
func (env *Env) readLogNow(ctx context.Context, mac string) (observer.Log, error) {
	return env.observer().Log(ctx, mac)
}

// logWindow is how many of the newest messages a --parallel worker reads:
// enough to hold what the other workers append while a check sends one.
const logWindow = 64

// observer is the run's reader of its observer, within its bound of
// requests in flight.
func (env *Env) observer() observer.Reader {
	r := observer.Reader{Base: env.Observer, Token: env.AdminToken, Counts: env.ObserverCounts, Slot: env.slot}
	if env.Workers > 1 {
		r.Window = logWindow
	}
	return r
}

// observeSkip is why an effect check cannot run, or "" when it can.
func (env *Env) observeSkip() string {
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
