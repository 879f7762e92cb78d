package explore

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
)

// The space a fleet opens: every operation on every type, every subset of
// a type's fields, and every identifier of a request taken from the
// addressed device's own account and gateway or from elsewhere. Explore's
// random draws reach it unevenly: a field sent alone is seldom read back
// before the next command hides what it did, and an identifier of another
// account sits in one position only. Space groups aim at both:
//
//   - an effects group sends one device a command carrying a subset of its
//     type's fields, reads the device, sends the same subset with other
//     values, and reads it again: a field applied in another field's
//     place, or a field left out changed, shows in one of the reads
//     whatever the device held before;
//   - an isolation group sends a request with one identifier (or a key
//     and its account together) taken from another account or another
//     gateway, and reads every place it could have landed: the device or
//     message log the foreign identifier names, and the one the rest of
//     the request names.

// Origins of a request's identifiers, as Op.Origin writes them.
const (
	OriginOwn                  = "own"
	OriginSNOtherGateway       = "sn:other-gateway"
	OriginSNOtherAccount       = "sn:other-account"
	OriginMACOtherGateway      = "mac:other-gateway"
	OriginMACOtherAccount      = "mac:other-account"
	OriginMACSNOtherAccount    = "mac+sn:other-account"
	OriginKeyOtherAccount      = "api_key:other-account"
	OriginAccountOtherAccount  = "myservice_id:other-account"
	OriginKeyAndAccountOther   = "api_key+myservice_id:other-account"
	OriginSNUnknown            = "sn:unknown"
	OriginMACUnknown           = "mac:unknown"
	OriginKeyUnknown           = "api_key:unknown"
	isolationNote              = "isolation: "
	effectsNote                = "effects: "
	spaceEffectsIn, spaceIsoIn = 6, 5 // in a hundred draws of a Space generator
)

// deviceOrigins are the origins of a command's or a rename's identifiers
// an isolation group tries; messageOrigins a message's (which names no
// device).
var (
	deviceOrigins = []string{OriginSNOtherGateway, OriginSNOtherAccount, OriginMACOtherGateway, OriginMACOtherAccount,
		OriginMACSNOtherAccount, OriginKeyOtherAccount, OriginAccountOtherAccount, OriginKeyAndAccountOther}
	messageOrigins = []string{OriginMACOtherAccount, OriginKeyOtherAccount, OriginAccountOtherAccount, OriginKeyAndAccountOther}
)

// IsSpaceOp says whether op was drawn by a space group (effects or
// isolation), and which.
func IsSpaceOp(op Op) (isolation, effects bool) {
	return strings.HasPrefix(op.Note, isolationNote), strings.HasPrefix(op.Note, effectsNote)
}

// homeOf is the account and gateway of a device of the world.
func (g *Generator) homeOf(d devKey) (WAccount, WGateway) {
	for _, a := range g.W.Accounts {
		for _, gw := range a.Gateways {
			if gw.MAC == d.MAC {
				return a, gw
			}
		}
	}
	return g.W.Accounts[0], g.W.Accounts[0].Gateways[0]
}

// elsewhere is a device of another gateway of d's account (sameAccount)
// or of another account, and its account; ok false when the world has
// none.
func (g *Generator) elsewhere(d devKey, sameAccount bool) (devKey, WAccount, bool) {
	return g.elsewhereOf(d, sameAccount, "")
}

// elsewhereOf is elsewhere restricted to devices of type typ ("": any).
func (g *Generator) elsewhereOf(d devKey, sameAccount bool, typ string) (devKey, WAccount, bool) {
	home, _ := g.homeOf(d)
	var found []devKey
	var accts []WAccount
	for _, a := range g.W.Accounts {
		if (a.ID == home.ID) != sameAccount {
			continue
		}
		for _, gw := range a.Gateways {
			if gw.MAC == d.MAC {
				continue
			}
			for _, o := range gw.Devices {
				if typ != "" && o.Type != typ {
					continue
				}
				found = append(found, devKey{gw.MAC, o.SN})
				accts = append(accts, a)
			}
		}
	}
	if len(found) == 0 {
		return devKey{}, WAccount{}, false
	}
	i := g.r.Intn(len(found))
	return found[i], accts[i], true
}

// otherAccount is an account other than d's, with a key; ok false when
// the world has one account.
func (g *Generator) otherAccount(d devKey) (WAccount, bool) {
	home, _ := g.homeOf(d)
	var out []WAccount
	for _, a := range g.W.Accounts {
		if a.ID != home.ID {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return WAccount{}, false
	}
	return pick(g.r, out), true
}

// EdgeLister is a Rules that lists every value one step past a field's
// edges (typ "" for a rename's name and a message's fields).
type EdgeLister interface {
	PastEdges(typ, key string) (kvs []KV, notes []string)
}

// PlainDrawer is a Rules that can draw a field's value in its canonical
// form (no letter case, number form or edge that only one reading takes):
// what an effects or isolation group sends, so that what it finds is
// judged at the published interface's level.
type PlainDrawer interface {
	Plain(r *rand.Rand, typ, key string) KV
}

// plain draws a canonical value of a field where the rules can, else any
// valid one.
func (g *Generator) plain(typ, key string) KV {
	if p, ok := g.Rules.(PlainDrawer); ok {
		return p.Plain(g.r, typ, key)
	}
	return g.Rules.Valid(g.r, typ, key)
}

// distinct draws two values of each key, each pair stored apart where
// the rules allow it, so that one of two commands changes whatever a
// field held before.
func (g *Generator) distinct(typ, format string, keys []string) (first, second []KV) {
	for _, k := range keys {
		a := g.plain(typ, k)
		b := g.plain(typ, k)
		sa, _ := g.Rules.Command(typ, format, []KV{a})
		for try := 0; try < 12; try++ {
			sb, _ := g.Rules.Command(typ, format, []KV{b})
			if sa != nil && sb != nil && !sameValue(sa[k], sb[k]) {
				break
			}
			b = g.plain(typ, k)
		}
		first, second = append(first, a), append(second, b)
	}
	return first, second
}

// effectsGroup sends d's type's fields keys twice with other values, each
// command read back at once.
func (g *Generator) effectsGroup(d devKey, keys []string) []Op {
	a, _ := g.homeOf(d)
	typ := g.W.devs[d]
	format := g.format()
	first, second := g.distinct(typ, format, keys)
	note := effectsNote + strings.Join(keys, "+")
	if len(keys) == 1 {
		note += " alone"
	}
	var ops []Op
	for _, fields := range [][]KV{first, second} {
		ops = append(ops,
			Op{Kind: Command, Format: format, Account: a.ID, Key: a.Key, MAC: d.MAC, SN: d.SN, Type: typ, Fields: fields, Note: note},
			Op{Kind: ReadDevice, MAC: d.MAC, SN: d.SN})
		format = g.format()
	}
	if !g.Reads {
		ops = []Op{ops[0], ops[2]}
	}
	return ops
}

// randomEffects is an effects group on a drawn device with a drawn subset
// of its fields, one alone half the time.
func (g *Generator) randomEffects(devs []devKey) []Op {
	d := pick(g.r, devs)
	fields := g.Rules.Fields(g.W.devs[d])
	k := 1
	if len(fields) > 1 && g.r.Intn(2) == 0 {
		k = 1 + g.r.Intn(len(fields))
	}
	var keys []string
	for _, i := range g.r.Perm(len(fields))[:k] {
		keys = append(keys, fields[i])
	}
	sort.SliceStable(keys, func(i, j int) bool { return indexOf(fields, keys[i]) < indexOf(fields, keys[j]) })
	return g.effectsGroup(d, keys)
}

// isolationGroup sends kind (Command, Rename or Message) for home device
// d with the identifiers origin says taken from elsewhere, twice with
// other values, each followed by reads of every place it could have
// landed; ok false when the world has no such elsewhere.
func (g *Generator) isolationGroup(kind Kind, d devKey, origin string) ([]Op, bool) {
	return g.isolationOf(kind, d, origin, "", true)
}

// isolationOf is isolationGroup naming a foreign device of type typ
// ("": any), sent once or twice.
func (g *Generator) isolationOf(kind Kind, d devKey, origin, typ string, twice bool) ([]Op, bool) {
	r := g.r
	a, _ := g.homeOf(d)
	base := Op{Kind: kind, Format: g.format(), Account: a.ID, Key: a.Key, MAC: d.MAC, SN: d.SN, Origin: origin}
	victims := []Op{{Kind: ReadDevice, MAC: d.MAC, SN: d.SN}}
	if kind == Message {
		base.SN = ""
		victims = []Op{{Kind: ReadMessages, MAC: d.MAC}}
	}
	named := d // the device whose type and fields the request carries
	switch origin {
	case OriginSNOtherGateway, OriginSNOtherAccount, OriginMACSNOtherAccount, OriginMACOtherAccount:
		o, _, ok := g.elsewhereOf(d, origin == OriginSNOtherGateway, typ)
		if origin == OriginMACOtherAccount {
			o, _, ok = g.elsewhere(d, false)
		}
		if !ok {
			return nil, false
		}
		switch origin {
		case OriginMACOtherAccount:
			base.MAC = o.MAC
		case OriginMACSNOtherAccount:
			base.MAC, base.SN, named = o.MAC, o.SN, o
		default:
			base.SN, named = o.SN, o
		}
		if kind == Message {
			base.SN = ""
			victims = append(victims, Op{Kind: ReadMessages, MAC: o.MAC})
		} else if named != d {
			victims = append(victims, Op{Kind: ReadDevice, MAC: o.MAC, SN: o.SN})
		}
	case OriginMACOtherGateway:
		o, _, ok := g.elsewhere(d, true)
		if !ok || kind == Message {
			return nil, false // another gateway of one's own account takes its messages
		}
		base.MAC = o.MAC
	case OriginKeyOtherAccount, OriginAccountOtherAccount, OriginKeyAndAccountOther:
		b, ok := g.otherAccount(d)
		if !ok {
			return nil, false
		}
		if origin != OriginAccountOtherAccount {
			base.Key = b.Key
		}
		if origin != OriginKeyOtherAccount {
			base.Account = b.ID
		}
		if kind == Message && len(b.Gateways) > 0 {
			victims = append(victims, Op{Kind: ReadMessages, MAC: b.Gateways[0].MAC})
		}
	default:
		return nil, false
	}
	base.Note = isolationNote + originWords(origin)
	var first, second []KV
	switch kind {
	case Command:
		base.Type = g.W.devs[named]
		first, second = g.distinct(base.Type, base.Format, g.Rules.Fields(base.Type))
	case Rename:
		n1, n2 := g.Rules.ValidName(r), g.Rules.ValidName(r)
		for try := 0; try < 8 && strings.TrimSpace(n1) == strings.TrimSpace(n2); try++ {
			n2 = g.Rules.ValidName(r)
		}
		first, second = []KV{{Key: "name", Value: n1}}, []KV{{Key: "name", Value: n2}}
	default:
		m1, m2 := g.Rules.ValidMessage(r), g.Rules.ValidMessage(r)
		first = []KV{{Key: "message_type", Value: m1.Type}, {Key: "message_value", Value: m1.Value}}
		second = []KV{{Key: "message_type", Value: m2.Type}, {Key: "message_value", Value: m2.Value}}
	}
	var ops []Op
	for i, fields := range [][]KV{first, second} {
		if i == 1 && !twice {
			break
		}
		op := base
		op.Fields = fields
		ops = append(ops, op)
		if g.Reads {
			ops = append(ops, victims...)
		}
	}
	return ops, true
}

// originWords says an origin in words, as an operation's note.
func originWords(origin string) string {
	switch origin {
	case OriginSNOtherGateway:
		return "sn of a device of another gateway of the account"
	case OriginSNOtherAccount:
		return "sn of another account's device, through the account's own gateway"
	case OriginMACOtherGateway:
		return "mac of another gateway of the account, sn of a device not on it"
	case OriginMACOtherAccount:
		return "mac of another account's gateway"
	case OriginMACSNOtherAccount:
		return "mac and sn of another account's gateway and device"
	case OriginKeyOtherAccount:
		return "api_key of another account"
	case OriginAccountOtherAccount:
		return "myservice_id of another account"
	case OriginKeyAndAccountOther:
		return "api_key and myservice_id of another account, on this account's gateway"
	}
	return origin
}

// randomIsolation is an isolation group of a drawn operation, device and
// origin the world offers.
func (g *Generator) randomIsolation(devs []devKey) []Op {
	for try := 0; try < 8; try++ {
		d := pick(g.r, devs)
		kind := pick(g.r, []Kind{Command, Command, Rename, Message})
		origins := deviceOrigins
		if kind == Message {
			origins = messageOrigins
		}
		if ops, ok := g.isolationGroup(kind, d, pick(g.r, origins)); ok {
			return ops
		}
	}
	return nil
}

// Sweep draws, from seed, the operations that reach the space: for one
// device of each type, every subset of its fields (each alone first;
// effects groups) and a new name; each operation on each type with each
// origin of its identifiers the world offers (isolation groups: each
// request twice, with other values, so that one of the two changes
// whatever the place it could land on held before); each field with a
// forbidden value beside a valid one, read back. A group of each in turn.
func (g *Generator) Sweep(seed int64) []Op {
	g.r = rand.New(rand.NewSource(roundSeed(seed, -1)))
	g.queue = nil
	seen := map[string]bool{}
	var perType []devKey
	var types []string
	for _, d := range g.W.Devices() {
		if t := g.W.devs[d]; !seen[t] {
			seen[t] = true
			perType = append(perType, d)
			types = append(types, t)
		}
	}
	read := func(d devKey) []Op {
		if !g.Reads {
			return nil
		}
		return []Op{{Kind: ReadDevice, MAC: d.MAC, SN: d.SN}}
	}
	// Three lists of groups, sent in turn, one group of each at a time:
	// a budget that ends part way has reached some of each.
	var effects, forbidden, isolation [][]Op
	for _, d := range perType {
		fields := g.Rules.Fields(g.W.devs[d])
		var masks []int
		for i := range fields {
			masks = append(masks, 1<<i)
		}
		for mask := 1; mask < 1<<len(fields); mask++ {
			if mask&(mask-1) != 0 {
				masks = append(masks, mask)
			}
		}
		for _, mask := range masks {
			var keys []string
			for i, f := range fields {
				if mask&(1<<i) != 0 {
					keys = append(keys, f)
				}
			}
			effects = append(effects, g.effectsGroup(d, keys))
		}
		a, _ := g.homeOf(d)
		rename := Op{Kind: Rename, Format: g.format(), Account: a.ID, Key: a.Key, MAC: d.MAC, SN: d.SN, Note: effectsNote + "name",
			Fields: []KV{{Key: "name", Value: g.Rules.ValidName(g.r)}}}
		effects = append(effects, append([]Op{rename}, read(d)...))
	}
	for _, d := range perType {
		typ := g.W.devs[d]
		fields := g.Rules.Fields(typ)
		a, _ := g.homeOf(d)
		for i, f := range fields {
			kv, note := g.Rules.Invalid(g.r, typ, f)
			op := Op{Kind: Command, Format: g.format(), Account: a.ID, Key: a.Key, MAC: d.MAC, SN: d.SN, Type: typ, Note: note}
			if _, bad := g.Rules.Command(typ, op.Format, []KV{kv}); bad == nil {
				op.Format = "json" // a JSON literal, which XML sends as text
			}
			if len(fields) > 1 {
				op.Fields = append(op.Fields, g.Rules.Valid(g.r, typ, fields[(i+1)%len(fields)]))
			}
			op.Fields = append(op.Fields, kv)
			forbidden = append(forbidden, append([]Op{op}, read(d)...))
			// And each value one step past an edge: the boundary a
			// service most often gets wrong.
			if el, ok := g.Rules.(EdgeLister); ok {
				kvs, notes := el.PastEdges(typ, f)
				for k := range kvs {
					edge := op
					edge.Format, edge.Note = g.format(), notes[k]
					edge.Fields = append(append([]KV(nil), op.Fields[:len(op.Fields)-1]...), kvs[k])
					forbidden = append(forbidden, append([]Op{edge}, read(d)...))
				}
			}
		}
		if el, ok := g.Rules.(EdgeLister); ok {
			kvs, notes := el.PastEdges("", "name")
			for k := range kvs {
				op := Op{Kind: Rename, Format: g.format(), Account: a.ID, Key: a.Key, MAC: d.MAC, SN: d.SN, Note: notes[k], Fields: []KV{kvs[k]}}
				forbidden = append(forbidden, append([]Op{op}, read(d)...))
			}
		}
	}
	for i := 0; i < 3; i++ {
		// Broken messages, the log read after each.
		d := perType[i%len(perType)]
		a, _ := g.homeOf(d)
		m, note := g.Rules.InvalidMessage(g.r)
		op := Op{Kind: Message, Format: g.format(), Account: a.ID, Key: a.Key, MAC: d.MAC, Note: note,
			Fields: []KV{{Key: "message_type", Value: m.Type}, {Key: "message_value", Value: m.Value}}}
		group := []Op{op}
		if g.Reads {
			group = append(group, Op{Kind: ReadMessages, MAC: d.MAC})
		}
		forbidden = append(forbidden, group)
	}
	for _, o := range messageOrigins {
		if group, ok := g.isolationOf(Message, perType[0], o, "", false); ok {
			isolation = append(isolation, group)
		}
	}
	// Every type with every origin, in an order where both change from
	// one pair to the next (a diagonal), so that the first groups already
	// try every origin on several types; the pairs the diagonal misses
	// come after.
	devs := g.W.Devices()
	T, O := len(types), len(deviceOrigins)
	done := map[[2]int]bool{}
	var pairs [][2]int
	for k := 0; k < T*O; k++ {
		p := [2]int{k % T, (k + k/T) % O}
		if !done[p] {
			done[p] = true
			pairs = append(pairs, p)
		}
	}
	for t := 0; t < T; t++ {
		for o := 0; o < O; o++ {
			if p := [2]int{t, o}; !done[p] {
				pairs = append(pairs, p)
			}
		}
	}
	for _, p := range pairs {
		for _, kind := range []Kind{Command, Rename} {
			if group, ok := g.sweepIsolation(kind, devs, deviceOrigins[p[1]], types[p[0]]); ok {
				isolation = append(isolation, group)
			}
		}
	}
	var ops []Op
	for i := 0; i < max(len(effects), len(forbidden), len(isolation)); i++ {
		for _, list := range [][][]Op{effects, isolation, forbidden} {
			if i < len(list) {
				ops = append(ops, list[i]...)
			}
		}
	}
	return g.withoutLogReads(ops)
}

// sweepIsolation is one isolation group of kind whose request names a
// device of type typ, from a home device the world offers for origin.
func (g *Generator) sweepIsolation(kind Kind, devs []devKey, origin, typ string) ([]Op, bool) {
	foreignSN := origin == OriginSNOtherGateway || origin == OriginSNOtherAccount || origin == OriginMACSNOtherAccount
	for _, d := range devs {
		if !foreignSN && g.W.devs[d] != typ {
			continue
		}
		want := ""
		if foreignSN {
			want = typ
		}
		if group, ok := g.isolationOf(kind, d, origin, want, true); ok {
			return group, true
		}
	}
	return nil, false
}

// Coverage counts what a run reached of the space: each cell the number of
// operations sent in it (shrinking not counted).
type Coverage struct {
	// Fields: "operation type fields" of the valid requests with every
	// identifier their own (the fields by state key, "+" between them).
	Fields map[string]int `json:"fields"`
	// Origins: "operation type origin" of every request.
	Origins map[string]int `json:"origins"`
	// Values: "type field valid|forbidden" of every command value.
	Values map[string]int `json:"values"`
}

func cell(parts ...string) string { return strings.Join(parts, " ") }

func opName(k Kind) string {
	switch k {
	case Command:
		return "send_command"
	case Rename:
		return "update_name"
	case Message:
		return "send_message"
	}
	return string(k)
}

// add counts op, whose verdict is v.
func (c *Coverage) add(rs Rules, w *World, op Op, v Verdict) {
	if op.IsRead() || op.Wire != "" {
		return
	}
	if c.Fields == nil {
		c.Fields, c.Origins, c.Values = map[string]int{}, map[string]int{}, map[string]int{}
	}
	typ := "-"
	switch op.Kind {
	case Command:
		typ = op.Type
	case Rename:
		typ = w.typeOfSN(op.SN)
	}
	if typ == "" {
		typ = "-"
	}
	origin := op.Origin
	if origin == "" {
		origin = OriginOwn
	}
	c.Origins[cell(opName(op.Kind), slugType(typ), origin)]++
	if op.Kind != Command {
		if op.Origin == "" && v.Expect.Status == 200 {
			c.Fields[cell(opName(op.Kind), slugType(typ), fieldsOf(op.Kind, nil))]++
		}
		return
	}
	keys := map[string]bool{}
	for _, kv := range op.Fields {
		if indexOf(rs.Fields(op.Type), kv.Key) < 0 {
			continue
		}
		keys[kv.Key] = true
		side := "valid"
		if _, bad := rs.Command(op.Type, op.Format, []KV{kv}); bad != nil && !bad.Open {
			side = "forbidden"
		}
		c.Values[cell(slugType(op.Type), kv.Key, side)]++
	}
	if op.Origin == "" && v.Expect.Status == 200 {
		var ordered []string
		for _, k := range rs.Fields(typ) {
			if keys[k] {
				ordered = append(ordered, k)
			}
		}
		c.Fields[cell(opName(op.Kind), slugType(typ), fieldsOf(Command, ordered))]++
	}
}

func fieldsOf(k Kind, keys []string) string {
	switch k {
	case Rename:
		return "name"
	case Message:
		return "message_type+message_value"
	}
	return strings.Join(keys, "+")
}

// slugType writes a type's name without spaces, so that a cell is three
// words: "Appliance_Module_Plus".
func slugType(t string) string { return strings.ReplaceAll(t, " ", "_") }

// Dimension is one projection of the space: how many of its cells a run
// reached, and which it did not.
type Dimension struct {
	Name    string   `json:"name"`
	Reached int      `json:"reached"`
	Total   int      `json:"total"`
	Missing []string `json:"not_reached,omitempty"`
}

// Space lists the cells of each projection the world and rules open, and
// which c reached: fields (operation × type × field subset, valid and
// every identifier its own), origins (operation × type × where its
// identifiers came from) and values (type × field × valid or forbidden).
func (c *Coverage) Space(rs Rules, w *World) []Dimension {
	types := map[string]bool{}
	var order []string
	for _, d := range w.Devices() {
		if t := w.devs[d]; !types[t] {
			types[t] = true
			order = append(order, t)
		}
	}
	twoGateways, twoAccounts := false, len(w.Accounts) > 1
	for _, a := range w.Accounts {
		twoGateways = twoGateways || len(a.Gateways) > 1
	}
	offered := func(o string) bool {
		switch o {
		case OriginSNOtherGateway, OriginMACOtherGateway:
			return twoGateways
		case OriginOwn:
			return true
		}
		return twoAccounts
	}
	var fields, origins, values []string
	for _, t := range order {
		fs := rs.Fields(t)
		for mask := 1; mask < 1<<len(fs); mask++ {
			var keys []string
			for i, f := range fs {
				if mask&(1<<i) != 0 {
					keys = append(keys, f)
				}
			}
			fields = append(fields, cell("send_command", slugType(t), fieldsOf(Command, keys)))
		}
		fields = append(fields, cell("update_name", slugType(t), "name"))
		for _, k := range []Kind{Command, Rename} {
			for _, o := range append([]string{OriginOwn}, deviceOrigins...) {
				if offered(o) {
					origins = append(origins, cell(opName(k), slugType(t), o))
				}
			}
		}
		for _, f := range fs {
			values = append(values, cell(slugType(t), f, "valid"), cell(slugType(t), f, "forbidden"))
		}
	}
	fields = append(fields, cell("send_message", "-", "message_type+message_value"))
	for _, o := range append([]string{OriginOwn}, messageOrigins...) {
		if offered(o) {
			origins = append(origins, cell("send_message", "-", o))
		}
	}
	dim := func(name string, cells []string, got map[string]int) Dimension {
		d := Dimension{Name: name, Total: len(cells)}
		for _, x := range cells {
			if got[x] > 0 {
				d.Reached++
			} else {
				d.Missing = append(d.Missing, x)
			}
		}
		return d
	}
	return []Dimension{
		dim("operation × type × field subset (valid, own identifiers)", fields, c.Fields),
		dim("operation × type × identifier origin", origins, c.Origins),
		dim("type × field × valid or forbidden value", values, c.Values),
	}
}

// String is a dimension on one line.
func (d Dimension) String() string {
	return fmt.Sprintf("%s: %d of %d", d.Name, d.Reached, d.Total)
}

// Keep leaves out of the operations drawn every device keep refuses (its
// gateway's mac and its sn): devices that others change meanwhile (the
// other workers' of a --parallel run). They stay known to the model, which
// judges a request that names them all the same.
func (w *World) Keep(keep func(mac, sn string) bool) {
	for i := range w.Accounts {
		for j := range w.Accounts[i].Gateways {
			gw := &w.Accounts[i].Gateways[j]
			var kept []WDevice
			for _, d := range gw.Devices {
				if keep(gw.MAC, d.SN) {
					kept = append(kept, d)
				}
			}
			gw.Devices = kept
		}
	}
}

// typeOfSN is the type of the world's device with serial sn, on whichever
// gateway; "" for none.
func (w *World) typeOfSN(sn string) string {
	for k, t := range w.devs {
		if k.SN == sn {
			return t
		}
	}
	return ""
}
