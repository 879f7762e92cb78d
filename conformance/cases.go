package conformance

import (
	"fmt"
	"strings"
	"time"

	"github.com/brianvoe/gofakeit/v6"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/oracle"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// expect is what a case's answer should be.
type expect struct {
	// ok: the request is valid and MUST be answered with success.
	ok bool
	// contractOK: the request is valid by the CONTRACT only, so its
	// success is a SHOULD.
	contractOK bool
	// must: the request is invalid by the published interface, so it MUST
	// NOT be answered with success; false for cases that are invalid only by
	// the CONTRACT (those have a SHOULD check alone).
	must bool
	// status, codes and field are the CONTRACT's answer (SHOULD).
	status int
	codes  []string
	field  string
	// literal: field is the key exactly as sent, not a canonical name.
	literal bool
	// jsonError: the error comes in JSON whatever the body's format, because
	// the format could not be told (CONTRACT 4).
	jsonError bool
	// errFormat overrides the format of the error payload (a body sent
	// under the other format's Content-Type is answered in that format).
	otherFormat bool
	// allow: the answer carries Allow: POST (405).
	allow bool
}

// Case is one request, valid or with exactly one thing changed, sent in
// each format. The suite turns it into MUST, SHOULD, parity and sim checks.
type Case struct {
	// ID is stable; checks append the format and their kind to it.
	ID      string
	Title   string
	Section string
	// Contract is the CONTRACT section behind the SHOULD twin.
	Contract string
	Op       device.Operation
	Type     string
	Tags     []string
	// Formats limits the case to some formats (both when nil).
	Formats []device.Format
	// Build makes the request at run time; skip says why it cannot be made
	// against this fleet.
	Build func(e *Env, f device.Format, id string) (c call, skip string)
	Want  expect
	// Field and Value: for valid command values, the state the device must
	// show after (sim checks).
	Field, Value string
	// NoSim: the case is about another gateway or account than the tested
	// one, whose state the sim check does not read.
	NoSim bool
	// WholeFleet: the case sends to other gateways or accounts than the
	// tested one, which every worker of a --parallel run shares: its
	// checks are Shared (check.Traits).
	WholeFleet bool
}

// Costs of a case's checks against a slow target (check.Traits.Cost).
const (
	// quickCost: a request refused before the store answers at once.
	quickCost = 1
	// slowCost: a request the target accepts goes all the way (its
	// latency, its store), and so does one the store refuses (no such
	// device or gateway, a type mismatch).
	slowCost = 5
)

// traits are what a check of the case takes (check.Traits), from what
// the case sends and expects. Every message case is Shared: a valid one
// appends to the gateway's log, and so does the control of a refused one
// (control.go).
func (c *Case) traits(parity bool) check.Traits {
	t := check.Traits{Shared: c.WholeFleet || c.Op == device.SendMessage, Cost: quickCost}
	if c.Want.ok || c.Want.contractOK {
		t.Cost = slowCost
	}
	for _, code := range c.Want.codes {
		switch code {
		case device.CodeDeviceNotFound, device.CodeGatewayNotFound, device.CodeTypeMismatch:
			t.Cost = slowCost
		}
	}
	if parity {
		t.Cost *= 2 // it sends the case twice
	}
	return t
}

// Expected says in words what the case expects: "success (MUST)",
// "success (SHOULD)" or "refused (MUST), 400 invalid_field".
func (c *Case) Expected() string {
	switch {
	case c.Want.ok:
		return "success (MUST)"
	case c.Want.contractOK:
		return "success (SHOULD)"
	}
	level := "SHOULD"
	if c.Want.must {
		level = "MUST"
	}
	return fmt.Sprintf("refused (%s), %d %s", level, c.Want.status, strings.Join(c.Want.codes, " or "))
}

func (c *Case) formats() []device.Format {
	if c.Formats != nil {
		return c.Formats
	}
	return []device.Format{device.JSON, device.XML}
}

// commandOn builds a command to the fleet's device of a type.
func commandOn(typeName string, change func(e *Env, c *call, f device.Format, id string) string) func(*Env, device.Format, string) (call, string) {
	return func(e *Env, f device.Format, id string) (call, string) {
		d, ok := e.device(typeName)
		if !ok {
			return call{}, "the fleet has no " + typeName + " on the tested gateway: not covered"
		}
		c := e.base(device.SendCommand, d.SN, typeName)
		if change != nil {
			if skip := change(e, &c, f, id); skip != "" {
				return call{}, skip
			}
		}
		return c, ""
	}
}

// onOp builds a request of an operation about any device of the fleet.
func onOp(op device.Operation, change func(e *Env, c *call, f device.Format, id string) string) func(*Env, device.Format, string) (call, string) {
	return func(e *Env, f device.Format, id string) (call, string) {
		d, ok := e.anyDevice()
		if !ok && op != device.SendMessage {
			return call{}, "the fleet has no device on the tested gateway"
		}
		c := e.base(op, d.SN, d.Type)
		if change != nil {
			if skip := change(e, &c, f, id); skip != "" {
				return call{}, skip
			}
		}
		return c, ""
	}
}

func setTo(name, value string) func(*Env, *call, device.Format, string) string {
	return func(_ *Env, c *call, _ device.Format, _ string) string { c.set(name, value); return "" }
}

func invalidField(field string) expect {
	return expect{must: true, status: 400, codes: []string{device.CodeInvalidField}, field: field}
}

func missingField(field string) expect {
	return expect{must: true, status: 400, codes: []string{device.CodeMissingField}, field: field}
}

// Cases is the whole catalog of request cases, in a stable order.
func Cases() []Case {
	var cs []Case
	cs = append(cs, validCases()...)
	cs = append(cs, valueCases()...)
	cs = append(cs, envelopeCases()...)
	cs = append(cs, operationCases()...)
	cs = append(cs, transportCases()...)
	cs = append(cs, structureCases()...)
	cs = append(cs, structureSamples()...)
	cs = append(cs, fleetCases()...)
	return cs
}

func validCases() []Case {
	var cs []Case
	for _, t := range device.Types {
		cs = append(cs, Case{
			ID: "command." + check.Slug(t.Name) + ".valid", Op: device.SendCommand, Type: t.Name,
			Title: "a " + t.Name + " command with every field", Section: "4.1", Contract: "4",
			Build: commandOn(t.Name, nil), Want: expect{ok: true, status: 200}, Tags: []string{"valid"},
		})
	}
	cs = append(cs,
		Case{ID: "message.valid", Op: device.SendMessage, Title: "a message brightness=80", Section: "4.2", Contract: "4",
			Build: onOp(device.SendMessage, nil), Want: expect{ok: true, status: 200}, Tags: []string{"valid"}},
		Case{ID: "update_name.valid", Op: device.UpdateName, Title: "an update of a device's name", Section: "4.3", Contract: "4",
			Build: onOp(device.UpdateName, nil), Want: expect{ok: true, status: 200}, Tags: []string{"valid"}},
	)
	return cs
}

// valueCases are every boundary, allowed form and broken form of every
// field of every type, from the harness's own rule table (package oracle),
// and the invalid type names.
func valueCases() []Case {
	var cs []Case
	for _, t := range oracle.Types {
		for i := range t.Fields {
			cs = append(cs, fieldCases(t, &t.Fields[i])...)
		}
		cs = append(cs, typeCases(t)...)
	}
	cs = append(cs, Case{
		ID: "command.unknown-type", Op: device.SendCommand, Title: "a command whose type is Toaster", Section: "2.3", Contract: "2",
		Build: onOp(device.SendCommand, setTo(device.FieldType, "Toaster")), Want: invalidField(device.FieldType),
	})
	return cs
}

// wantOf is a case's expectation from the oracle's verdict on its value.
func wantOf(v oracle.Verdict, field string) expect {
	switch {
	case v.OK && v.Must:
		return expect{ok: true, status: 200}
	case v.OK:
		return expect{contractOK: true, status: 200}
	}
	return expect{must: v.Must, status: v.Status, codes: []string{v.Code}, field: field}
}

// setValue sets a field to a sample's value: a string, a JSON number or
// another JSON value as written.
func setValue(c *call, name string, v oracle.Value) {
	switch v.Kind {
	case oracle.Number:
		c.setNum(name, v.Raw)
	case oracle.Other:
		c.set(name, v.Raw)
		c.setRaw(name)
	default:
		c.set(name, v.Raw)
	}
}

// sampleTag names a sample's class in the case's tags.
var sampleTag = map[oracle.Class]string{oracle.Edge: "boundary", oracle.Form: "form", oracle.Broken: "broken"}

// sampleCase is a case that sends one sample of a field, changed by set in
// the request build makes; the oracle's verdict is the expectation.
func sampleCase(id, title, section, contract string, op device.Operation, field string, s oracle.Sample,
	build func(change func(*Env, *call, device.Format, string) string) func(*Env, device.Format, string) (call, string)) Case {
	c := Case{ID: id + "." + s.Slug, Op: op, Title: title + " " + s.Title, Section: section, Contract: contract,
		Want: wantOf(s.Verdict, field), Tags: []string{sampleTag[s.Class]},
		Build: build(func(_ *Env, c *call, _ device.Format, _ string) string { setValue(c, field, s.Value); return "" })}
	if s.Value.JSONOnly() {
		c.Formats = []device.Format{device.JSON}
	}
	return c
}

func fieldCases(t *oracle.Type, f *oracle.Field) []Case {
	base := "command." + check.Slug(t.Name) + "." + check.Slug(f.Name)
	title := fmt.Sprintf("a %s command with %s", t.Name, f.Name)
	build := func(change func(*Env, *call, device.Format, string) string) func(*Env, device.Format, string) (call, string) {
		return commandOn(t.Name, change)
	}
	valid := func(slug, what, value string, w expect, tags ...string) Case {
		return Case{ID: base + "." + slug, Op: device.SendCommand, Type: t.Name, Section: "2.3", Contract: "3",
			Title: title + " " + what, Build: commandOn(t.Name, setTo(f.Name, value)), Want: w,
			Field: f.Name, Value: value, Tags: append([]string{"value"}, tags...)}
	}
	sample := func(s oracle.Sample) Case {
		c := sampleCase(base, title, "2.3", "3", device.SendCommand, f.Name, s, build)
		c.ID, c.Type = sampleID(base, f, s), t.Name
		// A new broken form's verdict is its check; that a refusal changes
		// nothing the state checks of the catalog's first ones show.
		c.NoSim = !s.Verdict.OK && !legacySlug(f, s.Slug)
		if s.Verdict.OK {
			c.Field, c.Value = f.Name, s.Value.Raw
			c.Tags = append(c.Tags, "value")
		}
		if strings.Contains(s.Slug, "case") {
			c.Tags = append(c.Tags, "letter-case")
		}
		if strings.HasPrefix(s.Slug, "json-number") {
			c.Tags = append(c.Tags, "json-number")
		}
		return c
	}
	var cs []Case
	baseValue := f.Example
	if f.Kind == oracle.Enum {
		baseValue = f.Values[0]
	}
	for _, s := range f.Edges() {
		cs = append(cs, sample(s))
	}
	for _, s := range f.Forms(baseValue) {
		cs = append(cs, sample(s))
	}
	for _, s := range f.Broken(baseValue) {
		cs = append(cs, sample(s))
	}
	// Cases of the catalog before the oracle's samples, kept under their
	// IDs: a value drawn from the run's seed, and values further out.
	switch f.Kind {
	case oracle.Integer:
		if f.Max-f.Min > 4 {
			drawn := valid("drawn", "drawn from the run's seed", "", expect{ok: true, status: 200})
			drawn.Build = commandOn(t.Name, func(e *Env, c *call, _ device.Format, id string) string {
				c.set(f.Name, drawNumber(e.faker(id), f))
				return ""
			})
			cs = append(cs, drawn)
		}
		neg := oracle.Sample{Slug: "negative", Title: `"-1" (negative)`, Value: oracle.Str("-1"), Class: oracle.Edge}
		neg.Verdict = f.Judge(device.XML, neg.Value)
		cs = append(cs, sample(neg))
	case oracle.Decimal:
		drawn := valid("drawn", "a decimal drawn from the run's seed", "", expect{ok: true, status: 200})
		drawn.Build = commandOn(t.Name, func(e *Env, c *call, _ device.Format, id string) string {
			c.set(f.Name, drawNumber(e.faker(id), f))
			return ""
		})
		cs = append(cs, drawn)
		for _, x := range []struct{ slug, what, v string }{
			{"below-by-a-tenth", "0.1 below the range", f.Format(f.Min - 100)},
			{"above-by-a-tenth", "0.1 above the range", f.Format(f.Max + 100)},
			{"too-low", "below -50 °C", f.Format(f.Min - 1000)},
			{"too-high", "above 100 °C", f.Format(f.Max + 1000)},
		} {
			s := oracle.Sample{Slug: x.slug, Title: `"` + x.v + `" (` + x.what + ")", Value: oracle.Str(x.v), Class: oracle.Edge}
			s.Verdict = f.Judge(device.XML, s.Value)
			cs = append(cs, sample(s))
		}
	}
	return cs
}

func typeCases(t *oracle.Type) []Case {
	slug := "command." + check.Slug(t.Name)
	var cs []Case
	cs = append(cs, Case{
		ID: slug + ".no-fields", Op: device.SendCommand, Type: t.Name, Section: "4.1", Contract: "3",
		Title: "a " + t.Name + " command with none of its fields",
		Build: commandOn(t.Name, func(_ *Env, c *call, _ device.Format, _ string) string {
			c.keep(device.FieldSN, device.FieldType)
			return ""
		}),
		Want: expect{status: 400, codes: []string{device.CodeMissingField}, field: t.Fields[0].Name}, Tags: []string{"edge"},
	})
	// A field of another type.
	var foreign *oracle.Field
	for _, o := range oracle.Types {
		for i := range o.Fields {
			if _, own := t.Field(o.Fields[i].Name); !own && foreign == nil {
				foreign = &o.Fields[i]
			}
		}
	}
	if foreign != nil {
		fo := *foreign
		cs = append(cs, Case{
			ID: slug + ".foreign-field", Op: device.SendCommand, Type: t.Name, Section: "2.3", Contract: "2",
			Title: fmt.Sprintf("a %s command that also carries %s (a field of another type)", t.Name, fo.Name),
			Build: commandOn(t.Name, setTo(fo.Name, fo.Example)),
			Want:  expect{status: 400, codes: []string{device.CodeUnexpectedField}, field: fo.Name},
			Tags:  []string{"edge"},
		})
	}
	for _, f := range t.Fields {
		if f.JSON == f.Name {
			continue
		}
		fn := f
		cs = append(cs, Case{
			ID: slug + "." + check.Slug(f.Name) + ".xml-name-in-json", Op: device.SendCommand, Type: t.Name,
			Section: "2.3", Contract: "2", Formats: []device.Format{device.JSON},
			Title: fmt.Sprintf("a JSON %s command that writes %q as %q", t.Name, fn.JSON, fn.Name),
			Build: commandOn(t.Name, func(_ *Env, c *call, _ device.Format, _ string) string {
				for i := range c.fields {
					if c.fields[i].name == fn.Name {
						c.fields[i].wire = fn.Name
					}
				}
				return ""
			}),
			Want: expect{status: 400, codes: []string{device.CodeUnexpectedField}, field: fn.Name, literal: true}, Tags: []string{"edge"},
		})
	}
	// The device's type named wrongly: the first other type, with its fields.
	cs = append(cs, Case{
		ID: slug + ".type-mismatch", Op: device.SendCommand, Type: t.Name, Section: "4.1", Contract: "3",
		Title: "a command to a " + t.Name + " that names another type",
		Build: func(e *Env, f device.Format, id string) (call, string) {
			d, ok := e.device(t.Name)
			if !ok {
				return call{}, "the fleet has no " + t.Name + ": not covered"
			}
			for _, o := range oracle.Types {
				if o != t && !sameFields(o, t) {
					c := e.base(device.SendCommand, d.SN, o.Name)
					c.typ = t.Name
					return c, ""
				}
			}
			return call{}, "no other type to name"
		},
		Want: expect{status: 409, codes: []string{device.CodeTypeMismatch}, field: device.FieldType}, Tags: []string{"edge"},
	})
	return cs
}

func sameFields(a, b *oracle.Type) bool {
	if len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Fields {
		if a.Fields[i].Name != b.Fields[i].Name {
			return false
		}
	}
	return true
}

// envelopeCases change one envelope field (published 2.1 and 5) of each
// operation.
func envelopeCases() []Case {
	var cs []Case
	for _, op := range device.Operations {
		p := op.Name() + ".envelope."
		add := func(id, title, section string, change func(*Env, *call, device.Format, string) string, w expect, tags ...string) {
			cs = append(cs, Case{ID: p + id, Op: op, Title: "a " + op.Name() + " request with " + title, Section: section,
				Contract: "1", Build: onOp(op, change), Want: w, Tags: append([]string{"envelope"}, tags...)})
		}
		for _, name := range device.EnvelopeFields {
			n := name
			add(n+".missing", "no "+n, "2.1", func(_ *Env, c *call, _ device.Format, _ string) string {
				c.drop(n)
				return ""
			}, missingField(n))
		}
		hexFields := []string{device.FieldAccount, device.FieldMAC, device.FieldSign}
		if op != device.SendMessage {
			hexFields = append(hexFields, device.FieldSN)
			add("sn.missing", "no sn", "2.2", func(_ *Env, c *call, _ device.Format, _ string) string {
				c.drop(device.FieldSN)
				return ""
			}, missingField(device.FieldSN))
		}
		// Every allowed form and every broken form of each envelope field
		// and of sn, from the oracle (samplecases.go).
		cs = append(cs, envelopeSamples(op, p, append([]string{device.FieldAPIKey, device.FieldTimestamp}, hexFields...))...)
		if op == device.SendMessage {
			// CONTRACT 1: one second inside and outside the window, both ways.
			for _, w := range oracle.WindowEdges(300 * time.Second) {
				want := expect{contractOK: true, status: 200}
				if !w.OK {
					want = expect{status: 401, codes: []string{device.CodeStaleTimestamp}, field: device.FieldTimestamp}
				}
				slug := w.Slug
				add("timestamp."+slug, "a timestamp "+w.Title, "5", func(e *Env, c *call, _ device.Format, _ string) string {
					win := e.Fleet.Window()
					if win == 0 {
						return "the fleet disables the timestamp window"
					}
					for _, x := range oracle.WindowEdges(win) {
						if x.Slug == slug {
							// Send early in a second, so that the second
							// the timestamp names is the one meant.
							time.Sleep(oracle.Aligned(e.Now()))
							c.set(device.FieldTimestamp, e.Now().Truncate(time.Second).Add(x.Offset).In(e.Location).Format(oracle.TimestampLayout))
						}
					}
					return ""
				}, want, "auth", "boundary")
			}
		}
		window := func(d time.Duration) func(*Env, *call, device.Format, string) string {
			return func(e *Env, c *call, _ device.Format, _ string) string {
				w := e.Fleet.Window()
				if w == 0 {
					return "the fleet disables the timestamp window"
				}
				off := w * time.Duration(d) / 100 // d is a percentage of the window
				c.set(device.FieldTimestamp, e.Now().Add(off).In(e.Location).Format(oracle.TimestampLayout))
				return ""
			}
		}
		// CONTRACT 1: the window holds both ways; inside it, past and future
		// are valid.
		add("timestamp.past-inside-window", "a timestamp half the window in the past", "5", window(-50), expect{contractOK: true, status: 200}, "auth")
		add("timestamp.future-inside-window", "a timestamp half the window in the future", "5", window(50), expect{contractOK: true, status: 200}, "auth")
		add("timestamp.future", "a timestamp one day ahead", "5", func(e *Env, c *call, _ device.Format, _ string) string {
			if e.Fleet.Window() == 0 {
				return "the fleet disables the timestamp window"
			}
			c.set(device.FieldTimestamp, e.Now().Add(24*time.Hour).In(e.Location).Format(oracle.TimestampLayout))
			return ""
		}, expect{status: 401, codes: []string{device.CodeStaleTimestamp}, field: device.FieldTimestamp}, "auth")
		stale := expect{status: 401, codes: []string{device.CodeStaleTimestamp}, field: device.FieldTimestamp}
		add("timestamp.stale", "a timestamp one day old", "5", func(e *Env, c *call, _ device.Format, _ string) string {
			if e.Fleet.Window() == 0 {
				return "the fleet disables the timestamp window"
			}
			c.set(device.FieldTimestamp, e.Now().Add(-24*time.Hour).In(e.Location).Format(oracle.TimestampLayout))
			return ""
		}, stale, "auth")
		add("sign.wrong", "a well-formed sign that does not match", "5", func(e *Env, c *call, _ device.Format, _ string) string {
			if !e.KnownSign {
				return "the fleet's sign scheme cannot tell a wrong sign (sign: format or off)"
			}
			c.keepSign = true
			c.set(device.FieldSign, "0123456789abcdef0123456789abcdef")
			return ""
		}, expect{must: true, status: 401, codes: []string{device.CodeBadSignature}, field: device.FieldSign}, "auth")
		add("api_key.unknown", "an api_key that was never issued", "5", func(e *Env, c *call, _ device.Format, id string) string {
			c.set(device.FieldAPIKey, "unknown-"+e.faker(id).LetterN(12))
			return ""
		}, expect{must: true, status: 401, codes: []string{device.CodeUnknownAPIKey}, field: device.FieldAPIKey}, "auth")
		add("myservice_id.other-account", "the myservice_id of another account", "5", func(e *Env, c *call, _ device.Format, _ string) string {
			if e.Target.OtherAccount == "" {
				return "the fleet has a single account"
			}
			c.set(device.FieldAccount, e.Target.OtherAccount)
			return ""
		}, expect{must: true, status: 403, codes: []string{device.CodeAccountMismatch}, field: device.FieldAccount}, "auth")
		add("mac.unknown", "a gateway the account does not have", "2.1", func(e *Env, c *call, _ device.Format, id string) string {
			c.set(device.FieldMAC, hexN(e.faker(id), 12))
			return ""
		}, expect{status: 404, codes: []string{device.CodeGatewayNotFound}, field: device.FieldMAC})
		if op != device.SendMessage {
			add("sn.unknown", "a device the gateway does not have", "2.2", func(e *Env, c *call, _ device.Format, id string) string {
				c.set(device.FieldSN, hexN(e.faker(id), 32))
				return ""
			}, expect{status: 404, codes: []string{device.CodeDeviceNotFound}, field: device.FieldSN})
		}
	}
	return cs
}

func hexN(fk *gofakeit.Faker, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[fk.Number(0, 15)]
	}
	return string(b)
}

// operationCases change one operation field of each operation.
func operationCases() []Case {
	var cs []Case
	cmd := func(id, title, section, contract string, change func(*Env, *call, device.Format, string) string, w expect) {
		cs = append(cs, Case{ID: "command." + id, Op: device.SendCommand, Title: "a command " + title, Section: section,
			Contract: contract, Build: onOp(device.SendCommand, change), Want: w, Tags: []string{"edge"}})
	}
	cmd("type.missing", "without type", "4.1", "2", func(_ *Env, c *call, _ device.Format, _ string) string {
		c.drop(device.FieldType)
		return ""
	}, missingField(device.FieldType))
	cmd("device_id.differs", "whose device_id names another device than sn", "2.2", "2",
		func(e *Env, c *call, _ device.Format, id string) string {
			c.set(device.FieldDeviceID, hexN(e.faker(id), 32))
			return ""
		}, expect{status: 400, codes: []string{device.CodeInvalidField}, field: device.FieldDeviceID})

	msg := func(id, title string, change func(*Env, *call, device.Format, string) string, w expect) {
		cs = append(cs, Case{ID: "message." + id, Op: device.SendMessage, Title: "a message " + title, Section: "2.4",
			Contract: "3", Build: onOp(device.SendMessage, change), Want: w, Tags: []string{"edge"}})
	}
	for _, name := range []string{device.FieldMessageType, device.FieldMessageValue} {
		n := name
		msg(n+".missing", "without "+n, func(_ *Env, c *call, _ device.Format, _ string) string {
			c.drop(n)
			return ""
		}, missingField(n))
	}
	msg("message_value.drawn", "whose message_value is a setting drawn from the run's seed",
		func(e *Env, c *call, _ device.Format, id string) string {
			c.set(device.FieldMessageValue, drawMessageValue(e.faker(id)))
			return ""
		}, expect{ok: true, status: 200})

	name := func(id, title, contract string, change func(*Env, *call, device.Format, string) string, w expect) {
		cs = append(cs, Case{ID: "update_name." + id, Op: device.UpdateName, Title: "an update_name " + title, Section: "4.3",
			Contract: contract, Build: onOp(device.UpdateName, change), Want: w, Tags: []string{"edge"}})
	}
	name("name.missing", "without name", "3", func(_ *Env, c *call, _ device.Format, _ string) string {
		c.drop(device.FieldName)
		return ""
	}, missingField(device.FieldName))
	name("name.drawn", "with a name drawn from the run's seed", "3", func(e *Env, c *call, _ device.Format, id string) string {
		c.set(device.FieldName, drawName(e.faker(id)))
		return ""
	}, expect{ok: true, status: 200})
	name("name.unicode", "with a name in another script", "3", setTo(device.FieldName, "Küche Licht 台所"),
		expect{contractOK: true, status: 200})
	// A command that carries one field of its type (CONTRACT 3: at least
	// one; the others keep their value).
	for _, t := range oracle.Types {
		if len(t.Fields) < 2 {
			continue
		}
		first := t.Fields[0].Name
		cs = append(cs, Case{ID: "command." + check.Slug(t.Name) + ".one-field", Op: device.SendCommand, Type: t.Name, Section: "4.1",
			Contract: "3", Title: "a " + t.Name + " command with " + first + " alone", Want: expect{contractOK: true, status: 200},
			Tags: []string{"form"}, Build: commandOn(t.Name, func(_ *Env, c *call, _ device.Format, _ string) string {
				c.keep(device.FieldSN, device.FieldType, first)
				return ""
			})})
	}
	return append(cs, operationSamples()...)
}
