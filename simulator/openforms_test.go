package simulator_test

import (
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// openCase is one open form of the harness's rule table as a request.
type openCase struct {
	name   string
	op     device.Operation
	format device.Format
	body   func(c *simtest.Client) []byte
}

// openCases are every open form of the rule table (each field's
// Field.OpenForms, and the body forms JudgeRequest calls open), each in
// the formats that can carry it.
func openCases(t *testing.T) []openCase {
	var cs []openCase
	dimmer := simtest.SN('a', 5) // the test fleet's Light Dimmer (device.Types order)
	if device.Types[5].Name != "Light Dimmer" {
		t.Fatal("the test fleet's sixth type is not the Light Dimmer")
	}
	add := func(name string, op device.Operation, s oracle.Sample, fields func(c *simtest.Client, f device.Format) []simtest.F, key func(f device.Format) string) {
		for _, f := range []device.Format{device.JSON, device.XML} {
			if s.Value.JSONOnly() && f != device.JSON {
				continue
			}
			f := f
			cs = append(cs, openCase{name: name + "." + s.Slug + "." + f.String(), op: op, format: f, body: func(c *simtest.Client) []byte {
				fs := fields(c, f)
				v := simtest.S(key(f), s.Value.Raw)
				if s.Value.Kind == oracle.Number {
					v = simtest.N(key(f), s.Value.Raw)
				}
				return simtest.Body(f, simtest.Set(fs, v))
			}})
		}
	}
	for i, typ := range oracle.Types {
		for j := range typ.Fields {
			fd := &typ.Fields[j]
			base := fd.Example
			if fd.Kind == oracle.Enum {
				base = fd.Values[0]
			}
			sn, name := simtest.SN('a', i), typ.Name
			if device.Types[i].Name != name {
				t.Fatalf("device.Types[%d] is not %s", i, name)
			}
			for _, s := range fd.OpenForms(base) {
				add("command."+name+"."+fd.Name, device.SendCommand, s,
					func(c *simtest.Client, _ device.Format) []simtest.F { return c.Command(sn, name) }, fd.Wire)
			}
		}
	}
	for _, s := range oracle.TypeField.OpenForms("Light Dimmer") {
		add("command.type", device.SendCommand, s, func(c *simtest.Client, _ device.Format) []simtest.F {
			return c.Command(dimmer, "Light Dimmer", simtest.S("dimming", "50"))
		}, func(device.Format) string { return device.FieldType })
	}
	for _, s := range oracle.FormatField.OpenForms("json") {
		s.Value = oracle.Str(strings.ToUpper(s.Value.Raw))
		for _, f := range []device.Format{device.JSON, device.XML} {
			f := f
			cs = append(cs, openCase{name: "message.format." + s.Slug + "." + f.String(), op: device.SendMessage, format: f,
				body: func(c *simtest.Client) []byte {
					return simtest.Body(f, append(c.Envelope(), simtest.S("message_type", "message"), simtest.S("message_value", "a=1"),
						simtest.S(device.FieldFormat, strings.ToUpper(f.String()))))
				}})
		}
	}
	msg := func(c *simtest.Client, _ device.Format) []simtest.F {
		return append(c.Envelope(), simtest.S("message_type", "message"), simtest.S("message_value", "brightness=80"))
	}
	for _, fd := range []*oracle.Field{&oracle.MessageType, &oracle.MessageValue} {
		name := fd.Name
		for _, s := range fd.OpenForms(fd.Example) {
			add("message."+name, device.SendMessage, s, msg, func(device.Format) string { return name })
		}
	}
	// The timestamp's open form (second 60) is derived from the
	// timestamp sent, and signed with it.
	for _, f := range []device.Format{device.JSON, device.XML} {
		f := f
		cs = append(cs, openCase{name: "message.timestamp.second-60." + f.String(), op: device.SendMessage, format: f,
			body: func(c *simtest.Client) []byte {
				env := c.Envelope()
				ts := env[1].Val
				var open string
				for _, s := range oracle.TimestampF.OpenForms(ts) {
					open = s.Value.Raw
				}
				if open == "" {
					t.Fatal("the timestamp has no open form")
				}
				env = simtest.Set(env, simtest.S(device.FieldTimestamp, open))
				env = simtest.Set(env, simtest.S(device.FieldSign, signOf(c, open)))
				return simtest.Body(f, append(env, simtest.S("message_type", "message"), simtest.S("message_value", "a=1")))
			}})
	}
	// The body's open forms (oracle.OpenBodyForms).
	for _, b := range oracle.OpenBodyForms() {
		b := b
		cs = append(cs, openCase{name: "message.body." + b.Slug, op: device.SendMessage, format: b.Format, body: func(c *simtest.Client) []byte {
			body := []byte(b.Edit(string(simtest.Body(b.Format, msg(c, b.Format)))))
			_, _, v := oracle.JudgeRequest(device.SendMessage, oracle.Request{Method: "POST", ContentType: simtest.ContentType(b.Format), Body: body})
			if !v.Open {
				t.Errorf("%s: the rule table does not call it open: %+v (%s)", b.Slug, v, body)
			}
			return body
		}})
	}
	return cs
}

// TestOpenFormsBothWays: every open form of the harness's rule table is
// refused by gwsim's default (--open-forms refuse) and accepted with
// --open-forms accept, through real HTTP, in each format that carries
// it; a form the table refuses stays refused in both modes.
func TestOpenFormsBothWays(t *testing.T) {
	cases := openCases(t)
	t.Logf("%d open forms", len(cases))
	if len(cases) < 80 {
		t.Fatalf("only %d open forms", len(cases))
	}
	for _, mode := range []device.OpenForms{device.RefuseOpen, device.AcceptOpen} {
		sim := simtest.Start(t, simulator.Options{OpenForms: mode})
		c := sim.Client
		for _, oc := range cases {
			r := c.Post(oc.op.Path(), simtest.ContentType(oc.format), oc.body(c))
			if accepted := r.Status == 200; accepted != (mode == device.AcceptOpen) {
				t.Errorf("--open-forms %s: %s: %s (%s)", mode, oc.name, r, r.Sent)
			}
		}
		// What the table refuses, gwsim refuses in either mode.
		for _, v := range []string{"0x15", "21.5C", "NaN", "--21", "21.5.1"} {
			r := c.Send(device.SendCommand, device.XML, c.Command(simtest.SN('a', 3), "Thermostat", simtest.S("cooling_point", v)))
			if r.Status != 400 || r.Code != device.CodeInvalidField {
				t.Errorf("--open-forms %s: cooling_point %q: %s", mode, v, r)
			}
		}
	}
}

// signOf is the md5 sign of the client's key for timestamp ts.
func signOf(c *simtest.Client, ts string) string { return auth.Sign(c.APIKey, c.Secret, ts) }
