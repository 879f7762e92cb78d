package catalog

import (
	"context"
	"strings"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// The whole fleet: when the fleet file names more gateways or accounts than
// the tested one, these cases use them. A device addressed through a
// gateway it is not on must not succeed; a key of one account must not act
// on another account's gateway or devices (published 5: a key that acts on
// an account it does not belong to defeats the authentication); the other
// account's own key works. With one gateway or one account they are skipped
// and the run is PARTIAL.

// peer is another account of the fleet, with a key and a gateway.
type peer struct {
	AccountID string
	Key       fleet.APIKey
	MAC       string
	Device    fleet.Device
	HasDevice bool
}

const (
	skipOneAccount = "the fleet has a single account with a key and a gateway: cross-account isolation not covered"
	SkipOneGateway = "the fleet has no device on a gateway other than the tested one: cross-gateway isolation not covered"
)

// OtherAccount is the first account other than the tested one that has a
// key and a gateway.
func (b *Bench) OtherAccount() (peer, bool) {
	for _, a := range b.Fleet.Accounts {
		if a.ID == b.Target.AccountID || len(a.APIKeys) == 0 || len(a.Gateways) == 0 {
			continue
		}
		p := peer{AccountID: a.ID, Key: a.APIKeys[0], MAC: a.Gateways[0].MAC}
		if len(a.Gateways[0].Devices) > 0 {
			p.Device, p.HasDevice = a.Gateways[0].Devices[0], true
		}
		return p, true
	}
	return peer{}, false
}

// ForeignDevice is a device on a gateway other than the tested one: of the
// tested account if it has one, else of any account.
func (b *Bench) ForeignDevice() (fleet.Device, bool) {
	var other *fleet.Device
	for _, a := range b.Fleet.Accounts {
		for _, g := range a.Gateways {
			if g.MAC == b.Target.MAC || len(g.Devices) == 0 {
				continue
			}
			if a.ID == b.Target.AccountID {
				return g.Devices[0], true
			}
			if other == nil {
				d := g.Devices[0]
				other = &d
			}
		}
	}
	if other != nil {
		return *other, true
	}
	return fleet.Device{}, false
}

// SignAs signs a call with another key of the fleet: by md5 with that key's
// secret, else with the run's signer (a sign command is given the api_key
// among the fields and signs for it).
func (b *Bench) SignAs(c *Call, f device.Format, key fleet.APIKey) string {
	s := b.Signer
	if b.Fleet.Scheme() == auth.MD5 && len(b.Fleet.SignCommand) == 0 {
		s = client.MD5Signer{APIKey: key.Key, Secret: key.Secret}
	}
	c.Set(device.FieldAPIKey, key.Key)
	var fields []client.Field
	for _, fl := range c.Request(f).Fields {
		if fl.Key != device.FieldSign {
			fields = append(fields, fl)
		}
	}
	sign, err := s.Sign(context.Background(), fields)
	if err != nil {
		return "signing with the other account's key: " + err.Error()
	}
	c.Set(device.FieldSign, sign)
	c.KeepSign = true
	// The same key's sign of another timestamp, so that the call can be
	// moved off a second where it would repeat another (client.Ledger).
	c.Resign = func(ts string) (string, bool) {
		at := *c
		at.Fields = append([]Field(nil), c.Fields...)
		at.Set(device.FieldTimestamp, ts)
		var fields []client.Field
		for _, fl := range at.Request(f).Fields {
			if fl.Key != device.FieldSign {
				fields = append(fields, fl)
			}
		}
		sign, err := s.Sign(context.Background(), fields)
		return sign, err == nil
	}
	c.Tamper = nil
	if s, ok := b.Fleet.Secret(key.Key); ok && s == key.Secret {
		// The valid sign of a key of the fleet: any line signs it so.
		c.Tamper = &client.Tamper{}
	}
	return ""
}

// fleetRow is one case of fleetTable: ID after "fleet.<operation>.",
// title after "a <operation> request ", published section, CONTRACT
// section, the request of the operation, expectation.
type fleetRow struct {
	id, title, section, contract string
	build                        func(e *Bench, op device.Operation, f device.Format, id string) (Call, string)
	want                         Expectation
}

// fleetGroup is rows made on each of some operations: every row on the
// first operation, then every row on the next.
type fleetGroup struct {
	ops  []device.Operation
	rows []fleetRow
}

// fleetCases are the cases of fleetTable, then the near misses.
func fleetCases() []Case {
	var cs []Case
	for _, g := range fleetTable() {
		for _, op := range g.ops {
			for _, r := range g.rows {
				cs = append(cs, Case{ID: "fleet." + op.Name() + "." + r.id, Op: op, Section: r.section, Contract: r.contract,
					Title: "a " + op.Name() + " request " + r.title, Want: r.want, NoSim: true, WholeFleet: true, Tags: []string{"fleet"},
					Build: func(e *Bench, f device.Format, id string) (Call, string) { return r.build(e, op, f, id) }})
			}
		}
	}
	return append(cs, nearMissCases()...)
}

// fleetTable are the cases that use the fleet's other gateways and
// accounts.
func fleetTable() []fleetGroup {
	accountMismatch := Expectation{Must: true, Status: 403, Codes: []string{device.CodeAccountMismatch}, Field: device.FieldAccount}
	noGateway := Expectation{Must: true, Status: 404, Codes: []string{device.CodeGatewayNotFound}, Field: device.FieldMAC}
	return []fleetGroup{
		{ops: []device.Operation{device.SendCommand, device.UpdateName}, rows: []fleetRow{
			{id: "device-on-another-gateway", title: "through the tested gateway to a device of another gateway", section: "2.2",
				contract: "3", build: foreignDevice,
				want: Expectation{Must: true, Status: 404, Codes: []string{device.CodeDeviceNotFound}, Field: device.FieldSN}},
		}},
		{ops: device.Operations, rows: []fleetRow{
			// The other account's key, claiming the tested account and gateway.
			{id: "other-key-on-this-account", title: "signed with another account's key for the tested account and gateway",
				section: "5", contract: "1", build: otherKeyHere(false), want: accountMismatch},
			// The other account's key, for its own account, on the tested
			// (not its) gateway and device.
			{id: "other-key-on-this-gateway", title: "by another account, with its own key and id, to the tested gateway",
				section: "5", contract: "3", build: otherKeyHere(true), want: noGateway},
			// The tested key, for its own account, on the other account's gateway.
			{id: "this-key-on-other-gateway", title: "with the tested key and account to another account's gateway",
				section: "5", contract: "3", build: thisKeyThere(false), want: noGateway},
			// The tested key naming the other account outright.
			{id: "this-key-on-other-account", title: "with the tested key to another account's gateway and id",
				section: "5", contract: "1", build: thisKeyThere(true), want: accountMismatch},
		}},
		{ops: []device.Operation{device.SendMessage, device.UpdateName}, rows: []fleetRow{
			// The other account's own key works on its own gateway and device.
			{id: "other-account-own-key", title: "by another account with its own key on its own gateway",
				section: "5", contract: "1", build: otherAccountOwnKey, want: Expectation{OK: true, Status: 200}},
		}},
	}
}

// foreignDevice addresses, through the tested gateway, a device of
// another gateway (Bench.ForeignDevice).
func foreignDevice(e *Bench, op device.Operation, _ device.Format, _ string) (Call, string) {
	d, ok := e.ForeignDevice()
	if !ok {
		return Call{}, SkipOneGateway
	}
	c := e.Base(op, d.SN, d.Type)
	c.SN, c.Type = "", "" // nothing of the tested gateway to put back
	return c, ""
}

// otherKeyHere sends to the tested gateway and device signed with the
// other account's key, naming the other account's myservice_id when
// ownID, else the tested one.
func otherKeyHere(ownID bool) func(*Bench, device.Operation, device.Format, string) (Call, string) {
	return func(e *Bench, op device.Operation, f device.Format, id string) (Call, string) {
		p, ok := e.OtherAccount()
		if !ok {
			return Call{}, skipOneAccount
		}
		c, skip := OnOp(op, nil)(e, f, id)
		if skip != "" {
			return c, skip
		}
		if ownID {
			c.Set(device.FieldAccount, p.AccountID)
		}
		return c, e.SignAs(&c, f, p.Key)
	}
}

// thisKeyThere sends with the tested key to the other account's gateway
// and its device, naming the other account's myservice_id when otherID,
// else the tested one.
func thisKeyThere(otherID bool) func(*Bench, device.Operation, device.Format, string) (Call, string) {
	return func(e *Bench, op device.Operation, _ device.Format, _ string) (Call, string) {
		p, ok := e.OtherAccount()
		if !ok {
			return Call{}, skipOneAccount
		}
		if op != device.SendMessage && !p.HasDevice {
			return Call{}, "the other account's gateway has no device: not covered"
		}
		c := e.Base(op, p.Device.SN, p.Device.Type)
		c.Set(device.FieldMAC, p.MAC)
		if otherID {
			c.Set(device.FieldAccount, p.AccountID)
		}
		c.SN, c.Type = "", ""
		return c, ""
	}
}

// otherAccountOwnKey sends as the other account, with its key and
// myservice_id, to its own gateway and named device.
func otherAccountOwnKey(e *Bench, op device.Operation, f device.Format, _ string) (Call, string) {
	p, ok := e.OtherAccount()
	if !ok {
		return Call{}, skipOneAccount
	}
	if op != device.SendMessage && (!p.HasDevice || p.Device.Name == "") {
		return Call{}, "the other account's gateway has no named device: not covered"
	}
	c := e.Base(op, p.Device.SN, p.Device.Type)
	c.Set(device.FieldMAC, p.MAC)
	c.Set(device.FieldAccount, p.AccountID)
	if op == device.UpdateName {
		c.Set(device.FieldName, p.Device.Name) // its own name: nothing to put back
	}
	c.SN, c.Type = "", ""
	return c, e.SignAs(&c, f, p.Key)
}

// nearMiss changes the character of s at i to another of its class (a
// digit to the next digit, a letter to the next letter of its case and,
// for hex, within a-f), so that the value stays well-formed and names
// something else.
func nearMiss(s string, i int, hex bool) string {
	b := []byte(s)
	c := b[i]
	switch {
	case '0' <= c && c <= '8', 'a' <= c && c <= 'e', 'A' <= c && c <= 'E', !hex && ('a' <= c && c < 'z' || 'A' <= c && c < 'Z'):
		b[i] = c + 1
	case c == '9':
		b[i] = '0'
	case c == 'f' || c == 'z':
		b[i] = 'a'
	case c == 'F' || c == 'Z':
		b[i] = 'A'
	case c == 'x':
		b[i] = 'y'
	default:
		b[i] = 'x'
	}
	return string(b)
}

// unknownNearMiss is v (a hex id) with its character at i changed to the
// first other hexadecimal digit that names nothing in the fleet: a near
// miss of one id must not be another id of the fleet.
func (b *Bench) unknownNearMiss(v string, i int) string {
	known := map[string]bool{}
	for _, a := range b.Fleet.Accounts {
		known[strings.ToLower(a.ID)] = true
		for _, g := range a.Gateways {
			known[strings.ToLower(g.MAC)] = true
			for _, d := range g.Devices {
				known[strings.ToLower(d.SN)] = true
			}
		}
	}
	cand := v
	for k := 0; k < 15; k++ {
		cand = nearMiss(cand, i, true)
		if !known[strings.ToLower(cand)] {
			break
		}
	}
	return cand
}

// unknownKeyNearMiss is v, a near miss of the tested api_key, changed
// further at the same place while it is another api_key of the fleet: a
// near miss must be unknown, not another account's key (which gets 403,
// not 401).
func (b *Bench) unknownKeyNearMiss(v, slug string) string {
	known := map[string]bool{}
	for _, a := range b.Fleet.Accounts {
		for _, k := range a.APIKeys {
			known[k.Key] = true
		}
	}
	at := -1
	switch slug {
	case "first-character-changed":
		at = 0
	case "last-character-changed":
		at = len(v) - 1
	}
	for k := 0; k < 60 && known[v] && at >= 0; k++ {
		v = nearMiss(v, at, false)
	}
	return v
}

// nearMisses are the near misses of a value of the fleet: one character
// changed at the start and at the end; for a value the texts call exact
// (an api_key, a secret) another letter case and white space around it.
func nearMisses(v string, hex bool) []struct{ slug, what, value string } {
	out := []struct{ slug, what, value string }{
		{"first-character-changed", "its first character changed", nearMiss(v, 0, hex)},
		{"last-character-changed", "its last character changed", nearMiss(v, len(v)-1, hex)},
	}
	if !hex {
		if sw := swapCase(v); sw != v {
			out = append(out, struct{ slug, what, value string }{"other-case", "in another letter case", sw})
		}
		out = append(out,
			struct{ slug, what, value string }{"leading-space", "with a space before it", " " + v},
			struct{ slug, what, value string }{"trailing-space", "with a space after it", v + " "})
	}
	return out
}

func swapCase(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

// renamedQuote is the sentence a request breaks when one of its field
// names is written otherwise: a field the published interface requires is
// then missing (MUST); a command field only unknown (CONTRACT 2, SHOULD),
// since the command may carry its type's other fields.
func renamedQuote(field string) string {
	switch field {
	case device.FieldAPIKey:
		return oracle.QuoteAPIKey
	case device.FieldMAC:
		return oracle.QuoteMAC
	case device.FieldType:
		return oracle.QuoteCommandBody
	case device.FieldName:
		return oracle.QuoteRenameBody
	}
	return oracle.QuoteUnexpected
}

// keyMiss is what a near miss of the api_key must get. One character
// changed is another key, which the service never issued: MUST, by the
// inference that a key is checked at all. Another letter case or white
// space around it may be the same key to a service that reads keys so:
// only the CONTRACT's "Unknown key" refuses it, a SHOULD.
func keyMiss(slug string) Expectation {
	w := Expectation{Must: true, Status: 401, Codes: []string{device.CodeUnknownAPIKey}, Field: device.FieldAPIKey, Quote: oracle.QuoteUnknownKey}
	if strings.HasSuffix(slug, "-character-changed") {
		w.Quote, w.Inference = oracle.QuoteSignCarried, oracle.InferKey
	}
	return w
}

// md5Signs reports whether the harness computes the sign itself (scheme
// md5, no sign command), so that it can sign with a near miss of the
// secret.
func (b *Bench) md5Signs() bool {
	return b.Fleet.Scheme() == auth.MD5 && len(b.Fleet.SignCommand) == 0
}

// nearMissCases try a near miss of every identifier and credential the
// fleet gives: api_key and the secret (exact: one
// character changed at either end, another letter case, white space
// around it), myservice_id, mac and sn (one hexadecimal character
// changed at either end; their other letter case is a valid form, and
// white space around them a broken one, among the oracle's samples), and
// the secret of another account. Each is refused as the sentence quoted
// says. The right value of another account is tried by fleetCases and
// the envelope's cases.
func nearMissCases() []Case {
	var cs []Case
	for _, r := range nearMissRows() {
		cs = append(cs, Case{ID: r.op.Name() + ".near-miss." + r.field + "." + r.slug, Op: r.op, Title: "a " + r.op.Name() + " request with " + r.title,
			Section: r.section, Contract: r.contract, Want: r.want, Build: OnOp(r.op, r.change), NoSim: true, Tags: []string{"near-miss", "auth"}})
	}
	return append(cs, fieldNameCases()...)
}

// nearMissRow is one case of nearMissRows: ID
// "<operation>.near-miss.<field>.<slug>", title after "a <operation>
// request with ", published section, CONTRACT section, expectation, the
// change to op's valid request.
type nearMissRow struct {
	op                                    device.Operation
	field, slug, title, section, contract string
	want                                  Expectation
	change                                func(e *Bench, c *Call, f device.Format, id string) string
}

// nearMissRows are the near misses of each identifier and credential: a
// family of rows is a loop over the near misses of a value (nearMisses).
func nearMissRows() []nearMissRow {
	var rows []nearMissRow
	op := device.SendMessage
	// The api_key, signed with the right secret for the key as sent.
	for _, m := range nearMisses("an-api-key", false) {
		rows = append(rows, nearMissRow{op: op, field: device.FieldAPIKey, slug: m.slug, title: "the api_key " + m.what,
			section: "5", contract: "1", want: keyMiss(m.slug), change: keyNearMiss(m.slug)})
	}
	// The secret: the sign of the right key made with a near miss of its
	// secret, or with another account's secret.
	// A sign made with any other secret is no sign of this key's.
	badSign := Expectation{Must: true, Status: 401, Codes: []string{device.CodeBadSignature}, Field: device.FieldSign,
		Quote: oracle.QuoteSignCarried, Inference: oracle.InferSign}
	for _, m := range nearMisses("a-secret", false) {
		rows = append(rows, nearMissRow{op: op, field: "secret", slug: m.slug, title: "a sign made with the secret " + m.what,
			section: "5", contract: "1", want: badSign, change: signedWithSecret(secretNearMiss(m.slug))})
	}
	rows = append(rows, nearMissRow{op: op, field: "secret", slug: "other-account", title: "a sign made with another account's secret",
		section: "5", contract: "1", want: badSign, change: signedWithSecret(otherAccountSecret)})
	// The hex ids: one character changed at each end. Each row below is
	// a family, whose near misses fill in slug, title and change.
	for _, x := range []nearMissRow{
		{op: op, field: device.FieldAccount, section: "5", contract: "1",
			want: Expectation{Must: true, Status: 403, Codes: []string{device.CodeAccountMismatch}, Field: device.FieldAccount, Quote: oracle.QuoteOtherAccount}},
		{op: op, field: device.FieldMAC, section: "2.1", contract: "3",
			want: Expectation{Status: 404, Codes: []string{device.CodeGatewayNotFound}, Field: device.FieldMAC, Quote: oracle.QuoteNoGateway}},
		{op: device.UpdateName, field: device.FieldSN, section: "2.2", contract: "3",
			want: Expectation{Status: 404, Codes: []string{device.CodeDeviceNotFound}, Field: device.FieldSN, Quote: oracle.QuoteNoDevice}},
	} {
		for _, m := range nearMisses("0123456789ab", true) {
			x.slug, x.title, x.change = m.slug, x.field+" "+m.what, hexNearMiss(x.field, m.slug)
			rows = append(rows, x)
		}
	}
	return rows
}

// keyNearMiss sends the near miss slug of the tested api_key, changed
// further while it is another key of the fleet, signed with the tested
// secret for the key as sent.
func keyNearMiss(slug string) func(*Bench, *Call, device.Format, string) string {
	return func(e *Bench, c *Call, f device.Format, _ string) string {
		key := e.Target.Key
		for _, x := range nearMisses(key.Key, false) {
			if x.slug == slug {
				return e.SignAs(c, f, fleet.APIKey{Key: e.unknownKeyNearMiss(x.value, slug), Secret: key.Secret})
			}
		}
		return "the api_key has no " + slug + " near miss"
	}
}

// signedWithSecret signs the request of the tested key with the secret
// pick gives, where the harness computes the sign itself.
func signedWithSecret(pick func(e *Bench) (secret, skip string)) func(*Bench, *Call, device.Format, string) string {
	return func(e *Bench, c *Call, f device.Format, _ string) string {
		if !e.md5Signs() {
			return "the harness does not compute the sign itself (scheme " + string(e.Fleet.Scheme()) + " or a sign command): near misses of the secret not covered"
		}
		s, skip := pick(e)
		if skip != "" {
			return skip
		}
		return e.SignAs(c, f, fleet.APIKey{Key: e.Target.Key.Key, Secret: s})
	}
}

// secretNearMiss is the near miss slug of the tested secret.
func secretNearMiss(slug string) func(*Bench) (string, string) {
	return func(e *Bench) (string, string) {
		for _, x := range nearMisses(e.Target.Key.Secret, false) {
			if x.slug == slug {
				return x.value, ""
			}
		}
		return "", "the secret has no " + slug + " near miss"
	}
}

// otherAccountSecret is the secret of the other account's key, where it
// is not the tested one.
func otherAccountSecret(e *Bench) (string, string) {
	p, ok := e.OtherAccount()
	if !ok {
		return "", skipOneAccount
	}
	if p.Key.Secret == e.Target.Key.Secret {
		return "", "the other account has the same secret"
	}
	return p.Key.Secret, ""
}

// hexNearMiss sends the field's value with one hexadecimal character
// changed, at the end slug names, to name nothing in the fleet.
func hexNearMiss(field, slug string) func(*Bench, *Call, device.Format, string) string {
	return func(e *Bench, c *Call, _ device.Format, _ string) string {
		v := c.Get(field)
		at := 0
		if slug == "last-character-changed" {
			at = len(v) - 1
		}
		c.Set(field, e.unknownNearMiss(v, at))
		if field == device.FieldSN {
			c.SN = "" // no device of the fleet is named: nothing to put back
		}
		return ""
	}
}

// fieldNameCases: field names are exact: a key or an element name in
// another letter case, or (JSON) with white space, is not the field. Each
// row: operation, the command's type (any device when empty), the
// field, how its name is written, ID suffix and title words, JSON alone.
func fieldNameCases() []Case {
	var cs []Case
	for _, x := range []struct {
		op     device.Operation
		typ    string
		field  string
		change func(string) string
		slug   string
		what   string
		json   bool
	}{
		{device.SendMessage, "", device.FieldAPIKey, strings.ToUpper, "upper-case", "in upper case", false},
		{device.SendMessage, "", device.FieldMAC, capitalize, "capitalized", "with a capital", false},
		{device.SendCommand, "Light Dimmer", "dimming", capitalize, "capitalized", "with a capital", false},
		{device.SendCommand, "Light Dimmer", "dimming", func(s string) string { return s + " " }, "trailing-space", "with a space after it", true},
		{device.SendCommand, "Light Dimmer", "dimming", func(s string) string { return " " + s }, "leading-space", "with a space before it", true},
		{device.SendCommand, "Thermostat", "cooling_point", capitalize, "capitalized", "with a capital", false},
		{device.SendCommand, "Light Dimmer", device.FieldType, capitalize, "capitalized", "with a capital", false},
		{device.UpdateName, "", device.FieldName, capitalize, "capitalized", "with a capital", false},
	} {
		c := Case{ID: x.op.Name() + ".field-name." + check.Slug(x.field) + "." + x.slug, Op: x.op, Type: x.typ,
			Title: "a " + x.op.Name() + " request whose field name " + x.field + " is written " + x.what, Section: "2.1", Contract: "2",
			Want:  Expectation{Must: true, Status: 400, Codes: []string{device.CodeUnexpectedField, device.CodeMissingField}, Quote: renamedQuote(x.field)},
			NoSim: true, Tags: []string{"near-miss", "field-name"}}
		if x.json {
			c.Formats = []device.Format{device.JSON}
		}
		if x.typ != "" {
			c.Build = commandOn(x.typ, renamed(x.field, x.change))
		} else {
			c.Build = OnOp(x.op, renamed(x.field, x.change))
		}
		cs = append(cs, c)
	}
	return cs
}

// renamed writes the name of a field, in the request's format, as change
// makes it.
func renamed(field string, change func(string) string) func(*Bench, *Call, device.Format, string) string {
	return func(_ *Bench, c *Call, f device.Format, _ string) string {
		for i := range c.Fields {
			if c.Fields[i].Name == field {
				c.Fields[i].Wire = change(WireName(f, c.Fields[i].Name))
			}
		}
		return ""
	}
}

// capitalize writes the first letter of a field name in upper case.
func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
