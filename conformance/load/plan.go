package load

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Mix is the share of each operation in the load, as weights.
type Mix struct {
	Command, Message, Rename int
}

// DefaultMix is mostly commands, as a gateway service sees them.
var DefaultMix = Mix{Command: 8, Message: 1, Rename: 1}

// ParseMix reads "command=8,message=1,rename=1"; operations left out get
// no share. update_name is another name for rename.
func ParseMix(s string) (Mix, error) {
	var m Mix
	for _, part := range strings.Split(s, ",") {
		name, w, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if !ok || err != nil || n < 0 {
			return m, fmt.Errorf("mix: %q is not operation=weight (weights are whole numbers from 0)", part)
		}
		switch strings.TrimSpace(name) {
		case "command":
			m.Command = n
		case "message":
			m.Message = n
		case "rename", "update_name":
			m.Rename = n
		default:
			return m, fmt.Errorf("mix: %q is not command, message or rename", name)
		}
	}
	if m.Command+m.Message+m.Rename == 0 {
		return m, errors.New("mix: every weight is zero")
	}
	return m, nil
}

func (m Mix) String() string {
	return fmt.Sprintf("command=%d,message=%d,rename=%d", m.Command, m.Message, m.Rename)
}

// kv is one control field as sent, a string, for codec.AppendRequest.
type kv = codec.Field

// account is what signing needs of one account; the sign is made once a
// second (the timestamp's resolution) and shared by every request.
type account struct {
	id     string
	key    fleet.APIKey
	loc    *time.Location
	signer client.Signer // only for a fleet's sign_command: it signs per request
	stamp  atomic.Pointer[stamp]
}

type stamp struct {
	sec       int64
	timestamp string
	sign      string
}

func (a *account) stampAt(now time.Time) *stamp {
	sec := now.Unix()
	if s := a.stamp.Load(); s != nil && s.sec == sec {
		return s
	}
	ts := auth.Timestamp(now, a.loc)
	s := &stamp{sec: sec, timestamp: ts, sign: auth.Sign(a.key.Key, a.key.Secret, ts)}
	a.stamp.Store(s)
	return s
}

type gateway struct {
	acct    *account
	mac     string
	devices []fleet.Device
}

// plan turns a fleet into a stream of valid requests: which device, which
// operation, which values. Everything it draws from is made up front, so
// that a request costs no allocation but its body.
type plan struct {
	gateways []gateway
	cum      []int // cum[i] is the devices on gateways[:i+1]
	devices  int
	ops      []device.Operation // one entry per unit of weight
	formats  []device.Format
	values   map[*oracle.Field][]string
	names    []string
	messages []string
	slow     bool // some account signs with a command, per request
}

func newPlan(f *fleet.Fleet, mix Mix, formats []device.Format) (*plan, error) {
	p := &plan{formats: formats, values: map[*oracle.Field][]string{}}
	loc := f.Location()
	for _, fa := range f.Accounts {
		if len(fa.APIKeys) == 0 {
			continue
		}
		a := &account{id: fa.ID, key: fa.APIKeys[0], loc: loc}
		if len(f.SignCommand) > 0 {
			a.signer = client.CommandSigner{Argv: f.SignCommand}
			p.slow = true
		}
		for _, g := range fa.Gateways {
			p.gateways = append(p.gateways, gateway{acct: a, mac: g.MAC, devices: g.Devices})
			p.devices += len(g.Devices)
			p.cum = append(p.cum, p.devices)
		}
	}
	if len(p.gateways) == 0 {
		return nil, errors.New("the fleet has no account with an api key and a gateway to send to")
	}
	add := func(op device.Operation, w int, needsDevice bool) {
		if needsDevice && p.devices == 0 {
			return
		}
		for range w {
			p.ops = append(p.ops, op)
		}
	}
	add(device.SendCommand, mix.Command, true)
	add(device.SendMessage, mix.Message, false)
	add(device.UpdateName, mix.Rename, true)
	if len(p.ops) == 0 {
		return nil, errors.New("the fleet has no device for the commands and renames of the mix")
	}
	for _, t := range oracle.Types {
		for i := range t.Fields {
			p.values[&t.Fields[i]] = fieldValues(&t.Fields[i])
		}
	}
	for _, room := range []string{"Kitchen", "Hall", "Porch", "Office", "Attic", "Garage", "Study", "Patio"} {
		for _, thing := range []string{"Light", "Lamp", "Heater", "Fan", "Door", "Blinds", "Climate", "Remote"} {
			p.names = append(p.names, room+" "+thing)
		}
	}
	for _, setting := range []string{"temperature", "humidity", "brightness", "volume"} {
		for n := 0; n < 50; n += 7 {
			p.messages = append(p.messages, setting+"="+strconv.Itoa(n))
		}
	}
	return p, nil
}

// fieldValues are valid values of a field to draw from, from the
// harness's own rule table (package oracle).
func fieldValues(o *oracle.Field) []string {
	var vs []string
	switch o.Kind {
	case oracle.Enum:
		vs = o.Values
	case oracle.Integer:
		for n := o.Min; n <= o.Max; n += max(1, (o.Max-o.Min)/100) {
			vs = append(vs, o.Format(n))
		}
	case oracle.Decimal:
		for n := o.Min; n <= o.Max; n += max(500, (o.Max-o.Min)/200) {
			vs = append(vs, o.Format(n))
		}
	case oracle.Text:
		for _, w := range []string{"normal", "eco", "boost", "night"} {
			if len(w) <= o.MaxLen {
				vs = append(vs, w)
			}
		}
	}
	if len(vs) == 0 {
		vs = []string{o.Example}
	}
	return vs
}

// request is one drawn request.
type request struct {
	op     device.Operation
	format device.Format
	fields []kv
	// tag, when set, makes a message's value one of a kind: its setting
	// name gets ".TAG" (an ack log's messages are checked one by one).
	tag string
}

// draw fills r with a new valid request signed for now. fields is reused.
func (p *plan) draw(ctx context.Context, rng *rand.Rand, now time.Time, r *request) error {
	return p.drawOwned(ctx, rng, now, r, 0, 1)
}

// drawOwned is draw over the devices whose index in the fleet is part
// mod of only (part < of, part < p.devices): a worker's own devices.
func (p *plan) drawOwned(ctx context.Context, rng *rand.Rand, now time.Time, r *request, part, of int) error {
	r.op = p.ops[rng.IntN(len(p.ops))]
	r.format = p.formats[rng.IntN(len(p.formats))]
	var g *gateway
	var d *fleet.Device
	if p.devices > 0 {
		n := part + of*rng.IntN((p.devices-part+of-1)/of)
		gi := sort.SearchInts(p.cum, n+1)
		g = &p.gateways[gi]
		if gi > 0 {
			n -= p.cum[gi-1]
		}
		d = &g.devices[n]
	} else {
		g = &p.gateways[rng.IntN(len(p.gateways))]
	}
	st := g.acct.stampAt(now)
	f := append(r.fields[:0],
		kv{Key: device.FieldAPIKey, Value: g.acct.key.Key},
		kv{Key: device.FieldTimestamp, Value: st.timestamp},
		kv{Key: device.FieldSign, Value: st.sign},
		kv{Key: device.FieldAccount, Value: g.acct.id},
		kv{Key: device.FieldMAC, Value: g.mac})
	switch r.op {
	case device.SendCommand:
		t, ok := oracle.LookupType(d.Type)
		if !ok {
			return fmt.Errorf("device %s has type %q, which is not a published type", d.SN, d.Type)
		}
		f = append(f, kv{Key: device.FieldSN, Value: d.SN}, kv{Key: device.FieldType, Value: t.Name})
		// A random non-empty subset of the type's fields.
		mask := 1 + rng.IntN(1<<len(t.Fields)-1)
		for i := range t.Fields {
			if mask&(1<<i) != 0 {
				fd := &t.Fields[i]
				vs := p.values[fd]
				f = append(f, kv{Key: fd.Wire(r.format), Value: vs[rng.IntN(len(vs))]})
			}
		}
	case device.SendMessage:
		v := p.messages[rng.IntN(len(p.messages))]
		if r.tag != "" {
			setting, num, _ := strings.Cut(v, "=")
			v = setting + "." + r.tag + "=" + num
		}
		f = append(f, kv{Key: device.FieldMessageType, Value: "message"}, kv{Key: device.FieldMessageValue, Value: v})
	case device.UpdateName:
		f = append(f, kv{Key: device.FieldSN, Value: d.SN}, kv{Key: device.FieldName, Value: p.names[rng.IntN(len(p.names))]})
	}
	r.fields = f
	if g.acct.signer != nil {
		return p.signSlow(ctx, g.acct, r)
	}
	return nil
}

// signSlow signs a request through the fleet's sign command, over the
// fields as sent.
func (p *plan) signSlow(ctx context.Context, a *account, r *request) error {
	fields := make([]client.Field, 0, len(r.fields))
	for _, f := range r.fields {
		if f.Key != device.FieldSign {
			fields = append(fields, client.Field{Key: f.Key, Value: f.Value})
		}
	}
	s, err := a.signer.Sign(ctx, fields)
	if err != nil {
		return err
	}
	for i := range r.fields {
		if r.fields[i].Key == device.FieldSign {
			r.fields[i].Value = s
		}
	}
	return nil
}
