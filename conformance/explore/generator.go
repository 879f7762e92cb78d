package explore

import (
	"fmt"
	"math/rand"
	"strings"
)

// Generator draws operations from a seed: the same seed, world and
// settings give the same sequence.
type Generator struct {
	W     *World
	Rules Rules
	// Reads says whether an observer answers; without one no read is
	// drawn.
	Reads bool
	// Clients spreads the operations over this many concurrent clients,
	// on a few shared devices (0 or 1: sequential).
	Clients int
	// OpenForms also draws requests whose one doubtful value is a form
	// the texts leave open (Rules that are an OpenDrawer): any answer
	// conforms. Explore leaves it off; diff sets it, so that two
	// implementations that read an open form apart show it (verdict
	// "both"). Off, the sequences are what they were.
	OpenForms bool
	// WireForms also sends requests in a form other than the plain one
	// (wire.go): valid requests in another allowed form, and requests
	// whose one fault is their form; with them, near misses of the
	// api_key and values one step past a field's edge. Off, the sequences
	// are what they were.
	WireForms bool
	// AroundRefusals draws, in a sequential run, groups of operations
	// around a refusal (aroundRefusal): explore's model reads the device
	// after each; diff, which compares two targets operation by operation,
	// keeps its own stream of single operations.
	AroundRefusals bool
	// Space also draws, in a sequential run, effects and isolation groups
	// (space.go); off, the sequences are what they were.
	Space bool
	// NoLogReads draws no read of a message log: other senders append to
	// the logs meanwhile (the workers of a --parallel run).
	NoLogReads bool
	r          *rand.Rand
	// queue holds the rest of a group of operations drawn together
	// (aroundRefusal), sent before anything else is drawn.
	queue []Op
}

// aroundRefusalIn is how often, in a hundred operations of a sequential
// run, a group around a refusal is drawn (aroundRefusal).
const aroundRefusalIn = 3

// roundSeed is the seed of round i of a run with seed s, so that any round
// can be drawn again alone.
func roundSeed(s int64, round int) int64 {
	return s ^ int64(uint64(round)*0x9e3779b97f4a7c15)
}

// Sequence draws round i's n operations of a run with seed s.
func (g *Generator) Sequence(seed int64, round, n int) []Op {
	g.r = rand.New(rand.NewSource(roundSeed(seed, round)))
	g.queue = nil
	devs := g.W.Devices()
	if g.Clients > 1 {
		devs = g.shared(devs)
	}
	ops := make([]Op, 0, n)
	for len(ops) < n {
		if g.AroundRefusals && len(g.queue) == 0 && g.Clients <= 1 && g.r.Intn(100) < aroundRefusalIn {
			g.queue = g.aroundRefusal(devs)
		}
		if g.Space && len(g.queue) == 0 && g.Clients <= 1 {
			switch x := g.r.Intn(100); {
			case x < spaceEffectsIn:
				g.queue = g.randomEffects(devs)
			case x < spaceEffectsIn+spaceIsoIn:
				g.queue = g.randomIsolation(devs)
			}
		}
		var op Op
		if len(g.queue) > 0 {
			op, g.queue = g.queue[0], g.queue[1:]
		} else {
			op = g.one(devs)
		}
		if g.Clients > 1 {
			op.Client = 1 + g.r.Intn(g.Clients)
		}
		ops = append(ops, op)
	}
	return g.withoutLogReads(ops)
}

// withoutLogReads is ops without the reads of a message log, when the
// generator draws none (NoLogReads).
func (g *Generator) withoutLogReads(ops []Op) []Op {
	if !g.NoLogReads {
		return ops
	}
	out := ops[:0]
	for _, op := range ops {
		if op.Kind != ReadMessages {
			out = append(out, op)
		}
	}
	return out
}

// shared picks the devices concurrent clients share: two, with as many
// fields as can be had, so that concurrent commands touch one record.
func (g *Generator) shared(devs []devKey) []devKey {
	best := append([]devKey(nil), devs...)
	g.r.Shuffle(len(best), func(i, j int) { best[i], best[j] = best[j], best[i] })
	// Stable by field count, most first.
	for i := 1; i < len(best); i++ {
		for j := i; j > 0 && len(g.Rules.Fields(g.W.devs[best[j]])) > len(g.Rules.Fields(g.W.devs[best[j-1]])); j-- {
			best[j], best[j-1] = best[j-1], best[j]
		}
	}
	return best[:min(2, len(best))]
}

// accountOf is the account of a gateway in the world.
func (g *Generator) accountOf(mac string) WAccount {
	for _, a := range g.W.Accounts {
		for _, gw := range a.Gateways {
			if gw.MAC == mac {
				return a
			}
		}
	}
	return g.W.Accounts[0]
}

func (g *Generator) format() string {
	if g.r.Intn(2) == 0 {
		return "json"
	}
	return "xml"
}

// one draws an operation: mostly valid ones that change state, reads
// between them, and requests wrong in exactly one way.
func (g *Generator) one(devs []devKey) Op {
	r := g.r
	d := pick(r, devs)
	a := g.accountOf(d.MAC)
	typ := g.W.devs[d]
	base := Op{Format: g.format(), Account: a.ID, Key: a.Key, MAC: d.MAC, SN: d.SN, Note: "valid"}
	concurrent := g.Clients > 1
	x := r.Intn(100)
	if g.Reads {
		switch {
		case x < 14:
			return Op{Kind: ReadDevice, MAC: d.MAC, SN: d.SN}
		case x < 18:
			return Op{Kind: ReadMessages, MAC: d.MAC}
		}
	} else if x < 18 {
		x = 18 + r.Intn(82)
	}
	if g.WireForms && x >= 18 && r.Intn(10) == 0 {
		// A valid operation in another form, or wrong only in its form.
		op := g.one(devs)
		for op.Note != "valid" {
			op = g.one(devs)
		}
		if o, ok := drawWire(r, op, g.W); ok {
			return o
		}
		return op
	}
	switch {
	case x < 50: // valid command
		op := base
		op.Kind, op.Type = Command, typ
		fields := g.Rules.Fields(typ)
		k := 1
		if !concurrent && len(fields) > 1 {
			k = 1 + r.Intn(len(fields))
		}
		for _, i := range r.Perm(len(fields))[:k] {
			op.Fields = append(op.Fields, g.Rules.Valid(r, typ, fields[i]))
		}
		return op
	case x < 62: // valid rename
		op := base
		op.Kind, op.Type = Rename, ""
		op.Fields = []KV{{Key: "name", Value: g.Rules.ValidName(r)}}
		return op
	case x < 72: // valid message
		op := base
		op.Kind, op.SN = Message, ""
		m := g.Rules.ValidMessage(r)
		op.Fields = []KV{{Key: "message_type", Value: m.Type}, {Key: "message_value", Value: m.Value}}
		return op
	}
	return g.invalid(base, d, typ)
}

// aroundRefusal draws a group of operations about one device: a command
// to it refused for one reason (a value, a field, its type, its
// credentials, its sign), then one or two valid commands to it that each
// carry every field of its type, in a drawn order, each followed by a read
// of the device (when an observer answers). A target that lets a refusal
// leave something behind (the next command applied in part, or not at
// all, or the refused values after all) shows it in the read: a lone read
// drawn at random seldom comes right after the one command that shows it.
func (g *Generator) aroundRefusal(devs []devKey) []Op {
	r := g.r
	d := pick(r, devs)
	a := g.accountOf(d.MAC)
	typ := g.W.devs[d]
	base := Op{Format: g.format(), Account: a.ID, Key: a.Key, MAC: d.MAC, SN: d.SN, Note: "valid"}
	refused := Op{}
	for try := 0; try < 8; try++ {
		op := g.invalid(base, d, typ)
		if op.Kind == Command && op.MAC == d.MAC && op.SN == d.SN && op.Note != "valid" {
			refused = op
			break
		}
	}
	if refused.Kind == "" {
		refused = base
		refused.Kind, refused.Type = Command, typ
		refused.Fields = []KV{g.Rules.Valid(r, typ, pick(r, g.Rules.Fields(typ)))}
		refused.BadSign, refused.Note = true, "wrong sign"
	}
	ops := []Op{refused}
	fields := g.Rules.Fields(typ)
	for n := 1 + r.Intn(2); n > 0; n-- {
		op := base
		op.Format = g.format()
		op.Kind, op.Type = Command, typ
		for _, i := range r.Perm(len(fields)) {
			op.Fields = append(op.Fields, g.Rules.Valid(r, typ, fields[i]))
		}
		ops = append(ops, op)
		if g.Reads {
			ops = append(ops, Op{Kind: ReadDevice, MAC: d.MAC, SN: d.SN})
		}
	}
	return ops
}

// invalid draws a request that is wrong in one way.
func (g *Generator) invalid(op Op, d devKey, typ string) Op {
	r := g.r
	if g.OpenForms && r.Intn(4) == 0 {
		if o, ok := g.open(op, typ); ok {
			return o
		}
	}
	op.Kind, op.Type = Command, typ
	fields := g.Rules.Fields(typ)
	f := pick(r, fields)
	op.Fields = []KV{g.Rules.Valid(r, typ, f)}
	if g.WireForms && r.Intn(4) == 0 {
		if o, ok := g.nearMiss(op, typ, f); ok {
			return o
		}
	}
	switch r.Intn(12) {
	case 0, 1, 2:
		kv, note := g.Rules.Invalid(r, typ, f)
		// A valid field first: a refused command applies none of its fields.
		op.Fields = []KV{}
		if len(fields) > 1 {
			other := fields[(indexOf(fields, f)+1)%len(fields)]
			op.Fields = append(op.Fields, g.Rules.Valid(r, typ, other))
		}
		op.Fields = append(op.Fields, kv)
		op.Note = note
	case 3:
		op.Fields, op.Note = nil, "no device field"
	case 4:
		for _, t := range g.Rules.Types() {
			other := g.Rules.Fields(t)
			if indexOf(fields, other[0]) < 0 {
				op.Fields = append(op.Fields, g.Rules.Valid(r, t, other[0]))
				op.Note = fmt.Sprintf("field %s of a %s", other[0], t)
				break
			}
		}
	case 5:
		for _, t := range g.Rules.Types() {
			if t != typ {
				op.Type, op.Note = t, "type of another device"
				op.Fields = []KV{g.Rules.Valid(r, t, g.Rules.Fields(t)[0])}
				break
			}
		}
	case 6:
		// The sn of a device of another gateway: of the account, or
		// (every other time) of another account, sent through this
		// account's own gateway with its own key.
		u := r.Uint64()
		op.SN, op.Note, op.Origin = fmt.Sprintf("%032x", u), "unknown device", OriginSNUnknown
		foreign := u&1 == 0 // the same draw: the stream of later draws stays as it was
		for _, o := range g.W.Devices() {
			if o.MAC == d.MAC || (g.W.gwOf[o.MAC] != g.W.gwOf[d.MAC]) != foreign {
				continue
			}
			op.SN, op.Note, op.Origin = o.SN, "device of another gateway", OriginSNOtherGateway
			if foreign {
				op.Note, op.Origin = "device of another account", OriginSNOtherAccount
			}
			if r.Intn(2) == 0 {
				op.Type = g.W.devs[o]
				op.Fields = []KV{g.Rules.Valid(r, op.Type, g.Rules.Fields(op.Type)[0])}
			}
			break
		}
	case 7:
		op.Note, op.Origin = "gateway of another account", OriginMACUnknown
		op.MAC = fmt.Sprintf("%012x", r.Uint64()&0xffffffffffff)
		for _, o := range g.W.Gateways() {
			if g.W.gwOf[o] != op.Account {
				op.MAC, op.Origin = o, OriginMACOtherAccount
				break
			}
		}
	case 8:
		op.Note = "api_key of another account"
		op.Key = "no-such-key-" + fmt.Sprint(r.Intn(1000))
		op.Note, op.Origin = "unknown api_key", OriginKeyUnknown
		for _, a := range g.W.Accounts {
			if a.ID != op.Account {
				op.Key, op.Note, op.Origin = a.Key, "api_key of another account", OriginKeyOtherAccount
				break
			}
		}
	case 9:
		op.Key, op.Note, op.Origin = fmt.Sprintf("unknown-key-%d", r.Intn(1000)), "unknown api_key", OriginKeyUnknown
	case 10:
		op.BadSign, op.Note = true, "wrong sign"
	default:
		switch r.Intn(2) {
		case 0:
			op.Kind, op.Type, op.Fields = Rename, "", nil
			name, note := g.Rules.InvalidName(r)
			op.Fields, op.Note = []KV{{Key: "name", Value: name}}, note
		default:
			op.Kind, op.Type, op.SN = Message, "", ""
			m, note := g.Rules.InvalidMessage(r)
			op.Fields, op.Note = []KV{{Key: "message_type", Value: m.Type}, {Key: "message_value", Value: m.Value}}, note
		}
	}
	return op
}

// open draws a request whose one doubtful value is an open form: a
// command field (two times in three) or a message; ok is false when the
// rules draw none.
func (g *Generator) open(op Op, typ string) (Op, bool) {
	od, ok := g.Rules.(OpenDrawer)
	if !ok {
		return op, false
	}
	r := g.r
	if r.Intn(3) > 0 {
		kv, note, ok := od.OpenValue(r, typ, pick(r, g.Rules.Fields(typ)))
		if ok {
			op.Kind, op.Type, op.Fields, op.Note = Command, typ, []KV{kv}, note
			return op, true
		}
	}
	m, note, ok := od.OpenMessage(r)
	if !ok {
		return op, false
	}
	op.Kind, op.Type, op.SN, op.Note = Message, "", "", note
	op.Fields = []KV{{Key: "message_type", Value: m.Type}, {Key: "message_value", Value: m.Value}}
	return op, true
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.Intn(len(xs))] }

// EdgeDrawer is a Rules that can draw a value one step past a field's
// edge (refused), ok false when the field has none.
type EdgeDrawer interface {
	PastEdge(r *rand.Rand, typ, key string) (kv KV, note string, ok bool)
}

// nearMiss draws a request wrong in one way that is close to a right one:
// a value one step past an edge of field f, or the account's api_key in
// another letter case or with a space around it.
func (g *Generator) nearMiss(op Op, typ, f string) (Op, bool) {
	r := g.r
	if ed, ok := g.Rules.(EdgeDrawer); ok && r.Intn(2) == 0 {
		if kv, note, ok := ed.PastEdge(r, typ, f); ok {
			op.Fields, op.Note = []KV{kv}, note
			return op, true
		}
	}
	k := op.Key
	switch r.Intn(3) {
	case 0:
		k = strings.ToUpper(k)
		op.Note = "api_key in upper case"
	case 1:
		k = " " + k
		op.Note = "api_key with a space before it"
	default:
		k += " "
		op.Note = "api_key with a space after it"
	}
	if _, known := g.W.keyOf[k]; known || k == op.Key {
		return op, false
	}
	op.Key = k
	return op, true
}
