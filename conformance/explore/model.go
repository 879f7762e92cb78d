package explore

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// MinMessagesKept is how many of a gateway's newest messages an observer
// must show at least (fewer only when fewer were received). The texts set
// no bound; gwsim keeps a thousand, and an observer that keeps all is as
// right. A log that shows fewer, or anything but the newest in order,
// disagrees.
const MinMessagesKept = 1000

// World is what the fleet says: accounts, their keys, gateways and
// devices with their types. It does not change during a run.
type World struct {
	// Accounts lists the accounts that have an api key, in fleet order.
	Accounts []WAccount
	// Window is the fleet's timestamp window (0: none) and Scheme its
	// sign scheme.
	Window time.Duration
	Scheme auth.Scheme
	keyOf  map[string]string // api_key -> account id
	gwOf   map[string]string // mac -> account id
	devs   map[devKey]string // device -> type
}

// WAccount is one account of the World.
type WAccount struct {
	ID       string
	Key      string
	Gateways []WGateway
}

// WGateway is one gateway with its devices (at most maxDevices of them).
type WGateway struct {
	MAC     string
	Devices []WDevice
}

// WDevice is one device and its type.
type WDevice struct{ SN, Type string }

// maxDevicesPerGateway keeps a generated fleet's many devices from
// spreading the operations so thin that no device gets two of them.
const maxDevicesPerGateway = 8

// NewWorld reads the accounts with a key, their gateways and up to eight
// devices of each.
func NewWorld(f *fleet.Fleet) (*World, error) {
	w := &World{keyOf: map[string]string{}, gwOf: map[string]string{}, devs: map[devKey]string{}, Window: f.Window(), Scheme: f.Scheme()}
	for _, a := range f.Accounts {
		if len(a.APIKeys) == 0 {
			continue
		}
		wa := WAccount{ID: strings.ToLower(a.ID), Key: a.APIKeys[0].Key}
		for _, k := range a.APIKeys {
			w.keyOf[k.Key] = wa.ID
		}
		for _, g := range a.Gateways {
			wg := WGateway{MAC: strings.ToLower(g.MAC)}
			w.gwOf[wg.MAC] = wa.ID
			for i, d := range g.Devices {
				k := devKey{wg.MAC, strings.ToLower(d.SN)}
				w.devs[k] = d.Type
				if i < maxDevicesPerGateway {
					wg.Devices = append(wg.Devices, WDevice{SN: k.SN, Type: d.Type})
				}
			}
			wa.Gateways = append(wa.Gateways, wg)
		}
		w.Accounts = append(w.Accounts, wa)
	}
	if len(w.Accounts) == 0 || len(w.Accounts[0].Gateways) == 0 || len(w.Accounts[0].Gateways[0].Devices) == 0 {
		return nil, fmt.Errorf("the fleet needs an account with an api key, a gateway and a device")
	}
	return w, nil
}

// Devices lists every device in play, gateway by gateway.
func (w *World) Devices() []devKey {
	var out []devKey
	for _, a := range w.Accounts {
		for _, g := range a.Gateways {
			for _, d := range g.Devices {
				out = append(out, devKey{g.MAC, d.SN})
			}
		}
	}
	return out
}

// Gateways lists every gateway in play.
func (w *World) Gateways() []string {
	var out []string
	for _, a := range w.Accounts {
		for _, g := range a.Gateways {
			out = append(out, g.MAC)
		}
	}
	return out
}

// Verdict is the model's judgement of a POST operation, which depends on
// the fleet and the rules only, never on the state: the answer it must get
// and the change it makes when accepted.
type Verdict struct {
	Expect Expect
	// Dev is the device the operation changes (commands, renames).
	Dev devKey
	Set map[string]string // command: the stored value of each field sent
	// Name is a rename's stored name; SetName says there is one.
	Name    string
	SetName bool
	// Msg is a message to append to gateway Dev.MAC's log.
	Msg *Msg
	// Open: the texts leave the request open; any answer conforms and
	// what it changes is not known.
	Open bool
}

// Model predicts every answer and every observed state of a sequence.
type Model struct {
	W     *World
	Rules Rules
	// Devices and Logs are the state: each device's name and state, each
	// gateway's messages (oldest first). Unknown entries (never observed)
	// are not judged.
	Devices map[devKey]DeviceState
	Logs    map[string][]Msg
}

// NewModel starts a model with no known state.
func NewModel(w *World, r Rules) *Model {
	return &Model{W: w, Rules: r, Devices: map[devKey]DeviceState{}, Logs: map[string][]Msg{}}
}

// Judge is the verdict on a POST operation: authentication first
// (CONTRACT 1), then the gateway and the device (CONTRACT 3), then the
// values (published 2.3, CONTRACT 2 and 3). The generator makes each
// invalid operation wrong in one way only, so the order in which a target
// looks does not matter.
func (m *Model) Judge(op Op) Verdict {
	v := m.judgePlain(op)
	if f := wireOf(op); f != nil {
		return m.judgeWire(op, f, v)
	}
	return v
}

// judgePlain is Judge on op's plain request.
func (m *Model) judgePlain(op Op) Verdict {
	acct, known := m.W.keyOf[op.Key]
	switch {
	case !known:
		return Verdict{Expect: refuse(401, "", "unknown_api_key")}
	case acct != strings.ToLower(op.Account):
		return Verdict{Expect: refuse(403, "", "account_mismatch")}
	case op.BadSign:
		return Verdict{Expect: refuse(401, "", "bad_signature")}
	case m.W.gwOf[op.MAC] != acct:
		return Verdict{Expect: refuse(404, "", "gateway_not_found")}
	}
	v := Verdict{Expect: success, Dev: op.device()}
	switch op.Kind {
	case Command, Rename:
		typ, ok := m.W.devs[op.device()]
		if !ok {
			return Verdict{Expect: refuse(404, "", "device_not_found")}
		}
		if op.Kind == Rename {
			name, _ := op.field("name")
			stored, bad := m.Rules.Name(op.Format, name)
			if bad != nil {
				return refused(bad)
			}
			v.Name, v.SetName = stored, true
			return v
		}
		if op.Type != typ {
			return Verdict{Expect: refuse(409, "", "type_mismatch")}
		}
		set, bad := m.Rules.Command(typ, op.Format, op.Fields)
		if bad != nil {
			return refused(bad)
		}
		v.Set = set
	case Message:
		mt, _ := op.field("message_type")
		mv, _ := op.field("message_value")
		if bad := m.Rules.Message(op.Format, mt, mv); bad != nil {
			return refused(bad)
		}
		v.Msg = &Msg{Type: mt, Value: mv}
	}
	return v
}

// refused is the verdict on a request the rules refuse, or leave open.
func refused(bad *Refusal) Verdict {
	if bad.Open {
		return Verdict{Expect: Expect{Any: true}, Open: true}
	}
	return Verdict{Expect: refuse(bad.Status, bad.Field, bad.Code)}
}

// apply is the state of device d after an accepted verdict.
func (v Verdict) apply(d DeviceState) DeviceState {
	d = d.clone()
	for k, x := range v.Set {
		d.State[k] = x
	}
	if v.SetName {
		d.Name = v.Name
	}
	return d
}

// Step predicts op's answer and applies an accepted operation to the
// state. Reads change nothing; CheckRead judges them.
func (m *Model) Step(op Op) Verdict {
	v := m.Judge(op)
	m.Apply(op, v)
	return v
}

// Apply applies op, whose verdict Judge gave as v, to the state: Step
// without judging op again.
func (m *Model) Apply(op Op, v Verdict) {
	if v.Open {
		// Whatever it did, the state it concerns is not known any more.
		delete(m.Devices, op.device())
		delete(m.Logs, op.MAC)
		return
	}
	if v.Expect.Status != 200 {
		return
	}
	switch {
	case v.Msg != nil:
		if log, ok := m.Logs[op.MAC]; ok {
			m.Logs[op.MAC] = append(log, *v.Msg)
		}
	default:
		if d, ok := m.Devices[v.Dev]; ok {
			m.Devices[v.Dev] = v.apply(d)
		}
	}
}

// CheckDevice compares an observed device with the model; "" when they
// agree.
func CheckDevice(want, got DeviceState) string {
	var diffs []string
	if want.Name != got.Name {
		diffs = append(diffs, fmt.Sprintf("name %q, want %q", got.Name, want.Name))
	}
	for _, k := range sortedKeys(want.State) {
		g, ok := got.State[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s missing, want %s", k, want.State[k]))
		case !sameValue(want.State[k], g):
			diffs = append(diffs, fmt.Sprintf("%s=%s, want %s", k, g, want.State[k]))
		}
	}
	return strings.Join(diffs, "; ")
}

// CheckLog compares an observed message log with the model's: the
// observer shows the newest entries, oldest first, all of them or at least
// MinMessagesKept.
func CheckLog(want, got []Msg) string { return CheckLogKept(want, got, MinMessagesKept) }

// CheckLogKept is CheckLog for an observer that may show as few as the
// newest minKept (MinMessagesKept when 0 or less).
func CheckLogKept(want, got []Msg, minKept int) string {
	if minKept <= 0 {
		minKept = MinMessagesKept
	}
	if len(got) > len(want) {
		return fmt.Sprintf("%d messages, want %d: one was stored that the model did not accept, or twice", len(got), len(want))
	}
	if need := min(len(want), minKept); len(got) < need {
		return fmt.Sprintf("%d messages, want %d: the log lost messages", len(got), need)
	}
	tail := want[len(want)-len(got):]
	for i := range got {
		if got[i] != tail[i] {
			return fmt.Sprintf("message %d of %d is %s=%q, want %s=%q", i+1, len(got), got[i].Type, got[i].Value, tail[i].Type, tail[i].Value)
		}
	}
	return ""
}

// sameValue compares two stored values: numbers by value (21.50 is 21.5),
// anything else as text, case and all.
func sameValue(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DeviceState is the model's state of a device, if known.
func (m *Model) DeviceState(mac, sn string) (DeviceState, bool) {
	d, ok := m.Devices[devKey{mac, sn}]
	return d, ok
}

// SetDeviceState makes d the model's state of a device.
func (m *Model) SetDeviceState(mac, sn string, d DeviceState) { m.Devices[devKey{mac, sn}] = d.clone() }

// Log is the model's message log of a gateway, if known.
func (m *Model) Log(mac string) ([]Msg, bool) {
	l, ok := m.Logs[mac]
	return l, ok
}

// SetLog makes l the model's message log of a gateway.
func (m *Model) SetLog(mac string, l []Msg) { m.Logs[mac] = append([]Msg(nil), l...) }

// Forget makes what op may have changed unknown to the model.
func (m *Model) Forget(op Op) {
	delete(m.Devices, op.device())
	delete(m.Logs, op.MAC)
}

// DeviceType is the type of a device of the world; "" for none.
func (w *World) DeviceType(mac, sn string) string { return w.devs[devKey{mac, sn}] }

// AccountOf is the account a gateway of the world belongs to.
func (w *World) AccountOf(mac string) string { return w.gwOf[mac] }

// Clone is a copy of d that shares nothing with it.
func (d DeviceState) Clone() DeviceState { return d.clone() }

// SameValue compares two stored values as the model does: numbers by
// value, anything else exactly.
func SameValue(a, b string) bool { return sameValue(a, b) }
