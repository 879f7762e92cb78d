package conformance

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/trial"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// Stand-ins for a slow device. A valid value case's state check changes
// the device and reads it back, so it cannot run concurrently with the
// others of its device: against a device that answers after 1.5 s, the
// Thermostat's hundred-odd valid values would cost three minutes one after
// another. Most of them are about the gateway's reading of a value (a
// number in exponent form, an enumerated value in another letter case),
// which any device of the type shows as well. So once a device is known
// slow (concurrent.go: the median of its last answers over slowAnswer) and
// the fleet has another device of the same type on the tested account
// (another gateway, or a device of the tested gateway no worker uses) that
// answers in time, the state checks of valid values left are sent to that
// stand-in, one at a time as before, each read back on its own. The slow
// device keeps the first state check of each of its fields in each format
// (so a device that stores a field wrongly still fails there), the state
// check of every value it refused when the answers were sent (so a valid
// value it refuses fails there too, as in any run), every answer check of
// every value (sent concurrently, concurrent.go), every refusal's state
// check and every effect check. In a --parallel run only worker 0 moves
// checks (it runs the checks that watch other gateways, so nothing else
// reads the stand-in meanwhile). Each moved check says so
// in its report (which device it ran on, and why), the exchanges name the
// stand-in, and the progress line counts the moved checks; the stand-in is
// put back after the run like any device the run changed.

// standIns is what the run moved off its slow devices, per slow device
// (catalog.HexOnly serial).
type standIns struct {
	// kept: the (field, format) pairs whose first state check ran on the
	// slow device itself.
	kept map[string]bool
	// moved counts the checks run on a stand-in, per slow device; on
	// names the stand-in.
	moved map[string]int
	on    map[string]string
	// refused: the valid cases (ID and format) the slow device did not
	// accept when their answers were sent concurrently.
	refused map[string]bool
}

// answered notes what the slow device answered to a case in a format.
func (st *standIns) answered(id string, f device.Format, ok bool) {
	if ok {
		return
	}
	if st.refused == nil {
		st.refused = map[string]bool{}
	}
	st.refused[id+"/"+f.String()] = true
}

// standIn is the stand-in for the device of a valid value case's state
// check in format f, when that device is slow: a Target whose device of
// the case's type is the stand-in, on its gateway; nil to run the check
// on the device itself.
func (env *Env) standIn(c catalog.Case, f device.Format) (*fleet.Target, fleet.Device, string) {
	if c.Op != device.SendCommand || c.Field == "" || c.WholeFleet || env.DryRun || env.Worker > 0 || env.Fleet == nil {
		return nil, fleet.Device{}, ""
	}
	d, ok := env.Target.Devices[c.Type]
	if !ok {
		return nil, fleet.Device{}, ""
	}
	sn := catalog.HexOnly(d.SN)
	s := &env.slow
	s.mu.Lock()
	defer s.mu.Unlock()
	m, known := s.medianAnswer(sn)
	if !known || m < slowAnswer {
		return nil, fleet.Device{}, ""
	}
	if s.stand.refused[c.ID+"/"+f.String()] {
		// The device refused this value: its state check stays on it,
		// where it fails as it would have in any run.
		return nil, fleet.Device{}, ""
	}
	key := sn + "/" + c.Field + "/" + f.String()
	if s.stand.kept == nil {
		s.stand.kept, s.stand.moved, s.stand.on = map[string]bool{}, map[string]int{}, map[string]string{}
	}
	if !s.stand.kept[key] {
		s.stand.kept[key] = true // the first of this field and format stays on the device
		return nil, fleet.Device{}, ""
	}
	if cand, ok := env.fastSameType(c.Type, d.SN); ok {
		t := *env.Target
		t.MAC = cand.mac
		t.Devices = map[string]fleet.Device{}
		for k, v := range env.Target.Devices {
			t.Devices[k] = v
		}
		t.Devices[c.Type] = cand.dev
		s.stand.moved[sn]++
		s.stand.on[sn] = fmt.Sprintf("%s %s on gateway %s", cand.dev.Type, cand.dev.SN, cand.mac)
		why := fmt.Sprintf("%s %s is slow (median answer %s): this state check runs on %s %s on gateway %s, another %s of the fleet; "+
			"%s itself kept the first state check of %s in %s, every answer check of this value, and its refusal and effect checks",
			d.Type, d.SN, m.Round(10e6), cand.dev.Type, cand.dev.SN, cand.mac, c.Type, d.SN, c.Field, f)
		return &t, cand.dev, why
	}
	return nil, fleet.Device{}, ""
}

// devOn is a device with its gateway.
type devOn struct {
	dev fleet.Device
	mac string
}

// sameType are the devices of a type on the tested account other than sn
// and other than the ones the workers of a --parallel run use (the first
// Workers of the type on the tested gateway), in fleet order.
// It reads the fleet alone, never env.Target (a check may be running on
// a stand-in while the progress line asks).
func (env *Env) sameType(typ, sn string) []devOn {
	var out []devOn
	if env.Fleet == nil {
		return nil
	}
	tested, err := env.Fleet.Target()
	if err != nil {
		return nil
	}
	workers := max(env.Workers, 1)
	for _, a := range env.Fleet.Accounts {
		if a.ID != tested.AccountID {
			continue // signed with the tested account's key
		}
		for _, g := range a.Gateways {
			n := 0
			for _, d := range g.Devices {
				if d.Type != typ {
					continue
				}
				n++
				if strings.EqualFold(d.SN, sn) || strings.EqualFold(g.MAC, tested.MAC) && n <= workers {
					continue
				}
				out = append(out, devOn{dev: d, mac: g.MAC})
			}
		}
	}
	return out
}

// onStandIn runs body with the run's target set to t (the slow device's
// stand-in): the check builds, sends, reads back and arranges the put-back
// for the stand-in. The checks of a process run one at a time, and
// nothing else reads env.Target meanwhile (SlowNote reads the fleet).
func (env *Env) onStandIn(ctx context.Context, t *fleet.Target, why string, body func()) {
	ginkgo.GinkgoHelper()
	if t == nil {
		body()
		return
	}
	trial.From(ctx).By(why)
	saved := env.Target
	env.Target = t
	defer func() { env.Target = saved }()
	body()
}

// standInNote says what was moved, for the progress line ("" when
// nothing was); s.mu is held.
func (env *Env) standInNote(sn string) string {
	s := &env.slow
	if s.stand.moved[sn] == 0 {
		d, ok := env.fleetDevice(sn)
		if ok && s.lanes[sn].checks == 0 && env.Worker == 0 && len(env.sameType(d.Type, d.SN)) == 0 {
			return fmt.Sprintf(" (its state checks of valid values run on it: the fleet has no other %s on the tested account to run them on)", d.Type)
		}
		return ""
	}
	return fmt.Sprintf(" (%d state checks of valid values run on %s)", s.stand.moved[sn], s.stand.on[sn])
}

// sortedSlow is the slow devices' serials, in order; s.mu is held.
func (s *slowState) sortedSlow() []string {
	var out []string
	for sn := range s.answers {
		if m, ok := s.medianAnswer(sn); ok && m >= slowAnswer {
			out = append(out, sn)
		}
	}
	sort.Strings(out)
	return out
}

// slowWithStandIn says whether the state check of a valid value of case c
// may move to a stand-in (standIn): its device is slow and the fleet has
// another of its type. It changes nothing.
func (env *Env) slowWithStandIn(c catalog.Case) bool {
	if c.Op != device.SendCommand || c.Field == "" || c.WholeFleet {
		return false
	}
	d, ok := env.Target.Devices[c.Type]
	if !ok {
		return false
	}
	sn := catalog.HexOnly(d.SN)
	env.slow.mu.Lock()
	m, known := env.slow.medianAnswer(sn)
	env.slow.mu.Unlock()
	return known && m >= slowAnswer && env.hasStandIn(sn)
}

// hasStandIn says whether the state checks of valid values of a slow
// device (catalog.HexOnly serial) go to a stand-in: then they are not sent in
// its lane (lanes.go). A stand-in answers at once, so it is the quicker of
// the two (a whole run 1m35s against 1m46s, measured); the lane judges the
// slow device itself, for a fleet that has no other device of its type
// (the demo fleet has one Thermostat).
func (env *Env) hasStandIn(sn string) bool {
	if env.Worker > 0 || env.DryRun || env.Fleet == nil {
		return false
	}
	d, ok := env.fleetDevice(sn)
	if !ok {
		return false
	}
	env.slow.mu.Lock()
	defer env.slow.mu.Unlock()
	_, ok = env.fastSameType(d.Type, d.SN)
	return ok
}

// fastSameType is the first device of typ on the tested account, other
// than sn, that is not known to be slow too (sameType's order): the
// stand-in of sn's state checks of valid values. env.slow.mu is held.
func (env *Env) fastSameType(typ, sn string) (devOn, bool) {
	for _, cand := range env.sameType(typ, sn) {
		if cm, ok := env.slow.medianAnswer(catalog.HexOnly(cand.dev.SN)); ok && cm >= slowAnswer {
			continue // slow too
		}
		return cand, true
	}
	return devOn{}, false
}
