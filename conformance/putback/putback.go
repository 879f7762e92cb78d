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
	"strings"
	"sync"

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
}

// Devices are the devices a run changed, as they were before. Make them
// with New.
type Devices struct {
	cfg     Config
	mu      sync.Mutex
	touched map[string]*touched
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

// All puts every device the run changed back as it was: its name, and
// its whole state when it is known. It runs after the last check (also
// when the run was interrupted or aborted), records nothing in the
// reports and counts for no check.
func (p *Devices) All(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer func() { p.touched = nil }()
	lk := p.cfg.Link()
	if lk.Stopped() {
		return // the target stopped answering: do not wait on it once more per device
	}
	put := func(r client.Request) bool {
		_, _, err := lk.Send(ctx, r)
		return err == nil
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
			p.restore(t, put)
		}()
	}
	wg.Wait()
}

// restore sends the name, then the whole state, of one device as it was.
func (p *Devices) restore(t *touched, put func(client.Request) bool) {
	d, b := t.dev, p.cfg.Bench
	if t.name != "" {
		r := b.Base(device.UpdateName, d.SN, d.Type)
		r.Set(device.FieldMAC, t.mac)
		r.Set(device.FieldName, t.name)
		if !put(r.Request(device.JSON)) {
			return
		}
	}
	ty, ok := oracle.LookupType(d.Type)
	if !ok || len(t.state) < len(ty.Fields) {
		return // the fleet does not say the whole state; nothing to put back
	}
	r := b.Base(device.SendCommand, d.SN, d.Type)
	r.Set(device.FieldMAC, t.mac)
	for _, fd := range ty.Fields {
		r.Set(fd.Name, observer.Values(map[string]any{"v": t.state[fd.Name]})["v"])
	}
	put(r.Request(device.JSON))
}
