// Package putback puts back, when a run ends, every device the run
// changed: its state and name as the admin API showed them before the run
// first changed it, or else as the fleet file gives them. Each device is
// read once and put back once, not around every check: the checks never
// depend on a device's state before them (the simulator checks read it),
// and a read and a restoring command around each of some 1,500 checks
// would double the requests of a run.
package putback

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Config is what Devices work with, all of it the run's.
type Config struct {
	// Bench builds the restoring requests; its Target is the one the
	// running check has (a stand-in's while a check runs on one).
	Bench *catalog.Bench
	// Link is how the run speaks to its target.
	Link func() *link.Link
	// Observed says the run has an observer to read a device's state
	// from before changing it; DryRun sends nothing and keeps nothing.
	Observed, DryRun bool
	// Concurrency is how many devices are put back at once.
	Concurrency int
	// Settle is how long a put-back may take to show at the observer.
	Settle time.Duration
	// Solo says the run is not split between --parallel workers: only then
	// are the fleet's other devices compared (Watch), which a worker's
	// fellows change. It is asked when the run ends.
	Solo func() bool
}

// maxWatched is the most devices of the fleet Watch reads before the run.
const maxWatched = 64

// Devices are the devices a run changed, as they were before. Make them
// with New.
type Devices struct {
	cfg     Config
	mu      sync.Mutex
	touched map[string]*touched
	// watched are the fleet's devices as Watch read them before the run.
	watched []*touched
}

// New is the run's Devices.
func New(cfg Config) *Devices { return &Devices{cfg: cfg} }

// touched is a device as it was before the run first changed it.
type touched struct {
	dev fleet.Device
	// mac is the device's gateway: the tested one, or a stand-in's.
	mac   string
	name  string
	state map[string]any
	// account and key, for a watched device of another account than the
	// tested one: its own, to put it back with (no key: it cannot be).
	account string
	key     *fleet.APIKey
}

// Watch reads, before the pre-flight and the first check, every device of the fleet (up to
// maxWatched) through the observer, so that All finds those the target
// changed although no check's change was meant for them (a rename that
// lands on another gateway too) and puts them back.
func (p *Devices) Watch(ctx context.Context) {
	if !p.cfg.Observed || p.cfg.DryRun {
		return
	}
	lk := p.cfg.Link()
	b := p.cfg.Bench
	var all []*touched
	for _, a := range b.Fleet.Accounts {
		var key *fleet.APIKey
		if len(a.APIKeys) > 0 {
			key = &a.APIKeys[0]
		}
		for _, g := range a.Gateways {
			for _, d := range g.Devices {
				if len(all) < maxWatched {
					all = append(all, &touched{dev: d, mac: g.MAC, account: a.ID, key: key})
				}
			}
		}
	}
	// Several at once (within --concurrency): against a far target one
	// after another would add a round trip per device to every run.
	read := make([]bool, len(all))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(p.cfg.Concurrency, 1))
	for i, t := range all {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if cur, err := lk.ReadDeviceNow(ctx, t.mac, t.dev.SN); err == nil {
				t.name, t.state, read[i] = cur.Name, cur.State, true
			}
		}()
	}
	wg.Wait()
	var out []*touched
	for i, t := range all {
		if read[i] {
			out = append(out, t)
		}
	}
	p.mu.Lock()
	p.watched = out
	p.mu.Unlock()
}

// Note arranges for the device a call may change to be put back when the
// run ends, failed or not: the first call about a device reads it.
func (p *Devices) Note(ctx context.Context, c catalog.Call) {
	if p.cfg.DryRun || c.SN == "" || c.Op == device.SendMessage {
		return
	}
	tgt := p.cfg.Bench.Target
	d, ok := tgt.Devices[c.Type]
	if !ok || !strings.EqualFold(d.SN, c.SN) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, seen := p.touched[d.SN]; seen {
		return
	}
	saved := &touched{dev: d, mac: tgt.MAC, name: d.Name, state: d.State}
	if p.cfg.Observed {
		if cur, err := p.cfg.Link().ReadDevice(ctx, tgt.MAC, d.SN); err == nil {
			saved.name, saved.state = cur.Name, cur.State
		}
	}
	if p.touched == nil {
		p.touched = map[string]*touched{}
	}
	p.touched[d.SN] = saved
}

// Left is a device the run changed and could not put back: where it is,
// as it was before the run, and why it is left so.
type Left struct {
	MAC, SN, Type string
	// Before is the device before the run: its name and state.
	Before string
	Why    string
	// Unmeant says no check's change was meant for the device: the target
	// changed it on its own (a change that landed elsewhere too); PutBack
	// that the harness put it back.
	Unmeant, PutBack bool
}

// String is the one line the console and the reports give such a device.
func (l Left) String() string {
	s := fmt.Sprintf("gateway %s, device %s (%s): before the run %s; %s", l.MAC, l.SN, l.Type, l.Before, l.Why)
	if l.Unmeant {
		s = "changed though no check's change was meant for it: " + s
	}
	return s
}

// All puts every device the run changed back as it was: its name, and
// its whole state when it is known. It runs after the last check (also
// when the run was interrupted or aborted, at any concurrency): first no
// check's request is sent any more and those in flight are waited for
// (link.Drain), so that nothing changes a device behind its put-back.
// With an observer each device is read again afterwards. It records
// nothing in the reports and counts for no check; it returns each device
// it could not put back (or, with an observer, that does not read as it
// was), with its state before.
func (p *Devices) All(ctx context.Context) []Left {
	lk := p.cfg.Link()
	lk.Drain()
	p.mu.Lock()
	defer p.mu.Unlock()
	defer func() { p.touched, p.watched = nil, nil }()
	if len(p.touched) == 0 && len(p.watched) == 0 {
		return nil
	}
	var (
		leftMu sync.Mutex
		left   []Left
	)
	leave := func(t *touched, why string) {
		leftMu.Lock()
		defer leftMu.Unlock()
		left = append(left, Left{MAC: t.mac, SN: t.dev.SN, Type: t.dev.Type, Before: describe(t.name, t.state), Why: why})
	}
	if lk.Stopped() {
		// The target stopped answering: do not wait on it once more per
		// device.
		for _, t := range p.touched {
			leave(t, "not put back: the target had stopped answering")
		}
		return sorted(left)
	}
	put := func(r client.Request) error {
		resp, _, err := lk.Send(ctx, r)
		if err == nil && !link.Accepted(resp) {
			err = errors.New(link.Describe(resp))
		}
		return err
	}
	// Each device on its own, several at once (within --concurrency):
	// against a slow target one after another would add a round trip per
	// device to every run.
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(p.cfg.Concurrency, 1))
	for _, t := range p.touched {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := p.restore(t, put); err != nil {
				leave(t, "putting it back was refused: "+err.Error())
				return
			}
			if p.cfg.Observed {
				if why := p.readBack(ctx, lk, t); why != "" {
					leave(t, why)
				}
			}
		}()
	}
	wg.Wait()
	left = append(left, p.strays(ctx, lk, put)...)
	if len(p.watched) > 0 {
		left = p.recheck(ctx, lk, left)
	}
	return sorted(left)
}

// recheck reads every device once more after all were put back: a
// target that changes one device when another is set (a change that
// lands elsewhere too) may have undone a put-back. Each that reads
// otherwise than before the run is reported so.
func (p *Devices) recheck(ctx context.Context, lk *link.Link, left []Left) []Left {
	at := map[string]int{}
	for i, l := range left {
		at[l.SN] = i
	}
	all := append([]*touched(nil), p.watched...)
	for _, t := range p.touched {
		all = append(all, t)
	}
	seen := map[string]bool{}
	for _, t := range all {
		if seen[t.dev.SN] {
			continue
		}
		seen[t.dev.SN] = true
		if i, ok := at[t.dev.SN]; ok && !left[i].PutBack {
			continue // reported as not put back already
		}
		if w := p.watchedAs(t.dev.SN); w != nil {
			t = w // as before anything was sent
		}
		cur, err := lk.ReadDeviceNow(ctx, t.mac, t.dev.SN)
		if err != nil || describe(cur.Name, cur.State) == describe(t.name, t.state) || !p.wholeState(t) && cur.Name == t.name {
			continue
		}
		why := "put back, but after every device was put back the observer shows " + describe(cur.Name, cur.State) + " (putting back another device changed it again)"
		if i, ok := at[t.dev.SN]; ok {
			left[i].Why, left[i].PutBack = why, false
			continue
		}
		left = append(left, Left{MAC: t.mac, SN: t.dev.SN, Type: t.dev.Type, Before: describe(t.name, t.state), Why: why})
	}
	return left
}

// watchedAs is the device sn as Watch read it (nil: not watched).
func (p *Devices) watchedAs(sn string) *touched {
	for _, w := range p.watched {
		if strings.EqualFold(w.dev.SN, sn) {
			return w
		}
	}
	return nil
}

// strays are the watched devices the run did not mean to change that read
// otherwise now than before it: each is put back where the fleet gives
// its account's key, and reported either way.
func (p *Devices) strays(ctx context.Context, lk *link.Link, put func(client.Request) error) []Left {
	if p.cfg.Solo != nil && !p.cfg.Solo() {
		return nil
	}
	var out []Left
	for _, w := range p.watched {
		if _, mine := p.touched[w.dev.SN]; mine {
			continue
		}
		cur, err := lk.ReadDeviceNow(ctx, w.mac, w.dev.SN)
		if err != nil || describe(cur.Name, cur.State) == describe(w.name, w.state) {
			continue
		}
		l := Left{MAC: w.mac, SN: w.dev.SN, Type: w.dev.Type, Before: describe(w.name, w.state), Unmeant: true}
		now := "the observer shows " + describe(cur.Name, cur.State)
		switch {
		case w.key == nil:
			l.Why = now + "; not put back: its account has no api_key in the fleet"
		default:
			if err := p.restore(w, put); err != nil {
				l.Why = now + "; putting it back was refused: " + err.Error()
			} else if why := p.readBack(ctx, lk, w); why != "" {
				l.Why = now + "; " + why
			} else {
				l.Why, l.PutBack = now+"; put back", true
			}
		}
		out = append(out, l)
	}
	return out
}

// readBack says how the observer shows device t otherwise than it was
// before the run ("" when it shows it so), waiting up to the run's settle
// time for the put-back to appear.
func (p *Devices) readBack(ctx context.Context, lk *link.Link, t *touched) string {
	deadline := time.Now().Add(max(p.cfg.Settle, time.Second))
	for {
		cur, err := lk.ReadDeviceNow(ctx, t.mac, t.dev.SN)
		if err != nil {
			return "put back, but the observer could not read it: " + err.Error()
		}
		got := describe(cur.Name, cur.State)
		if got == describe(t.name, t.state) || !p.wholeState(t) && cur.Name == t.name {
			return ""
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "put back, but the observer shows " + got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wholeState says whether the run knows device t's whole state before it.
func (p *Devices) wholeState(t *touched) bool {
	ty, ok := oracle.LookupType(t.dev.Type)
	return ok && len(t.state) >= len(ty.Fields)
}

// describe is a device's name and state in one line, fields in order.
func describe(name string, state map[string]any) string {
	vs := observer.Values(state)
	keys := make([]string, 0, len(vs))
	for k := range vs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "name %q", name)
	for _, k := range keys {
		fmt.Fprintf(&b, ", %s %s", k, vs[k])
	}
	return b.String()
}

func sorted(l []Left) []Left {
	sort.Slice(l, func(i, j int) bool { return l[i].MAC+l[i].SN < l[j].MAC+l[j].SN })
	return l
}

// restore sends the name, then the whole state, of one device as it was.
func (p *Devices) restore(t *touched, put func(client.Request) error) error {
	d, b := t.dev, p.cfg.Bench
	own := func(r *catalog.Call) client.Request {
		if t.key != nil && t.account != "" && !strings.EqualFold(t.account, b.Target.AccountID) {
			r.Set(device.FieldAccount, t.account)
			b.SignAs(r, device.JSON, *t.key)
		}
		return r.Request(device.JSON)
	}
	if t.name != "" {
		r := b.Base(device.UpdateName, d.SN, d.Type)
		r.Set(device.FieldMAC, t.mac)
		r.Set(device.FieldName, t.name)
		if err := put(own(&r)); err != nil {
			return err
		}
	}
	ty, ok := oracle.LookupType(d.Type)
	if !ok || len(t.state) < len(ty.Fields) {
		return nil // the fleet does not say the whole state; nothing to put back
	}
	r := b.Base(device.SendCommand, d.SN, d.Type)
	r.Set(device.FieldMAC, t.mac)
	for _, fd := range ty.Fields {
		r.Set(fd.Name, observer.Values(map[string]any{"v": t.state[fd.Name]})["v"])
	}
	return put(own(&r))
}
