package checks

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/engine"
	"github.com/gwdmi/gwtools/conformance/internal/schedule"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/observer"
)

// Where a change may land. A request names one device, or one gateway's
// messages, and an effect check reads what it names; but a target may
// apply the change elsewhere as well: a rename that also renames the
// device at the same place on another gateway, a command that also sets
// the device of the same type on another gateway, a message stored on
// the account's first gateway whatever gateway it names. So every effect
// check, accepted change or refused, also reads the other places of the
// fleet it could reach: every other device of the tested account (of the
// tested gateway and of the account's other gateways), the first device
// of another account, and the messages of the account's other gateways
// (and of the tested gateway, for a change to a device). Each is read
// once before the check sends anything (or taken as the observer last
// showed it, when nothing was sent since: link.Link.Unchanged) and once
// after, when what the check names has settled (package link): never
// once per field. A place
// that shows another name, state or message count afterwards fails the
// check, naming where the change landed.
//
// In a --parallel run the other workers change their own devices and
// append to the tested gateway's messages meanwhile: those are not
// watched, and a check that is not Shared (check.Traits) and runs on a
// worker other than worker 0 (which alone changes other gateways' devices,
// for the whole-fleet checks and the stand-ins of package batch) watches
// nothing more than what it names.

const (
	// maxLandingDevices bounds the devices of the tested account watched
	// around one check (a generated fleet may have thousands).
	maxLandingDevices = 24
	// maxLandingAccounts bounds the other accounts whose first device is
	// watched.
	maxLandingAccounts = 2
	// maxLandingLogs bounds the gateways whose messages are watched.
	maxLandingLogs = 8
)

// landings is what the observer showed, before a check sent anything, of
// the places its changes must leave alone.
type landings struct {
	devs []devRef
	logs []string
	dev  map[devRef]observer.Device
	log  map[string]observer.Log
}

// watchLandings reads the places a change must leave alone: every device
// of the fleet watched except the one named (named.sn, "" for a message)
// and the gateways' messages except those of the gateway a message names
// (named.mac when named.sn is ""). shared says that the check is Shared
// (it runs on worker 0 of a --parallel run). Each place is read once, as
// the checks read a device before a change: once the changes accepted for
// it earlier have appeared. The context it gives carries the landings, for
// Env.readSettled.
func (env *Suite) watchLandings(ctx context.Context, shared bool, named devRef) (context.Context, *landings) {
	trial.Helper()
	devs, logs := env.landingPlaces(shared, named)
	l := &landings{devs: devs, logs: logs}
	// A place with a change still to appear is awaited first, alone; one
	// the observer last showed with nothing sent since is as it showed
	// (link.Link.Unchanged); the rest are read together.
	var now []devRef
	var nowLogs []string
	pre := map[devRef]observer.Device{}
	preLog := map[string]observer.Log{}
	for _, d := range devs {
		if st, ok := env.Link().Unchanged(d.mac, d.sn); ok {
			pre[d] = st
		} else if env.Link().Pending(d.mac, d.sn) {
			pre[d] = env.mustRead(ctx, d.mac, d.sn)
		} else {
			now = append(now, d)
		}
	}
	for _, mac := range logs {
		if lg, ok := env.Link().UnchangedLog(mac); ok {
			preLog[mac] = lg
		} else if env.Link().LogPending(mac) {
			preLog[mac] = env.mustLog(ctx, mac)
		} else {
			nowLogs = append(nowLogs, mac)
		}
	}
	l.dev, l.log = env.readPlaces(ctx, now, nowLogs)
	for d, st := range pre {
		l.dev[d] = st
	}
	for mac, lg := range preLog {
		l.log[mac] = lg
	}
	return context.WithValue(ctx, landingsKey{}, l), l
}

type landingsKey struct{}

// readSettled reads the device a check names once its changes have
// settled (Env.mustRead), after the check's last request. On a target
// that applies each change before it answers, it reads the places the
// check's landings watch at the same time: landed then takes them as read
// (link.Link.Unchanged), unless something was sent since or the device
// was slow to show its change.
func (env *Suite) readSettled(ctx context.Context, mac, sn string) observer.Device {
	trial.Helper()
	defer env.alongside(ctx)()
	return env.mustRead(ctx, mac, sn)
}

// logSettled is readSettled for a gateway's messages.
func (env *Suite) logSettled(ctx context.Context, mac string) observer.Log {
	trial.Helper()
	defer env.alongside(ctx)()
	return env.mustLog(ctx, mac)
}

// alongside starts reading the places the check's landings watch, when
// the target applies changes at once, and gives the func that waits for
// the reads to end. A read that fails is read again by landed.
func (env *Suite) alongside(ctx context.Context) (wait func()) {
	l, _ := ctx.Value(landingsKey{}).(*landings)
	if l == nil || !env.Link().Reusable() {
		return func() {}
	}
	var jobs []func()
	for _, d := range l.devs {
		jobs = append(jobs, func() { env.Link().ReadDeviceNow(ctx, d.mac, d.sn) })
	}
	for _, mac := range l.logs {
		jobs = append(jobs, func() { env.Link().ReadLogNow(ctx, mac) })
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		env.runAll(jobs)
	}()
	return func() { <-done }
}

// readPlaces reads devices and message logs as they are now, all at once
// within the run's bound of requests in flight (one round trip for the
// fleets a bench has), or fails the check naming the first that could not be read.
func (env *Suite) readPlaces(ctx context.Context, devs []devRef, logs []string) (map[devRef]observer.Device, map[string]observer.Log) {
	trial.Helper()
	return env.readPlacesBy(ctx, devs, logs, env.Link().ReadDeviceNow, env.Link().ReadLogNow)
}

// readPlacesBy is readPlaces with the devices read by read and the
// messages by readLog.
func (env *Suite) readPlacesBy(ctx context.Context, devs []devRef, logs []string,
	read func(ctx context.Context, mac, sn string) (observer.Device, error),
	readLog func(ctx context.Context, mac string) (observer.Log, error)) (map[devRef]observer.Device, map[string]observer.Log) {
	trial.Helper()
	var mu sync.Mutex
	dev := make(map[devRef]observer.Device, len(devs))
	log := make(map[string]observer.Log, len(logs))
	var failed []readFailure
	var jobs []func()
	for _, d := range devs {
		jobs = append(jobs, func() {
			st, err := read(ctx, d.mac, d.sn)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, readFailure{"reading device " + d.sn + " of gateway " + d.mac, err})
				return
			}
			dev[d] = st
		})
	}
	for _, mac := range logs {
		jobs = append(jobs, func() {
			lg, err := readLog(ctx, mac)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, readFailure{"reading the messages of gateway " + mac, err})
				return
			}
			log[mac] = lg
		})
	}
	env.runAll(jobs)
	// A read not made because the target stopped answering stops the run,
	// whichever read it was; else the check fails on the first by its text.
	for _, f := range failed {
		if link.IsStopped(f.err) {
			failRead(ctx, f.what, f.err)
		}
	}
	if len(failed) > 0 {
		sort.Slice(failed, func(i, j int) bool { return failed[i].message() < failed[j].message() })
		failRead(ctx, failed[0].what, failed[0].err)
	}
	return dev, log
}

// readFailure is a read of the observer (what) that failed.
type readFailure struct {
	what string
	err  error
}

func (f readFailure) message() string { return f.what + " from the observer: " + f.err.Error() }

// landingPlaces are the devices and message logs watched around a change
// to named (see watchLandings).
func (env *Suite) landingPlaces(shared bool, named devRef) (devs []devRef, logs []string) {
	if env.Fleet == nil || env.Workers > 1 && env.Worker != 0 && !shared {
		return nil, nil
	}
	// In a --parallel run the devices of every worker are changed by
	// their worker meanwhile, and the tested gateway's messages too.
	busy := map[string]bool{}
	if env.Workers > 1 {
		for i := 0; i < env.Workers; i++ {
			for _, d := range engine.WorkerTarget(env.Fleet, env.Target, i).Devices {
				busy[catalog.HexOnly(d.SN)] = true
			}
		}
	}
	// A serial is unique on its gateway only: a device is its gateway and
	// serial.
	seen := map[string]bool{catalog.HexOnly(named.mac) + "/" + catalog.HexOnly(named.sn): named.sn != ""}
	add := func(mac, sn string) {
		k := catalog.HexOnly(mac) + "/" + catalog.HexOnly(sn)
		if !seen[k] && !(busy[catalog.HexOnly(sn)] && strings.EqualFold(mac, env.Target.MAC)) {
			seen[k] = true
			devs = append(devs, devRef{mac, sn})
		}
	}
	addLog := func(mac string) {
		if len(logs) >= maxLandingLogs {
			return
		}
		if named.sn == "" && strings.EqualFold(mac, named.mac) {
			return
		}
		if env.Workers > 1 && strings.EqualFold(mac, env.Target.MAC) {
			return
		}
		for _, m := range logs {
			if strings.EqualFold(m, mac) {
				return
			}
		}
		logs = append(logs, mac)
	}
	// The tested account: the tested gateway first, then its others.
	for _, a := range env.Fleet.Accounts {
		if a.ID != env.Target.AccountID {
			continue
		}
		var gws []int
		for i, g := range a.Gateways {
			if g.MAC == env.Target.MAC {
				gws = append([]int{i}, gws...)
			} else {
				gws = append(gws, i)
			}
		}
		for _, i := range gws {
			g := a.Gateways[i]
			for _, d := range g.Devices {
				if len(devs) < maxLandingDevices {
					add(g.MAC, d.SN)
				}
			}
			addLog(g.MAC)
		}
	}
	// Another account's first device (and messages) stand for the rest.
	others := 0
	for _, a := range env.Fleet.Accounts {
		if a.ID == env.Target.AccountID || others >= maxLandingAccounts {
			continue
		}
		for _, g := range a.Gateways {
			if len(g.Devices) > 0 {
				add(g.MAC, g.Devices[0].SN)
				addLog(g.MAC)
				others++
				break
			}
		}
	}
	return devs, logs
}

// expectKept reads the watched places again and fails, naming each place
// that changed, when what (a change to the named device or gateway)
// landed anywhere else. Call it once what the check names has settled:
// the places are read as they are then.
func (l *landings) expectKept(ctx context.Context, env *Suite, what string) {
	trial.Helper()
	if landed := l.landed(ctx, env); len(landed) > 0 {
		trial.From(ctx).Fail(what + " also landed where it was not sent: " + strings.Join(landed, "; "))
	}
}

// landed reads the watched places again, or takes them as the observer
// last showed them when nothing was sent since (readSettled), and says
// which changed and how.
func (l *landings) landed(ctx context.Context, env *Suite) []string {
	trial.Helper()
	if l == nil {
		return nil
	}
	var landed []string
	// A place the observer last showed with nothing sent since (as
	// readSettled read it) is taken as it showed; the rest are read now.
	lk := env.Link()
	lastDev := func(ctx context.Context, mac, sn string) (observer.Device, error) {
		if st, ok := lk.Unchanged(mac, sn); ok {
			return st, nil
		}
		return lk.ReadDeviceNow(ctx, mac, sn)
	}
	lastLog := func(ctx context.Context, mac string) (observer.Log, error) {
		if lg, ok := lk.UnchangedLog(mac); ok {
			return lg, nil
		}
		return lk.ReadLogNow(ctx, mac)
	}
	devs, logs := env.readPlacesBy(ctx, l.devs, l.logs, lastDev, lastLog)
	for _, d := range l.devs {
		b, a := l.dev[d], devs[d]
		var diff []string
		if a.Name != b.Name {
			diff = append(diff, fmt.Sprintf("name %q became %q", b.Name, a.Name))
		}
		bs, as := observer.Values(b.State), observer.Values(a.State)
		if !observer.SameValues(bs, as) {
			for _, k := range sortedKeys(b.State, a.State) {
				if bv, av := bs[k], as[k]; !observer.SameNumber(bv, av) {
					diff = append(diff, fmt.Sprintf("%s went from %s to %s", k, orNothing(bv, b.State, k), orNothing(av, a.State, k)))
				}
			}
		}
		if len(diff) > 0 {
			landed = append(landed, fmt.Sprintf("device %s of gateway %s (%s)", d.sn, d.mac, strings.Join(diff, ", ")))
		}
	}
	for _, mac := range l.logs {
		b, a := l.log[mac], logs[mac]
		if b.Same(a) {
			continue
		}
		landed = append(landed, fmt.Sprintf("the messages of gateway %s (%s)", mac, b.Change(a)))
	}
	sort.Strings(landed)
	return landed
}

// expectStored fails when a message accepted for a gateway is not
// stored there (why, from observer.Log.GainedMessage), naming where else it
// landed, and then when it landed anywhere else as well.
func (l *landings) expectStored(ctx context.Context, env *Suite, mac, why string) {
	trial.Helper()
	if why == "" {
		l.expectKept(ctx, env, "the message to gateway "+mac)
		return
	}
	msg := "the message is not stored on gateway " + mac + ", the one it names: " + why
	if landed := l.landed(ctx, env); len(landed) > 0 {
		msg += "; it landed on " + strings.Join(landed, "; ")
	}
	trial.From(ctx).Fail(msg)
}

// orNothing is a state value as text, "nothing" when the state has no
// such member.
func orNothing(v string, st map[string]any, k string) string {
	if _, ok := st[k]; !ok {
		return "nothing"
	}
	return v
}

// runAll runs jobs, Concurrency at a time, and waits for them.
func (env *Suite) runAll(jobs []func()) { schedule.N(jobs, env.InFlight()) }
