package checks

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/brianvoe/gofakeit/v6"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// The effect checks: what a request does, as the observer shows it. A
// case's own state check (.sim) sends the case's values, which may be what
// the device holds already; these send values that differ from what the
// observer shows before, so that a target that answers success and changes
// nothing, or changes the wrong thing, cannot pass. The effect of a valid
// request follows from the published interface (MUST); what only the
// CONTRACT says (letter case, trimming, absent fields, a refused request
// changes nothing) is a SHOULD. All carry the tags sim and effect (as the
// cases' own state checks do: they read the observer), and without an
// observer they are skipped with the one line of NotObservedPrefix.

// The effect checks, after the probes (family).
var _ = declares(400, (*Suite).declareEffects)

// declareEffects declares every effect check: those about each device
// type, then those about a gateway and the rest of the fleet, each in
// every format.
func (env *Suite) declareEffects() {
	effectFormats := []device.Format{device.JSON, device.XML}
	// The types and their fields are the harness's own rule table's
	// (oracle), never the simulator's.
	for _, t := range oracle.Types {
		for _, f := range effectFormats {
			env.declareTypeEffects(t, f)
		}
	}
	for _, f := range effectFormats {
		env.declareGatewayEffects(f)
	}
}

// declareTypeEffects declares the effect checks of a command and a rename
// to the fleet's device of type t, in format f.
func (env *Suite) declareTypeEffects(t *oracle.Type, f device.Format) {
	env.commandEffect(t, f, "applied", check.Must, "", "a "+t.Name+" command that changes every field is applied field by field",
		"A "+t.Name+" command accepted with values other than the device's MUST leave each field as sent, the name as it was, and every other device and gateway's messages as they were, as the observer shows (CONTRACT 7).",
		env.commandApplied)
	if len(t.Fields) > 1 {
		env.commandEffect(t, f, "absent-kept", check.Should, "3", "a "+t.Name+" command with one field leaves the others as they were",
			"A "+t.Name+" command that carries only "+t.Fields[0].Name+" SHOULD set it and leave every field it does not carry, and every other device and gateway's messages, as they were (CONTRACT 3).",
			env.commandAbsentKept)
		env.commandEffect(t, f, "refused-partly-invalid", check.Should, "3", "a "+t.Name+" command with one invalid field among changed ones changes nothing",
			"A "+t.Name+" command that changes every field but gives "+t.Fields[len(t.Fields)-1].Name+" a value outside its published ones MUST NOT be answered with success, and SHOULD leave every field, and every other device and gateway's messages, as they were (CONTRACT 3).",
			env.commandPartlyInvalid)
	}
	env.commandEffect(t, f, "refused-bad-sign", check.Should, "3", "a "+t.Name+" command with a wrong sign changes nothing",
		"A "+t.Name+" command that changes every field but carries a well-formed wrong sign MUST NOT be answered with success, and SHOULD leave the device, and every other device and gateway's messages, as they were (CONTRACT 3).",
		env.commandBadSign)
	if enum := firstEnum(t); enum != nil {
		env.commandEffect(t, f, "enum-case", check.Should, "2", "a "+t.Name+" command with "+enum.Name+" in lower case is stored in its published case",
			"A "+t.Name+" command with "+enum.Name+" in lower case SHOULD be accepted, the observer SHOULD show the value in the case of the published table (CONTRACT 2), and every other device and gateway's messages as they were.",
			env.commandEnumCase)
	}
	env.declareNameStored(t, f)
}

// commandBody is what an effect check of a command does with the fleet's
// device d of type t, in format f, drawing its values from fk.
type commandBody func(ctx context.Context, t *oracle.Type, f device.Format, d fleet.Device, fk *gofakeit.Faker)

// commandEffect declares the effect check kind of a command to the
// fleet's device of type t, in format f. It reads, around its request,
// every other place of the fleet the command could land (landing.go).
func (env *Suite) commandEffect(t *oracle.Type, f device.Format, kind string, level check.Level, contract, title, assertion string, body commandBody) {
	id := "effect.command." + check.Slug(t.Name) + "." + kind + "." + f.String()
	env.effect(id, level, "4.1", contract, device.SendCommand, false, f, t.Name, title, assertion, func(ctx context.Context) {
		d, ok := env.Device(t.Name)
		if !ok {
			trial.From(ctx).Skip("the fleet has no " + t.Name + " on the tested gateway: not covered")
		}
		ctx, w := env.watchLandings(ctx, false, devRef{env.Target.MAC, d.SN})
		body(ctx, t, f, d, env.Faker(id))
		w.expectKept(ctx, env, "what the check sent to "+t.Name+" "+d.SN+" of gateway "+env.Target.MAC)
	})
}

// commandApplied sends a command that changes every field of d and
// expects each field as sent and the name as it was.
func (env *Suite) commandApplied(ctx context.Context, t *oracle.Type, f device.Format, d fleet.Device, fk *gofakeit.Faker) {
	before := env.mustRead(ctx, env.Target.MAC, d.SN)
	c, sent := env.changedCommand(d, t, before, fk)
	r := env.sendEffect(ctx, c, f)
	trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "a valid command was not accepted: %s", link.Describe(r))
	after := env.readSettled(ctx, env.Target.MAC, d.SN)
	expectFields(ctx, t, before, after, sent, false)
	trial.From(ctx).Expect(after.Name).To(gomega.Equal(before.Name), "the command changed the device's name")
}

// commandAbsentKept sends a command that carries the type's first field
// alone, changed, and expects it set and every other field as it was.
func (env *Suite) commandAbsentKept(ctx context.Context, t *oracle.Type, f device.Format, d fleet.Device, fk *gofakeit.Faker) {
	before := env.mustRead(ctx, env.Target.MAC, d.SN)
	c := env.Base(device.SendCommand, d.SN, t.Name)
	c.Keep(device.FieldSN, device.FieldType)
	fd := &t.Fields[0]
	v := otherValue(fd, before.State[fd.Name], fk)
	c.Set(fd.Name, v)
	r := env.sendEffect(ctx, c, f)
	trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "a command with one field was not accepted: %s", link.Describe(r))
	after := env.readSettled(ctx, env.Target.MAC, d.SN)
	expectFields(ctx, t, before, after, map[string]string{fd.Name: v}, false)
}

// commandPartlyInvalid sends a command that changes every field but gives
// the type's last field an invalid value, and expects it refused and the
// device as it was.
func (env *Suite) commandPartlyInvalid(ctx context.Context, t *oracle.Type, f device.Format, d fleet.Device, fk *gofakeit.Faker) {
	env.expectRefusedUnchanged(ctx, f, d, func(before observer.Device) catalog.Call {
		c, _ := env.changedCommand(d, t, before, fk)
		last := &t.Fields[len(t.Fields)-1]
		c.Set(last.Name, invalidValue(last))
		return c
	})
}

// commandBadSign sends a command that changes every field under a
// well-formed wrong sign, and expects it refused and the device as it
// was; a sign scheme that cannot tell a wrong sign skips it.
func (env *Suite) commandBadSign(ctx context.Context, t *oracle.Type, f device.Format, d fleet.Device, fk *gofakeit.Faker) {
	if !env.KnownSign {
		trial.From(ctx).Skip("the fleet's sign scheme cannot tell a wrong sign (sign: format or off)")
	}
	env.expectRefusedUnchanged(ctx, f, d, func(before observer.Device) catalog.Call {
		c, _ := env.changedCommand(d, t, before, fk)
		c.KeepSign = true
		c.Set(device.FieldSign, catalog.WrongSign)
		c.Tamper = &client.Tamper{Sign: catalog.WrongSign}
		return c
	})
}

// commandEnumCase sends a command that changes every field, the type's
// first enumerated one in lower case, and expects each field as sent in
// the case of the published table.
func (env *Suite) commandEnumCase(ctx context.Context, t *oracle.Type, f device.Format, d fleet.Device, fk *gofakeit.Faker) {
	enum := firstEnum(t)
	before := env.mustRead(ctx, env.Target.MAC, d.SN)
	c, sent := env.changedCommand(d, t, before, fk)
	c.Set(enum.Name, strings.ToLower(sent[enum.Name]))
	r := env.sendEffect(ctx, c, f)
	trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "the command was not accepted: %s", link.Describe(r))
	after := env.readSettled(ctx, env.Target.MAC, d.SN)
	expectFields(ctx, t, before, after, sent, true)
}

// declareNameStored declares the check that a new name of the fleet's
// device of type t is stored and its state kept, in format f.
func (env *Suite) declareNameStored(t *oracle.Type, f device.Format) {
	id := "effect.update_name." + check.Slug(t.Name) + ".stored." + f.String()
	env.effect(id, check.Must, "4.3", "", device.UpdateName, false, f, t.Name, "a new name of a "+t.Name+" is stored and its state kept",
		"An update_name of a "+t.Name+" accepted with a new name MUST leave that name, the device's state as it was, and every other device and gateway's messages as they were, as the observer shows (CONTRACT 7).",
		func(ctx context.Context) {
			d, ok := env.Device(t.Name)
			if !ok {
				trial.From(ctx).Skip("the fleet has no " + t.Name + " on the tested gateway: not covered")
			}
			ctx, w := env.watchLandings(ctx, false, devRef{env.Target.MAC, d.SN})
			before := env.mustRead(ctx, env.Target.MAC, d.SN)
			name := effectName(env.Faker(id), before.Name)
			c := env.Base(device.UpdateName, d.SN, t.Name)
			c.Set(device.FieldName, name)
			r := env.sendEffect(ctx, c, f)
			trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "a valid update_name was not accepted: %s", link.Describe(r))
			after := env.readSettled(ctx, env.Target.MAC, d.SN)
			trial.From(ctx).Expect(after.Name).To(gomega.Equal(name), "the name the observer shows after update_name")
			trial.From(ctx).Expect(observer.Values(after.State)).To(gomega.Equal(observer.Values(before.State)), "update_name changed the device's state")
			w.expectKept(ctx, env, "the rename of "+t.Name+" "+d.SN+" of gateway "+env.Target.MAC)
		})
}

// effectID is the ID of the effect check s in format f.
func effectID(s string, f device.Format) string { return "effect." + s + "." + f.String() }

// declareGatewayEffects declares the effect checks about a gateway and the
// rest of the fleet, in format f.
// Each draws its values from its own ID (Env.Faker), whatever ran before.
func (env *Suite) declareGatewayEffects(f device.Format) {
	env.declareTrimmedName(f)
	env.declareMessageStored(f)
	env.declareNamedGatewayMessage(f)
	env.declareOtherGatewayMessage(f)
	env.declareRefusedRenamesKept(f)
	if f == device.JSON {
		env.declareUnicodeEscapes(f)
	}
	env.declareMessageStateKept(f)
	for _, op := range []device.Operation{device.SendCommand, device.UpdateName} {
		env.declareIsolation(op, f)
	}
}

// declareTrimmedName declares the check that a name sent with spaces
// around it is stored trimmed; its name is drawn from its ID.
func (env *Suite) declareTrimmedName(f device.Format) {
	id := effectID("update_name.trimmed", f)
	env.effect(id, check.Should, "4.3", "3", device.UpdateName, false, f, "", "a name sent with spaces around it is stored trimmed",
		"An update_name whose name has spaces before and after it SHOULD be accepted, the observer SHOULD show the name trimmed (CONTRACT 3), and every other device and gateway's messages as they were.",
		func(ctx context.Context) {
			d := env.needAnyDevice(ctx)
			ctx, w := env.watchLandings(ctx, false, devRef{env.Target.MAC, d.SN})
			before := env.mustRead(ctx, env.Target.MAC, d.SN)
			name := effectName(env.Faker(id), before.Name)
			c := env.Base(device.UpdateName, d.SN, d.Type)
			c.Set(device.FieldName, "  "+name+"  ")
			r := env.sendEffect(ctx, c, f)
			trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "the update_name was not accepted: %s", link.Describe(r))
			after := env.readSettled(ctx, env.Target.MAC, d.SN)
			trial.From(ctx).Expect(after.Name).To(gomega.Equal(name), "the name the observer shows (sent with two spaces on each side)")
			w.expectKept(ctx, env, "the rename of "+d.Type+" "+d.SN+" of gateway "+env.Target.MAC)
		})
}

// declareMessageStored declares the check that a message is stored on the
// tested gateway, the newest of its messages; its value is drawn from
// its ID.
func (env *Suite) declareMessageStored(f device.Format) {
	id := effectID("message.stored", f)
	env.effect(id, check.Must, "4.2", "", device.SendMessage, false, f, "", "a message is stored on the gateway it names",
		"A message accepted for the tested gateway MUST be the newest of that gateway's messages, with its message_type and message_value, and leave every device and every other gateway's messages as they were, as the observer shows (CONTRACT 7).",
		func(ctx context.Context) {
			ctx, w := env.watchLandings(ctx, false, devRef{mac: env.Target.MAC})
			before := env.mustLog(ctx, env.Target.MAC)
			c := env.Base(device.SendMessage, "", "")
			v := effectMessage(env.Faker(id))
			c.Set(device.FieldMessageValue, v)
			r := env.sendEffect(ctx, c, f)
			trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "a valid message was not accepted: %s", link.Describe(r))
			after := env.logSettled(ctx, env.Target.MAC)
			w.expectStored(ctx, env, env.Target.MAC, before.GainedMessage(after, observer.Message{Type: "message", Value: v}))
		})
}

// declareNamedGatewayMessage declares the check that a message to another
// gateway of the tested account is stored there and nowhere else; its
// value is drawn from its ID.
func (env *Suite) declareNamedGatewayMessage(f device.Format) {
	id := effectID("message.named-gateway", f)
	env.effect(id, check.Must, "4.2", "", device.SendMessage, true, f, "", "a message to another gateway of the account is stored there and nowhere else",
		"A message accepted for a gateway of the tested account other than the tested one (and other than the account's first) MUST be the newest of that gateway's messages, with its message_type and message_value, and leave every device and every other gateway's messages as they were, as the observer shows (CONTRACT 7).",
		func(ctx context.Context) {
			mac := env.laterGateway()
			if mac == "" {
				trial.From(ctx).Skip("the tested account has no gateway other than the tested one: not covered")
			}
			ctx, w := env.watchLandings(ctx, true, devRef{mac: mac})
			before := env.mustLog(ctx, mac)
			c := env.Base(device.SendMessage, "", "")
			c.Set(device.FieldMAC, mac)
			v := effectMessage(env.Faker(id))
			c.Set(device.FieldMessageValue, v)
			r := env.sendEffect(ctx, c, f)
			trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "a valid message to gateway %s of the account was not accepted: %s", mac, link.Describe(r))
			after := env.logSettled(ctx, mac)
			w.expectStored(ctx, env, mac, before.GainedMessage(after, observer.Message{Type: "message", Value: v}))
		})
}

// declareOtherGatewayMessage declares the check that a message to the
// tested gateway appears among the messages of no other gateway of the
// fleet; its value is drawn from its ID.
func (env *Suite) declareOtherGatewayMessage(f device.Format) {
	id := effectID("message.other-gateway", f)
	env.effect(id, check.Must, "4.2", "", device.SendMessage, true, f, "", "a message to one gateway is stored on no other",
		"A message accepted for the tested gateway MUST NOT appear among the messages of any other gateway of the fleet, as the observer shows (CONTRACT 7).",
		func(ctx context.Context) {
			macs := env.otherGateways()
			if len(macs) == 0 {
				trial.From(ctx).Skip(catalog.SkipOneGateway)
			}
			before := map[string]observer.Log{}
			for _, mac := range macs {
				before[mac] = env.mustLog(ctx, mac)
			}
			c := env.Base(device.SendMessage, "", "")
			c.Set(device.FieldMessageValue, effectMessage(env.Faker(id)))
			r := env.sendEffect(ctx, c, f)
			trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "a valid message was not accepted: %s", link.Describe(r))
			// The message is on the tested gateway first (so that a late
			// one is not missed), then on no other.
			env.mustLog(ctx, env.Target.MAC)
			var wrong []string
			for _, mac := range macs {
				after := env.mustLog(ctx, mac)
				if !before[mac].Same(after) {
					wrong = append(wrong, fmt.Sprintf("gateway %s (%d messages before, %d after)", mac, before[mac].Total, after.Total))
				}
			}
			if len(wrong) > 0 {
				trial.From(ctx).Fail("a message to gateway " + env.Target.MAC + " changed the messages of " + strings.Join(wrong, "; "))
			}
		})
}

// declareRefusedRenamesKept declares the check that every rename refused
// for its name or its place in the fleet leaves the name of the device it
// names as it was.
func (env *Suite) declareRefusedRenamesKept(f device.Format) {
	env.effect(effectID("update_name.refused-kept", f), check.Should, "4.3", "3", device.UpdateName, true, f, "", "every refused rename leaves the name of the device it names as it was",
		"An update_name refused for its name (empty, 65 characters) or its place in the fleet (a device of another gateway, another account's key or gateway) MUST NOT be answered with success, and SHOULD leave the name of the device it names, and every other device and gateway's messages, as they were, as the observer shows (CONTRACT 3).",
		func(ctx context.Context) {
			d := env.needAnyDevice(ctx)
			ctl := env.control(ctx, env.Base(device.UpdateName, d.SN, d.Type), f)
			ctx, w := env.watchLandings(ctx, true, devRef{env.Target.MAC, d.SN})
			for _, rn := range env.refusedRenames(d, f) {
				if rn.skip != "" {
					continue
				}
				trial.From(ctx).By("a rename " + rn.what)
				before := env.mustRead(ctx, rn.mac, rn.sn)
				r := env.sendEffect(ctx, rn.c, f)
				trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeFalse(), "a rename %s was accepted: %s", rn.what, link.Describe(r))
				after := env.mustRead(ctx, rn.mac, rn.sn)
				trial.From(ctx).Expect(after.Name).To(gomega.Equal(before.Name), "the name of device %s after a refused rename %s", rn.sn, rn.what)
			}
			w.expectKept(ctx, env, "the refused renames")
			ctl.Conclude(ctx)
		})
}

// declareUnicodeEscapes declares the check that a JSON name written with
// \u escapes is stored as the text they spell; its name is drawn from
// its ID.
func (env *Suite) declareUnicodeEscapes(f device.Format) {
	id := effectID("update_name.unicode-escapes", f)
	env.effect(id, check.Must, "4.3", "", device.UpdateName, false, f, "", "a JSON name written with \\u escapes is stored as the text they spell",
		"An update_name whose JSON name is written with \\u escapes (RFC 8259 7) MUST be accepted and leave the name the escapes spell, and every other device and gateway's messages as they were, as the observer shows (CONTRACT 7).",
		func(ctx context.Context) {
			d := env.needAnyDevice(ctx)
			ctx, w := env.watchLandings(ctx, false, devRef{env.Target.MAC, d.SN})
			before := env.mustRead(ctx, env.Target.MAC, d.SN)
			name := "Caf\u00e9 " + effectName(env.Faker(id), before.Name)
			c := env.Base(device.UpdateName, d.SN, d.Type)
			c.Set(device.FieldName, name)
			plain, _ := json.Marshal(name)
			body := string(catalog.Encoded(&env.Bench, c, device.JSON))
			if !strings.Contains(body, string(plain)) {
				trial.From(ctx).Skip("the encoder did not write the name as expected: not covered")
			}
			var esc strings.Builder
			for _, r := range name {
				fmt.Fprintf(&esc, "\\u%04x", r)
			}
			raw := []byte(strings.Replace(body, string(plain), `"`+esc.String()+`"`, 1))
			c.Raw = func(device.Format) []byte { return raw }
			r := env.sendEffect(ctx, c, f)
			trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "an update_name with \\u escapes was not accepted: %s", link.Describe(r))
			after := env.readSettled(ctx, env.Target.MAC, d.SN)
			trial.From(ctx).Expect(after.Name).To(gomega.Equal(name), "the name the observer shows after a rename written %s", esc.String())
			w.expectKept(ctx, env, "the rename of "+d.Type+" "+d.SN+" of gateway "+env.Target.MAC)
		})
}

// declareMessageStateKept declares the check that a message leaves every
// device of the tested gateway as it was; its value is drawn from its ID.
func (env *Suite) declareMessageStateKept(f device.Format) {
	id := effectID("message.state-kept", f)
	env.effect(id, check.Must, "4.2", "", device.SendMessage, false, f, "", "a message leaves every device of the gateway as it was",
		"A message accepted for the tested gateway MUST leave the name and state of each of its devices as they were, as the observer shows (CONTRACT 7).",
		func(ctx context.Context) {
			devs := env.ownDevices()
			if len(devs) == 0 {
				trial.From(ctx).Skip("the fleet has no device on the tested gateway")
			}
			before := env.readAll(ctx, devs)
			c := env.Base(device.SendMessage, "", "")
			c.Set(device.FieldMessageValue, effectMessage(env.Faker(id)))
			r := env.sendEffect(ctx, c, f)
			trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "a valid message was not accepted: %s", link.Describe(r))
			expectUnchanged(ctx, before, env.readAll(ctx, devs), "a message")
		})
}

// declareIsolation declares the check that an op (a command or a rename)
// accepted for one device changes no other device, gateway or account.
func (env *Suite) declareIsolation(op device.Operation, f device.Format) {
	id := effectID(op.Name()+".isolation", f)
	section := map[device.Operation]string{device.SendCommand: "4.1", device.UpdateName: "4.3"}[op]
	env.effect(id, check.Must, section, "", op, true, f, "", "a "+op.Name()+" to one device changes no other device, gateway or account",
		"A "+op.Name()+" accepted for one device MUST leave every other device of its gateway, of another gateway and of another account, and every gateway's messages, as they were, as the observer shows (CONTRACT 7).",
		func(ctx context.Context) {
			d := env.needAnyDevice(ctx)
			named := devRef{env.Target.MAC, d.SN}
			if devs, _ := env.landingPlaces(true, named); len(devs) == 0 {
				trial.From(ctx).Skip("the fleet has no other device to watch: not covered")
			}
			ctx, w := env.watchLandings(ctx, true, named)
			self := env.mustRead(ctx, env.Target.MAC, d.SN)
			var c catalog.Call
			if op == device.SendCommand {
				t, ok := oracle.LookupType(d.Type)
				if !ok {
					trial.From(ctx).Skip("device " + d.SN + " is of type " + d.Type + ", which the published interface does not have")
				}
				c, _ = env.changedCommand(d, t, self, env.Faker(id))
			} else {
				c = env.Base(device.UpdateName, d.SN, d.Type)
				c.Set(device.FieldName, effectName(env.Faker(id), self.Name))
			}
			r := env.sendEffect(ctx, c, f)
			trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeTrue(), "a valid %s was not accepted: %s", op.Name(), link.Describe(r))
			env.readSettled(ctx, env.Target.MAC, d.SN)
			w.expectKept(ctx, env, "the "+op.Name()+" to "+d.Type+" "+d.SN+" of gateway "+env.Target.MAC)
		})
}

// effect declares one effect check: skipped with the run's reason when
// effects are not observed, and in a dry run.
//
// An effect check that watches other devices or gateways (watchesOthers)
// reads what other workers change: it is Shared, and runs on worker 0 of
// a --parallel run. One of messages watches its own messages among those
// the other workers append (observer.Log.GainedMessage), and runs on any worker.
func (env *Suite) effect(id string, level check.Level, section, contract string, op device.Operation, watchesOthers bool, f device.Format, typ, title, assertion string, body func(context.Context)) {
	m := check.Meta{ID: id, Level: level, Section: section, Title: capital(title) + " (" + f.String() + ")", Assertion: assertion,
		Operation: op.Name(), Format: f.String(), DeviceType: typ, Tags: []string{"sim", "effect"},
		Traits: check.Traits{Shared: watchesOthers, Cost: 1}}
	if level != check.Must {
		m.Contract = contract
	}
	env.It(m, func(ctx context.Context) {
		if why := env.ObserveSkip(); why != "" {
			trial.From(ctx).Skip(why)
		}
		if env.DryRun {
			trial.From(ctx).Skip("dry run: not sent")
		}
		body(ctx)
	})
}

// sendEffect arranges for the device to be put back when the run ends and
// sends the call.
func (env *Suite) sendEffect(ctx context.Context, c catalog.Call, f device.Format) *client.Response {
	trial.Helper()
	env.PutBack(ctx, c)
	trial.From(ctx).By(fmt.Sprintf("sending %s in %s", c.Op.Name(), f))
	return env.Send(ctx, c, f)
}

// expectRefusedUnchanged sends a command to d, built from what the
// observer shows, that must be refused, and checks that the device is as
// it was; the refusal is judged against its control, sent first (it may
// change the device: the command is built from what it leaves).
func (env *Suite) expectRefusedUnchanged(ctx context.Context, f device.Format, d fleet.Device, build func(before observer.Device) catalog.Call) {
	trial.Helper()
	ctl := env.control(ctx, env.Base(device.SendCommand, d.SN, d.Type), f)
	before := env.mustRead(ctx, env.Target.MAC, d.SN)
	c := build(before)
	r := env.sendEffect(ctx, c, f)
	trial.From(ctx).Expect(link.Accepted(r)).To(gomega.BeFalse(), "an invalid request was accepted: %s", link.Describe(r))
	after := env.readSettled(ctx, env.Target.MAC, d.SN)
	trial.From(ctx).Expect(after.Name).To(gomega.Equal(before.Name), "a refused command changed the device's name")
	var changed []string
	for _, k := range sortedKeys(before.State, after.State) {
		b, a := observer.Values(map[string]any{"v": before.State[k]})["v"], observer.Values(map[string]any{"v": after.State[k]})["v"]
		if a != b {
			changed = append(changed, fmt.Sprintf("%s went from %s to %s", k, b, a))
		}
	}
	if len(changed) > 0 {
		trial.From(ctx).Fail("a refused command changed the device: " + strings.Join(changed, "; "))
	}
	ctl.Conclude(ctx)
}

// changedCommand is a command to d that gives every field of its type a
// valid value other than the one the observer shows (the published
// example for free text, whose other values are not shown), and the
// values it sends. The fields and their grammars are the oracle's.
func (env *Suite) changedCommand(d fleet.Device, t *oracle.Type, before observer.Device, fk *gofakeit.Faker) (catalog.Call, map[string]string) {
	c := env.Base(device.SendCommand, d.SN, t.Name)
	sent := map[string]string{}
	for i := range t.Fields {
		fd := &t.Fields[i]
		v := otherValue(fd, before.State[fd.Name], fk)
		c.Set(fd.Name, v)
		sent[fd.Name] = v
	}
	return c, sent
}

// otherValue is a value the published table allows for a field, other
// than cur where the field allows more than one: another of its values,
// another whole number in its range, another decimal well inside both the
// published and the CONTRACT's range. Free text keeps its published
// example.
func otherValue(of *oracle.Field, cur any, fk *gofakeit.Faker) string {
	now := strings.TrimSpace(fmt.Sprint(cur))
	if cur == nil {
		now = ""
	}
	// The values come from the harness's own rule table, never the
	// simulator's (TestHarnessDoesNotUseTheSimulatorsValidation).
	switch of.Kind {
	case oracle.Enum:
		vals := append([]string(nil), of.Values...)
		fk.ShuffleStrings(vals)
		for _, v := range vals {
			if !strings.EqualFold(v, now) {
				return v
			}
		}
		return vals[0]
	case oracle.Integer:
		lo, hi := int(of.Min), int(of.Max)
		for i := 0; i < 16; i++ {
			v := strconv.Itoa(fk.Number(lo, hi))
			if !observer.SameNumber(v, now) {
				return v
			}
		}
		if observer.SameNumber(strconv.Itoa(lo), now) {
			return strconv.Itoa(hi)
		}
		return strconv.Itoa(lo)
	case oracle.Decimal:
		for i := 0; i < 16; i++ {
			v := fmt.Sprintf("%d.%d", fk.Number(10, 29), fk.Number(1, 9))
			if !observer.SameNumber(v, now) {
				return v
			}
		}
		return "19.5"
	}
	return of.Example
}

// invalidValue is a value the published table forbids for a field.
func invalidValue(fd *oracle.Field) string {
	switch fd.Kind {
	case oracle.Enum:
		return "Maybe"
	case oracle.Integer:
		return "abc"
	case oracle.Decimal:
		return "warm"
	}
	return ""
}

func firstEnum(t *oracle.Type) *oracle.Field {
	for i := range t.Fields {
		if t.Fields[i].Kind == oracle.Enum {
			return &t.Fields[i]
		}
	}
	return nil
}

// expectFields checks, field by field, that each field sent shows its
// value and every other field its value before. strict judges the letter
// case of enumerated values (CONTRACT 2); without it only the value.
func expectFields(ctx context.Context, t *oracle.Type, before, after observer.Device, sent map[string]string, strict bool) {
	trial.Helper()
	var wrong []string
	for i := range t.Fields {
		fd := &t.Fields[i]
		got, present := after.State[fd.Name]
		gs := observer.Values(map[string]any{"v": got})["v"]
		want, isSent := sent[fd.Name]
		if !isSent {
			want = observer.Values(map[string]any{"v": before.State[fd.Name]})["v"]
		}
		ok := present
		switch {
		case !ok:
		case fd.Kind == oracle.Integer || fd.Kind == oracle.Decimal:
			ok = observer.SameNumber(gs, want)
		case fd.Kind == oracle.Enum && !strict:
			ok = strings.EqualFold(gs, want)
		default:
			ok = gs == want
		}
		if ok {
			continue
		}
		was := observer.Values(map[string]any{"v": before.State[fd.Name]})["v"]
		if !present {
			gs = "nothing"
		}
		if isSent {
			wrong = append(wrong, fmt.Sprintf("%s: sent %q, the observer shows %s (before: %s)", fd.Name, want, gs, was))
		} else {
			wrong = append(wrong, fmt.Sprintf("%s: not sent, was %s, the observer shows %s", fd.Name, was, gs))
		}
	}
	if len(wrong) > 0 {
		trial.From(ctx).Fail("the device's state after the command: " + strings.Join(wrong, "; "))
	}
}

// devRef is a device the observer is asked about.
type devRef struct{ mac, sn string }

// ownDevices are the devices of the tested gateway this process uses.
func (env *Suite) ownDevices() []devRef {
	var out []devRef
	for _, name := range oracle.TypeNames() {
		if d, ok := env.Target.Devices[name]; ok {
			out = append(out, devRef{env.Target.MAC, d.SN})
		}
	}
	return out
}

// laterGateway is a gateway of the tested account other than the tested
// one, and other than the account's first where it has such a one (a
// target may store every message on the account's first gateway): "" when
// the account has no other gateway.
func (env *Suite) laterGateway() string {
	if env.Fleet == nil {
		return ""
	}
	for _, a := range env.Fleet.Accounts {
		if a.ID != env.Target.AccountID {
			continue
		}
		pick := ""
		for i, g := range a.Gateways {
			if g.MAC == env.Target.MAC {
				continue
			}
			if i > 0 {
				return g.MAC
			}
			pick = g.MAC
		}
		return pick
	}
	return ""
}

// otherGateways are the gateways of the fleet other than the tested one,
// at most maxWatched, those of the tested account first.
func (env *Suite) otherGateways() []string {
	const maxWatched = 8
	var mine, others []string
	for _, a := range env.Fleet.Accounts {
		for _, g := range a.Gateways {
			if g.MAC == env.Target.MAC {
				continue
			}
			if a.ID == env.Target.AccountID {
				mine = append(mine, g.MAC)
			} else {
				others = append(others, g.MAC)
			}
		}
	}
	out := append(mine, others...)
	if len(out) > maxWatched {
		out = out[:maxWatched]
	}
	return out
}

// refusedRename is a rename the target must refuse, and the device whose
// name it must leave alone.
type refusedRename struct {
	what, skip string
	c          catalog.Call
	mac, sn    string
}

// refusedRenames are renames refused for their name or their place in the
// fleet, about d or a device of another gateway or account.
func (env *Suite) refusedRenames(d fleet.Device, f device.Format) []refusedRename {
	var out []refusedRename
	bad := func(what, name string) {
		c := env.Base(device.UpdateName, d.SN, d.Type)
		c.Set(device.FieldName, name)
		out = append(out, refusedRename{what: what, c: c, mac: env.Target.MAC, sn: d.SN})
	}
	bad("with an empty name", "")
	bad("with a name of 65 characters", strings.Repeat("n", 65))
	if fd, ok := env.ForeignDevice(); ok {
		c := env.Base(device.UpdateName, fd.SN, fd.Type)
		c.Set(device.FieldName, "Not Here")
		c.SN, c.Type = "", ""
		out = append(out, refusedRename{what: "of a device of another gateway, through the tested one", c: c, mac: env.gatewayOf(fd.SN), sn: fd.SN})
	}
	if p, ok := env.OtherAccount(); ok {
		c := env.Base(device.UpdateName, d.SN, d.Type)
		c.Set(device.FieldName, "Not Yours")
		rn := refusedRename{what: "signed with another account's key", c: c, mac: env.Target.MAC, sn: d.SN}
		rn.skip = env.SignAs(&rn.c, f, p.Key)
		out = append(out, rn)
		if p.HasDevice {
			c := env.Base(device.UpdateName, p.Device.SN, p.Device.Type)
			c.Set(device.FieldMAC, p.MAC)
			c.Set(device.FieldName, "Not Yours")
			c.SN, c.Type = "", ""
			out = append(out, refusedRename{what: "with the tested key of a device of another account's gateway", c: c, mac: p.MAC, sn: p.Device.SN})
		}
	}
	return out
}

// gatewayOf is the gateway of a device of the fleet.
func (env *Suite) gatewayOf(sn string) string {
	for _, a := range env.Fleet.Accounts {
		for _, g := range a.Gateways {
			for _, d := range g.Devices {
				if strings.EqualFold(d.SN, sn) {
					return g.MAC
				}
			}
		}
	}
	return ""
}

func (env *Suite) needAnyDevice(ctx context.Context) fleet.Device {
	trial.Helper()
	d, ok := env.AnyDevice()
	if !ok {
		trial.From(ctx).Skip("the fleet has no device on the tested gateway")
	}
	return d
}

// failRead ends a check whose read of the observer (what) failed: it
// fails, or stops the run when the read was not made because the target
// has stopped answering (INCOMPLETE, as a request not sent would).
func failRead(ctx context.Context, what string, err error) {
	if link.IsStopped(err) {
		link.Stop(ctx, err.Error())
	}
	trial.From(ctx).Fail(readFailure{what, err}.message())
}

// mustRead reads a device from the observer or fails the check.
func (env *Suite) mustRead(ctx context.Context, mac, sn string) observer.Device {
	trial.Helper()
	d, err := env.Link().ReadDevice(ctx, mac, sn)
	if err != nil {
		failRead(ctx, "reading device "+sn+" of gateway "+mac, err)
	}
	env.recordRead(ctx, mac, sn, d)
	return d
}

// recordRead keeps a read of the observer in the check's report: an
// effect failure shows what the observer showed before and after its
// request, each with its curl line.
func (env *Suite) recordRead(ctx context.Context, mac, sn string, d observer.Device) {
	b, _ := json.Marshal(map[string]any{"name": d.Name, "state": d.State})
	trial.From(ctx).Entry(report.ReadEntry, report.ObserverRead{URL: strings.TrimRight(env.Observer, "/") + "/_sim/gateways/" + mac + "/devices/" + sn,
		Device: string(b), Token: env.AdminToken != ""}, ginkgo.ReportEntryVisibilityNever)
}

// mustLog reads a gateway's messages from the observer or fails the check.
func (env *Suite) mustLog(ctx context.Context, mac string) observer.Log {
	trial.Helper()
	l, err := env.Link().ReadLog(ctx, mac)
	if err != nil {
		failRead(ctx, "reading the messages of gateway "+mac, err)
	}
	return l
}

// readAll reads devices from the observer, each once the changes
// accepted for it have appeared, all at once within the run's bound of
// requests in flight, keyed by gateway and serial; it fails the check
// naming the first that could not be read.
func (env *Suite) readAll(ctx context.Context, ds []devRef) map[devRef]observer.Device {
	trial.Helper()
	devs, _ := env.readPlacesBy(ctx, ds, nil, env.Link().ReadDevice, env.Link().ReadLogNow)
	return devs
}

// expectUnchanged fails naming each device whose name or state changed.
func expectUnchanged(ctx context.Context, before, after map[devRef]observer.Device, what string) {
	trial.Helper()
	var changed []string
	for d, b := range before {
		a := after[d]
		if a.Name != b.Name || !observer.SameValues(observer.Values(a.State), observer.Values(b.State)) {
			changed = append(changed, fmt.Sprintf("device %s of gateway %s (name %q, state %v before; name %q, state %v after)",
				d.sn, d.mac, b.Name, observer.Values(b.State), a.Name, observer.Values(a.State)))
		}
	}
	sort.Strings(changed)
	if len(changed) > 0 {
		trial.From(ctx).Fail(what + " changed another device: " + strings.Join(changed, "; "))
	}
}

func sortedKeys(ms ...map[string]any) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// effectName is a valid name other than cur: letters and a space, well
// inside the CONTRACT's 64 characters.
func effectName(fk *gofakeit.Faker, cur string) string {
	for {
		n := "Effect " + strings.ToLower(fk.LetterN(8))
		if n != cur {
			return n
		}
	}
}

// effectMessage is a <setting_name>=<number> value drawn from the seed.
func effectMessage(fk *gofakeit.Faker) string {
	return fmt.Sprintf("effect_%s=%d", strings.ToLower(fk.LetterN(6)), fk.Number(1, 999))
}
