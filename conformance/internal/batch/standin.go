package batch

import (
	"fmt"
	"strings"

	"github.com/gwdmi/gwtools/conformance/catalog"
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
// slow (answers.go: the median of its last answers over slowAnswer) and
// the fleet has another device of the same type on the tested account
// (another gateway, or a device of the tested gateway no worker uses) that
// answers in time, the state checks of valid values left are sent to that
// stand-in, one at a time as before, each read back on its own. The slow
// device keeps the first state check of each of its fields in each format
// (so a device that stores a field wrongly still fails there), the state
// check of every value it refused when the answers were sent (so a valid
// value it refuses fails there too, as in any run), every answer check of
// every value (sent concurrently, batch.go), every refusal's state
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

// StandIn is the stand-in for the device of a valid value case's state
// check in format f, when that device is slow: a Target whose device of
// the case's type is the stand-in, on its gateway, what it is and why;
// nil to run the check on the device itself.
func (s *Sender) StandIn(c catalog.Case, f device.Format) (*fleet.Target, fleet.Device, string) {
	if c.Op != device.SendCommand || c.Field == "" || c.WholeFleet || s.cfg.DryRun || s.bench.Worker > 0 || s.bench.Fleet == nil {
		return nil, fleet.Device{}, ""
	}
	d, ok := s.bench.Target.Devices[c.Type]
	if !ok {
		return nil, fleet.Device{}, ""
	}
	sn := catalog.HexOnly(d.SN)
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
	if cand, ok := s.fastSameType(c.Type, d.SN); ok {
		t := *s.bench.Target
		t.MAC = cand.mac
		t.Devices = map[string]fleet.Device{}
		for k, v := range s.bench.Target.Devices {
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
// It reads the fleet alone, never the Bench's Target (a check may be running on
// a stand-in while the progress line asks).
func (s *Sender) sameType(typ, sn string) []devOn {
	var out []devOn
	if s.bench.Fleet == nil {
		return nil
	}
	tested, err := s.bench.Fleet.Target()
	if err != nil {
		return nil
	}
	workers := max(s.bench.Workers, 1)
	for _, a := range s.bench.Fleet.Accounts {
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

// standInNote says what was moved, for the progress line ("" when
// nothing was); s.mu is held.
func (s *Sender) standInNote(sn string) string {
	if s.stand.moved[sn] == 0 {
		d, ok := s.bench.FleetDevice(sn)
		if ok && s.lanes[sn].checks == 0 && s.bench.Worker == 0 && len(s.sameType(d.Type, d.SN)) == 0 {
			return fmt.Sprintf(" (its state checks of valid values run on it: the fleet has no other %s on the tested account to run them on)", d.Type)
		}
		return ""
	}
	return fmt.Sprintf(" (%d state checks of valid values run on %s)", s.stand.moved[sn], s.stand.on[sn])
}

// SlowWithStandIn says whether the state check of a valid value of case c
// may move to a stand-in (StandIn): its device is slow and the fleet has
// another of its type. It changes nothing.
func (s *Sender) SlowWithStandIn(c catalog.Case) bool {
	if c.Op != device.SendCommand || c.Field == "" || c.WholeFleet {
		return false
	}
	d, ok := s.bench.Target.Devices[c.Type]
	if !ok {
		return false
	}
	sn := catalog.HexOnly(d.SN)
	s.mu.Lock()
	m, known := s.medianAnswer(sn)
	s.mu.Unlock()
	return known && m >= slowAnswer && s.hasStandIn(sn)
}

// hasStandIn says whether the state checks of valid values of a slow
// device (catalog.HexOnly serial) go to a stand-in: then they are not sent in
// its lane (lanes.go). A stand-in answers at once, so it is the quicker of
// the two; the lane judges the slow device itself, for a fleet that has no
// other device of its type (the demo fleet has one Thermostat).
func (s *Sender) hasStandIn(sn string) bool {
	if s.bench.Worker > 0 || s.cfg.DryRun || s.bench.Fleet == nil {
		return false
	}
	d, ok := s.bench.FleetDevice(sn)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok = s.fastSameType(d.Type, d.SN)
	return ok
}

// fastSameType is the first device of typ on the tested account, other
// than sn, that is not known to be slow too (sameType's order): the
// stand-in of sn's state checks of valid values. s.mu is held.
func (s *Sender) fastSameType(typ, sn string) (devOn, bool) {
	for _, cand := range s.sameType(typ, sn) {
		if cm, ok := s.medianAnswer(catalog.HexOnly(cand.dev.SN)); ok && cm >= slowAnswer {
			continue // slow too
		}
		return cand, true
	}
	return devOn{}, false
}
