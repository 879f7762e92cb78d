package conformance

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/brianvoe/gofakeit/v6"

	"github.com/gwdmi/gwtools/conformance/check"
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

// valueSlug turns a value into an ID part.
func valueSlug(v string) string {
	if v == "" {
		return "empty"
	}
	s := check.Slug(v)
	if s == "" {
		return "x" + strconv.Itoa(len(v))
	}
	return s
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

// valueCases are every allowed value and boundary of every field of every
// type, and the invalid classes of each field.
func valueCases() []Case {
	var cs []Case
	for _, t := range device.Types {
		for _, f := range t.Fields {
			cs = append(cs, fieldCases(t, f)...)
		}
		cs = append(cs, typeCases(t)...)
	}
	cs = append(cs, Case{
		ID: "command.unknown-type", Op: device.SendCommand, Title: "a command whose type is Toaster", Section: "2.3", Contract: "2",
		Build: onOp(device.SendCommand, setTo(device.FieldType, "Toaster")), Want: invalidField(device.FieldType),
	})
	return cs
}

func fieldCases(t *device.Type, f device.Field) []Case {
	base := "command." + check.Slug(t.Name) + "." + check.Slug(f.Name)
	valid := func(slug, title, value string, tags ...string) Case {
		return Case{ID: base + "." + slug, Op: device.SendCommand, Type: t.Name, Section: "2.3", Contract: "3",
			Title: fmt.Sprintf("a %s command with %s %s", t.Name, f.Name, title),
			Build: commandOn(t.Name, setTo(f.Name, value)), Want: expect{ok: true, status: 200},
			Field: f.Name, Value: value, Tags: append([]string{"value"}, tags...)}
	}
	bad := func(slug, title, value string, must bool) Case {
		w := invalidField(f.Name)
		w.must = must
		return Case{ID: base + "." + slug, Op: device.SendCommand, Type: t.Name, Section: "2.3", Contract: "3",
			Title: fmt.Sprintf("a %s command with %s %s", t.Name, f.Name, title),
			Build: commandOn(t.Name, setTo(f.Name, value)), Want: w, Field: f.Name, Tags: []string{"edge"}}
	}
	var cs []Case
	switch f.Kind {
	case device.Enum:
		for _, v := range f.Values {
			cs = append(cs, valid(valueSlug(v), v, v))
			// CONTRACT 2: any letter case, stored in the canonical case.
			lower, upper := strings.ToLower(v), strings.ToUpper(v)
			cs = append(cs, should(valid(valueSlug(v)+".lower-case", `"`+lower+`" (lower case)`, lower, "letter-case")),
				should(valid(valueSlug(v)+".upper-case", `"`+upper+`" (upper case)`, upper, "letter-case")))
		}
		cs = append(cs, bad("not-allowed", `"Maybe" (not one of `+strings.Join(f.Values, ", ")+")", "Maybe", true))
		cs = append(cs, bad("empty", "empty", "", true))
	case device.Integer:
		lo, hi := int(f.Min), int(f.Max)
		if hi-lo <= 4 {
			for v := lo; v <= hi; v++ {
				cs = append(cs, valid(strconv.Itoa(v), strconv.Itoa(v), strconv.Itoa(v)))
			}
		} else {
			cs = append(cs, valid(strconv.Itoa(lo), strconv.Itoa(lo)+" (lowest)", strconv.Itoa(lo)),
				valid(strconv.Itoa(hi), strconv.Itoa(hi)+" (highest)", strconv.Itoa(hi)))
			drawn := valid("drawn", "drawn from the run's seed", "")
			drawn.Build = commandOn(t.Name, func(e *Env, c *call, _ device.Format, id string) string {
				c.set(f.Name, drawInteger(e.faker(id), &f))
				return ""
			})
			cs = append(cs, drawn)
		}
		if lo-1 != 0 {
			cs = append(cs, bad("zero", "0", "0", true))
		}
		if lo-1 != -1 {
			cs = append(cs, bad("negative", "-1 (negative)", "-1", true))
		}
		cs = append(cs,
			bad(strconv.Itoa(lo-1), strconv.Itoa(lo-1)+" (below the range)", strconv.Itoa(lo-1), true),
			bad(strconv.Itoa(hi+1), strconv.Itoa(hi+1)+" (above the range)", strconv.Itoa(hi+1), true),
			bad("fraction", `"`+strconv.Itoa(lo)+`.5" (not an integer)`, strconv.Itoa(lo)+".5", true),
			bad("not-a-number", `"abc"`, "abc", true),
		)
		num := valid("json-number", "as a JSON number", strconv.Itoa(hi), "json-number")
		num.Formats, num.Section = []device.Format{device.JSON}, "2.3"
		num.Build = commandOn(t.Name, func(_ *Env, c *call, _ device.Format, _ string) string {
			c.setNum(f.Name, strconv.Itoa(hi))
			return ""
		})
		cs = append(cs, should(num))
	case device.Decimal:
		drawn := valid("drawn", "a decimal drawn from the run's seed", "")
		drawn.Build = commandOn(t.Name, func(e *Env, c *call, _ device.Format, id string) string {
			c.set(f.Name, drawDecimal(e.faker(id), &f))
			return ""
		})
		lo, hi := strconv.FormatFloat(f.Min, 'f', -1, 64), strconv.FormatFloat(f.Max, 'f', -1, 64)
		// The range is the CONTRACT's (3): its edges are SHOULD, and so is
		// one step (0.1) outside.
		cs = append(cs,
			should(valid("lowest", lo+" (the lowest)", lo)), should(valid("highest", hi+" (the highest)", hi)),
			valid("zero", "0", "0"), valid("negative", `"-5.5" (negative)`, "-5.5"),
			bad("below-by-a-tenth", strconv.FormatFloat(f.Min-0.1, 'f', 1, 64)+" (0.1 below the range)", strconv.FormatFloat(f.Min-0.1, 'f', 1, 64), false),
			bad("above-by-a-tenth", strconv.FormatFloat(f.Max+0.1, 'f', 1, 64)+" (0.1 above the range)", strconv.FormatFloat(f.Max+0.1, 'f', 1, 64), false),
		)
		cs = append(cs, valid("integer", `"21" (a whole number)`, "21"), drawn,
			bad("not-a-number", `"warm"`, "warm", true),
			bad("nan", `"NaN"`, "NaN", true),
			bad("too-low", `"-51" (below -50 °C)`, "-51", false),
			bad("too-high", `"101" (above 100 °C)`, "101", false),
			bad("exponent", `"2.1e1" (exponent notation)`, "2.1e1", false),
		)
		num := valid("json-number", "as a JSON number 22.5", "22.5", "json-number")
		num.Formats = []device.Format{device.JSON}
		num.Build = commandOn(t.Name, func(_ *Env, c *call, _ device.Format, _ string) string {
			c.setNum(f.Name, "22.5")
			return ""
		})
		cs = append(cs, should(num))
	case device.Text:
		cs = append(cs, valid(valueSlug(f.Example), f.Example, f.Example),
			bad("empty", "empty", "", false),
			bad("too-long", fmt.Sprintf("of %d characters", f.MaxLen+1), strings.Repeat("n", f.MaxLen+1), false))
	}
	return cs
}

// should marks a valid case as valid only by the CONTRACT: its success is
// a SHOULD.
func should(c Case) Case {
	c.Want = expect{contractOK: true, status: 200}
	return c
}

func typeCases(t *device.Type) []Case {
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
	var foreign *device.Field
	for _, o := range device.Types {
		for i := range o.Fields {
			if _, _, own := t.Field(o.Fields[i].Name); !own && foreign == nil {
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
			for _, o := range device.Types {
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

func sameFields(a, b *device.Type) bool {
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
		for _, name := range hexFields {
			n := name
			section := "2.1"
			if n == device.FieldSN {
				section = "2.2"
			}
			n0 := n
			keep := n == device.FieldSign
			add(n+".short", n+" cut short by one character", section, func(_ *Env, c *call, _ device.Format, _ string) string {
				v := c.get(n0)
				c.set(n0, v[:len(v)-1])
				c.keepSign = keep
				return ""
			}, invalidField(n))
			add(n+".long", n+" one character too long", section, func(_ *Env, c *call, _ device.Format, _ string) string {
				c.set(n0, c.get(n0)+"0")
				c.keepSign = keep
				return ""
			}, invalidField(n))
			add(n+".not-hex", n+" with a character that is not hexadecimal", section, func(_ *Env, c *call, _ device.Format, _ string) string {
				v := c.get(n0)
				c.set(n0, v[:len(v)-1]+"g")
				c.keepSign = keep
				return ""
			}, invalidField(n))
		}
		for _, name := range hexFields {
			n := name
			section := "2.1"
			if n == device.FieldSN {
				section = "2.2"
			}
			// CONTRACT 2: hex fields in either case.
			cs = append(cs, Case{ID: p + n + ".upper-case", Op: op, Title: "a " + op.Name() + " request with " + n + " in upper case",
				Section: section, Contract: "2", Tags: []string{"envelope", "letter-case"}, Want: expect{contractOK: true, status: 200},
				Build: onOp(op, func(e *Env, c *call, f device.Format, _ string) string {
					if n == device.FieldSign {
						if skip := e.signAs(c, f, e.Target.Key); skip != "" {
							return skip
						}
					}
					c.set(n, strings.ToUpper(c.get(n)))
					return ""
				})})
		}
		window := func(d time.Duration) func(*Env, *call, device.Format, string) string {
			return func(e *Env, c *call, _ device.Format, _ string) string {
				w := e.Fleet.Window()
				if w == 0 {
					return "the fleet disables the timestamp window"
				}
				off := w * time.Duration(d) / 100 // d is a percentage of the window
				c.set(device.FieldTimestamp, e.Now().Add(off).In(e.Location).Format(device.TimestampLayout))
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
			c.set(device.FieldTimestamp, e.Now().Add(24*time.Hour).In(e.Location).Format(device.TimestampLayout))
			return ""
		}, expect{status: 401, codes: []string{device.CodeStaleTimestamp}, field: device.FieldTimestamp}, "auth")
		add("timestamp.13-digits", "a 13-digit timestamp", "5", func(_ *Env, c *call, _ device.Format, _ string) string {
			v := c.get(device.FieldTimestamp)
			c.set(device.FieldTimestamp, v[:13])
			return ""
		}, invalidField(device.FieldTimestamp))
		add("timestamp.15-digits", "a 15-digit timestamp", "5", func(_ *Env, c *call, _ device.Format, _ string) string {
			c.set(device.FieldTimestamp, c.get(device.FieldTimestamp)+"0")
			return ""
		}, invalidField(device.FieldTimestamp))
		add("timestamp.month-13", "a timestamp in month 13", "5", func(_ *Env, c *call, _ device.Format, _ string) string {
			v := c.get(device.FieldTimestamp)
			c.set(device.FieldTimestamp, v[:4]+"13"+v[6:])
			return ""
		}, invalidField(device.FieldTimestamp))
		stale := expect{status: 401, codes: []string{device.CodeStaleTimestamp}, field: device.FieldTimestamp}
		add("timestamp.stale", "a timestamp one day old", "5", func(e *Env, c *call, _ device.Format, _ string) string {
			if e.Fleet.Window() == 0 {
				return "the fleet disables the timestamp window"
			}
			c.set(device.FieldTimestamp, e.Now().Add(-24*time.Hour).In(e.Location).Format(device.TimestampLayout))
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
	cmd("format.other", "whose format field names the other format", "4", "2",
		func(_ *Env, c *call, f device.Format, _ string) string {
			other := map[device.Format]string{device.JSON: "xml", device.XML: "json"}[f]
			c.set(device.FieldFormat, other)
			return ""
		}, expect{status: 400, codes: []string{device.CodeInvalidField}, field: device.FieldFormat})
	cmd("format.unknown", "whose format field is yaml", "4", "2", setTo(device.FieldFormat, "yaml"),
		expect{status: 400, codes: []string{device.CodeInvalidField}, field: device.FieldFormat})

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
	for _, v := range []struct{ slug, value, title string }{
		{"no-equals", "brightness", "brightness (no =)"},
		{"no-name", "=80", "=80 (no setting name)"},
		{"not-a-number", "brightness=high", "brightness=high (not a number)"},
		{"empty", "", "empty"},
	} {
		msg("message_value."+v.slug, "whose message_value is "+v.title, setTo(device.FieldMessageValue, v.value),
			invalidField(device.FieldMessageValue))
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
	name("name.empty", "with an empty name", "3", setTo(device.FieldName, ""),
		expect{status: 400, codes: []string{device.CodeInvalidField}, field: device.FieldName})
	name("name.too-long", fmt.Sprintf("with a name of %d characters", device.MaxNameLen+1), "3",
		setTo(device.FieldName, strings.Repeat("n", device.MaxNameLen+1)),
		expect{status: 400, codes: []string{device.CodeInvalidField}, field: device.FieldName})
	name("name.control-character", "with a tab in the name", "3", setTo(device.FieldName, "Hall\tLight"),
		expect{status: 400, codes: []string{device.CodeInvalidField}, field: device.FieldName})
	name("name.drawn", "with a name drawn from the run's seed", "3", func(e *Env, c *call, _ device.Format, id string) string {
		c.set(device.FieldName, drawName(e.faker(id)))
		return ""
	}, expect{ok: true, status: 200})
	name("name.unicode", "with a name in another script", "3", setTo(device.FieldName, "Küche Licht 台所"),
		expect{contractOK: true, status: 200})
	return cs
}
