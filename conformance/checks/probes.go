package checks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// A probe is an INFO check: it asks the target something the published
// interface leaves open and reports what it did, judging nothing.
type probe struct {
	id, title, section, contract, typ string
	op                                device.Operation
	run                               func(ctx context.Context, f device.Format)
	// formats limits the probe to some formats (both when nil).
	formats []device.Format
}

// probeCost is what a probe costs against a slow target (see
// check.Traits.Cost): it sends several requests.
const probeCost = 10

// The probes, after the cases (family).
var _ = declares(300, (*Suite).declareProbes)

// declareProbes declares each probe in each of its formats, then the
// checks of HEAD (grammarprobes.go).

func (env *Suite) declareProbes() {
	for _, p := range env.probes() {
		p := p
		formats := p.formats
		if formats == nil {
			formats = []device.Format{device.JSON, device.XML}
		}
		for _, f := range formats {
			f := f
			m := check.Meta{ID: "probe." + p.id + "." + f.String(), Level: check.Info, Section: p.section, Contract: p.contract,
				Title: capital(p.title) + " (" + f.String() + ")", Assertion: "Reports " + p.title + "; judges nothing.",
				Operation: p.op.Name(), Format: f.String(), DeviceType: p.typ, Tags: []string{"probe"},
				// A probe sends several requests; one of messages appends
				// to the gateway's log, the others use the worker's own
				// devices.
				Traits: check.Traits{Shared: p.op == device.SendMessage, Cost: probeCost}}
			env.ItAbout(m, env.probeKey(p), func(ctx context.Context) { p.run(ctx, f) })
		}
	}
	env.declareHeadChecks()
}

// probeKey is what a probe's requests touch: the device of its type, the
// tested gateway's messages, or the first device of the fleet (the one a
// probe about no type sends to: Bench.AnyDevice).
func (env *Suite) probeKey(p probe) func() string {
	return func() string {
		switch {
		case p.op == device.SendMessage:
			return link.LogKey(env.Target.MAC)
		case p.typ != "":
			if d, ok := env.Device(p.typ); ok {
				return catalog.HexOnly(d.SN)
			}
		default:
			if d, ok := env.AnyDevice(); ok {
				return catalog.HexOnly(d.SN)
			}
		}
		return ""
	}
}

// observe records what a probe saw; the reports show it.
func observe(ctx context.Context, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	// The reports keep every observation; the console shows them only with
	// -v (or when the probe failed), so a passing run stays quiet.
	trial.From(ctx).Entry("observation", text, ginkgo.ReportEntryVisibilityFailureOrVerbose)
}

// ask sends a call and says what came back, failing nothing.
func (env *Suite) ask(ctx context.Context, c catalog.Call, f device.Format) (*client.Response, string) {
	if env.DryRun {
		env.Send(ctx, c, f) // records and skips
	}
	r, err := env.Link().Exchange(ctx, c.Request(f))
	if err != nil {
		return nil, err.Error()
	}
	verdict := "rejected"
	if link.Accepted(r) {
		verdict = "accepted"
	}
	return r, verdict + " (" + link.Describe(r) + ")"
}

func (env *Suite) needDevice(ctx context.Context, typeName string) (string, bool) {
	d, ok := env.Device(typeName)
	if !ok {
		trial.From(ctx).Skip("the fleet has no " + typeName + ": not covered")
	}
	return d.SN, ok
}

// probes are every probe, in the order they are declared: the open
// forms of the rule table, the generated forms the texts leave open, the
// letter case of each enumerated field, the command forms the published
// interface leaves open, and what the target allows of a message type, a
// name, a timestamp and its answers' layout.
func (env *Suite) probes() []probe {
	ps := append(env.openFormProbes(), env.grammarProbes()...)
	ps = append(ps, env.letterCaseProbes()...)
	ps = append(ps, env.commandProbes()...)
	ps = append(ps,
		env.messageTypeProbe(),
		env.longestNameProbe(),
		env.timestampDriftProbe(),
		env.responseLayoutProbe(),
		env.replayProbe(),
	)
	return ps
}

// letterCaseProbes send each enumerated field of each device type in lower
// and in upper case: the published table gives one case, and what the
// target does with the others is for the report to say.
func (env *Suite) letterCaseProbes() []probe {
	var ps []probe
	for _, t := range oracle.Types {
		for _, fd := range t.Fields {
			if fd.Kind != oracle.Enum {
				continue
			}
			t, fd := t, fd
			ps = append(ps, probe{id: "letter-case." + check.Slug(t.Name) + "." + check.Slug(fd.Name), section: "2.3", contract: "2",
				typ: t.Name, op: device.SendCommand,
				title: fmt.Sprintf("whether %s of a %s is accepted in lower and upper case", fd.Name, t.Name),
				run: func(ctx context.Context, f device.Format) {
					sn, _ := env.needDevice(ctx, t.Name)
					vs := []string{strings.ToLower(fd.Values[0]), strings.ToUpper(fd.Values[0])}
					var calls []catalog.Call
					for _, v := range vs {
						c := env.Base(device.SendCommand, sn, t.Name)
						c.Set(fd.Name, v)
						env.PutBack(ctx, c)
						calls = append(calls, c)
					}
					for i, a := range env.askAll(ctx, calls, f) {
						observe(ctx, "%s %q: %s", fd.Name, vs[i], a.got)
					}
				}})
		}
	}
	return ps
}

// commandProbes send commands in forms the published interface leaves
// open: the device named by device_id, a command with one field, another
// type text or value than the table's, and the format argument.
func (env *Suite) commandProbes() []probe {
	return []probe{
		env.onDeviceProbe("device_id-alias", "a command that names the device by device_id instead of sn", "2.2", "", func(c *catalog.Call) {
			sn := c.Get(device.FieldSN)
			c.Drop(device.FieldSN)
			c.Fields = append(c.Fields, catalog.Field{Name: device.FieldDeviceID, Value: sn})
		}),
		env.onDeviceProbe("device_id-and-sn", "a command that carries both device_id and sn, equal", "2.2", "", func(c *catalog.Call) {
			c.Set(device.FieldDeviceID, c.Get(device.FieldSN))
		}),
		env.onDeviceProbe("thermostat-one-field", "a Thermostat command with mode alone", "2.3", "Thermostat", func(c *catalog.Call) {
			c.Keep(device.FieldSN, device.FieldType, "mode")
		}),
		env.onDeviceProbe("appliance-module-type-text", `an Appliance Module Plus command whose type text is "Appliance Module" (as the published XML example)`,
			"2.3", "Appliance Module Plus", func(c *catalog.Call) { c.Set(device.FieldType, "Appliance Module") }),
		env.onDeviceProbe("opt-other-value", `an Appliance Module Plus command with opt "eco"`, "2.3", "Appliance Module Plus",
			func(c *catalog.Call) { c.Set("opt", "eco") }),
		env.formatFieldProbe(),
	}
}

// onDeviceProbe is a probe that sends one command, changed by change, to
// the fleet's device of type typeName (any device when typeName is ""),
// and reports what the target did with it.
func (env *Suite) onDeviceProbe(id, title, section, typeName string, change func(c *catalog.Call)) probe {
	return probe{id: id, title: title, section: section, contract: "2", typ: typeName, op: device.SendCommand,
		run: func(ctx context.Context, f device.Format) {
			var sn, typ string
			if typeName != "" {
				sn, _ = env.needDevice(ctx, typeName)
				typ = typeName
			} else {
				d, ok := env.AnyDevice()
				if !ok {
					trial.From(ctx).Skip("the fleet has no device")
				}
				sn, typ = d.SN, d.Type
			}
			c := env.Base(device.SendCommand, sn, typ)
			change(&c)
			env.PutBack(ctx, c)
			_, got := env.ask(ctx, c, f)
			observe(ctx, "%s: %s", title, got)
		}}
}

// formatFieldProbe sends a command that carries the format argument,
// naming its body's own format, and reports what the target did with it.
func (env *Suite) formatFieldProbe() probe {
	return probe{id: "format-field", title: "a command that carries the format argument naming its body's format",
		section: "4", contract: "2", op: device.SendCommand,
		run: func(ctx context.Context, f device.Format) {
			d, ok := env.AnyDevice()
			if !ok {
				trial.From(ctx).Skip("the fleet has no device")
			}
			c := env.Base(device.SendCommand, d.SN, d.Type)
			c.Set(device.FieldFormat, f.String())
			env.PutBack(ctx, c)
			_, got := env.ask(ctx, c, f)
			observe(ctx, "format=%s in a %s body: %s", f, f, got)
		}}
}

// messageTypeProbe sends a message whose message_type is "alert", and
// reports what the target did with it.
func (env *Suite) messageTypeProbe() probe {
	return probe{id: "message_type-other", title: `a message whose message_type is "alert"`, section: "2.4", contract: "3", op: device.SendMessage,
		run: func(ctx context.Context, f device.Format) {
			c := env.Base(device.SendMessage, "", "")
			c.Set(device.FieldMessageType, "alert")
			_, got := env.ask(ctx, c, f)
			observe(ctx, "message_type alert: %s", got)
		}}
}

// longestNameProbe renames a device with ever longer names and reports
// the longest the target accepted.
func (env *Suite) longestNameProbe() probe {
	return probe{id: "name-longest", title: "the longest name the target accepts", section: "8", contract: "3", op: device.UpdateName,
		run: func(ctx context.Context, f device.Format) {
			d, ok := env.AnyDevice()
			if !ok {
				trial.From(ctx).Skip("the fleet has no device")
			}
			longest := 0
			for _, n := range []int{1, 32, 64, 65, 128, 255, 256, 1024, 4096} {
				c := env.Base(device.UpdateName, d.SN, d.Type)
				c.Set(device.FieldName, strings.Repeat("n", n))
				env.PutBack(ctx, c)
				r, got := env.ask(ctx, c, f)
				observe(ctx, "a name of %d characters: %s", n, got)
				if link.Accepted(r) {
					longest = n
				}
			}
			observe(ctx, "longest name accepted of those tried: %d characters", longest)
		}}
}

// timestampDriftProbe sends messages stamped ahead of and behind this
// machine's clock, around the CONTRACT's window, and reports which
// offsets the target accepted.
func (env *Suite) timestampDriftProbe() probe {
	return probe{id: "timestamp-drift", title: "how far the timestamp may be from the target's clock", section: "8", contract: "1",
		op: device.SendMessage,
		run: func(ctx context.Context, f device.Format) {
			var ok []string
			for _, d := range []time.Duration{-24 * time.Hour, -time.Hour, -301 * time.Second, -299 * time.Second,
				-60 * time.Second, 60 * time.Second, 299 * time.Second, 301 * time.Second, time.Hour} {
				c := env.Base(device.SendMessage, "", "")
				c.SetStampAt(&env.Bench, d)
				r, got := env.ask(ctx, c, f)
				observe(ctx, "timestamp %+v from now: %s", d, got)
				if link.Accepted(r) {
					ok = append(ok, d.String())
				}
			}
			observe(ctx, "offsets accepted: %s", strings.Join(ok, ", "))
		}}
}

// replayProbe sends a valid message, then the very same request again on
// purpose (operation, fields, timestamp and sign) in the same format and in
// the other: CONTRACT 1 lets a service refuse a replay with 401
// replayed_request, or take it. It is the one place a run repeats a
// request; the report says which answer the target gave, and whether it
// is one of those two.
func (env *Suite) replayProbe() probe {
	return probe{id: "replay", title: "the same request sent again at once, on purpose", section: "5", contract: "1",
		op: device.SendMessage,
		run: func(ctx context.Context, f device.Format) {
			c := env.Base(device.SendMessage, "", "")
			// The timestamp pinned, so that the repeat carries the same one
			// and the same sign.
			c.Set(device.FieldTimestamp, c.Get(device.FieldTimestamp))
			r, got := env.ask(ctx, c, f)
			observe(ctx, "the request: %s", got)
			if !link.Accepted(r) {
				observe(ctx, "the request was not accepted: there is no replay to send")
				return
			}
			c.Repeat = true
			other := device.XML
			if f == device.XML {
				other = device.JSON
			}
			for _, g := range []device.Format{f, other} {
				r, got := env.ask(ctx, c, g)
				verdict := "an answer CONTRACT 1 allows (a replay may be taken, or refused with 401 " + device.CodeReplayedRequest + ")"
				if !link.Accepted(r) && (r == nil || r.Status != 401 || r.ErrorCode != device.CodeReplayedRequest) {
					verdict = "neither answer CONTRACT 1 allows a replay (success, or 401 " + device.CodeReplayedRequest + ")"
				}
				observe(ctx, "the same request again, in %s: %s: %s", g, got, verdict)
			}
		}}
}

// responseLayoutProbe reports the Content-Type and body of a success and
// of an error answer, as the target writes them.
func (env *Suite) responseLayoutProbe() probe {
	return probe{id: "response-layout", title: "the layout of the success and error answers", section: "4.4", contract: "4",
		op: device.SendMessage,
		run: func(ctx context.Context, f device.Format) {
			layout := func(what string, r *client.Response, got string) {
				if r == nil { // no answer is an answer too, and the report says so
					observe(ctx, "%s: %s", what, got)
					return
				}
				observe(ctx, "%s: %s; Content-Type %q; body %s", what, got, r.ContentType, strconv.Quote(cut(string(r.Body), 300)))
			}
			c := env.Base(device.SendMessage, "", "")
			r, got := env.ask(ctx, c, f)
			layout("success", r, got)
			c.Set(device.FieldMessageValue, "brightness")
			r, got = env.ask(ctx, c, f)
			layout("error", r, got)
		}}
}

// openFormProbes send every form of the rule table that neither text
// decides (oracle.Field.OpenForms, oracle.OpenBodyForms: the CONTRACT's
// preamble, "a form that neither text forbids is open"), one INFO probe
// per field: the report says what the target did with each, and nothing
// is judged, so that neither a target that refuses them nor one that
// accepts them fails a check.
func (env *Suite) openFormProbes() []probe {
	ps := env.commandOpenFormProbes()
	ps = append(ps, env.fieldOpenFormProbes()...)
	return append(ps, env.bodyOpenFormProbe())
}

// sendOpenForms sends each open form of f, derived from the value the
// request carries, on a call build makes, and reports what the target did
// with each; a format in which f has no open form is skipped.
func (env *Suite) sendOpenForms(ctx context.Context, format device.Format, f *oracle.Field, build func(context.Context) (catalog.Call, bool)) {
	c, ok := build(ctx)
	if !ok {
		return
	}
	base := c.Get(f.Name)
	if f.Kind == oracle.FormatName {
		base = format.String()
	}
	var calls []catalog.Call
	var titles []string
	for _, s := range f.OpenForms(base) {
		if s.Value.JSONOnly() && format != device.JSON {
			continue
		}
		c, _ := build(ctx)
		catalog.SetValue(&c, f.Name, s.Value)
		env.PutBack(ctx, c)
		calls, titles = append(calls, c), append(titles, s.Title)
	}
	for i, a := range env.askAll(ctx, calls, format) {
		observe(ctx, "%s %s: %s", f.Name, titles[i], a.got)
	}
	if len(calls) == 0 {
		trial.From(ctx).Skip("no open form of " + f.Name + " in " + format.String())
	}
}

// commandOpenFormProbes are the open forms of each field of each device
// type that has any, sent in a command to the fleet's device of the type.
func (env *Suite) commandOpenFormProbes() []probe {
	var ps []probe
	for _, t := range oracle.Types {
		for i := range t.Fields {
			t, fd := t, &t.Fields[i]
			base := fd.Example
			if fd.Kind == oracle.Enum {
				base = fd.Values[0]
			}
			if len(fd.OpenForms(base)) == 0 {
				continue
			}
			ps = append(ps, probe{id: "open-forms.command." + check.Slug(t.Name) + "." + check.Slug(fd.Name), section: "2.3", contract: "2",
				typ: t.Name, op: device.SendCommand,
				title: fmt.Sprintf("what the target does with the forms of %s of a %s that neither text decides", fd.Name, t.Name),
				run: func(ctx context.Context, f device.Format) {
					sn, _ := env.needDevice(ctx, t.Name)
					env.sendOpenForms(ctx, f, fd, func(context.Context) (catalog.Call, bool) {
						c := env.Base(device.SendCommand, sn, t.Name)
						c.Set(fd.Name, base)
						return c, true
					})
				}})
		}
	}
	return ps
}

// anyDeviceCall builds a call of op about any device of the fleet (a
// message needs none).
func (env *Suite) anyDeviceCall(op device.Operation) func(context.Context) (catalog.Call, bool) {
	return func(ctx context.Context) (catalog.Call, bool) {
		d, ok := env.AnyDevice()
		if !ok && op != device.SendMessage {
			trial.From(ctx).Skip("the fleet has no device")
		}
		return env.Base(op, d.SN, d.Type), true
	}
}

// fieldOpenFormProbes are the open forms of the fields every request of an
// operation carries: the type text, the timestamp, the format argument and
// the message's type and value.
func (env *Suite) fieldOpenFormProbes() []probe {
	var ps []probe
	for _, x := range []struct {
		f       *oracle.Field
		op      device.Operation
		section string
		build   func(context.Context) (catalog.Call, bool)
	}{
		{&oracle.TypeField, device.SendCommand, "2.3", env.anyDeviceCall(device.SendCommand)},
		{&oracle.TimestampF, device.SendMessage, "2.1", env.anyDeviceCall(device.SendMessage)},
		{&oracle.FormatField, device.SendMessage, "4", func(ctx context.Context) (catalog.Call, bool) {
			c, _ := env.anyDeviceCall(device.SendMessage)(ctx)
			c.Set(device.FieldFormat, "json")
			return c, true
		}},
		{&oracle.MessageType, device.SendMessage, "2.4", env.anyDeviceCall(device.SendMessage)},
		{&oracle.MessageValue, device.SendMessage, "2.4", env.anyDeviceCall(device.SendMessage)},
	} {
		x := x
		ps = append(ps, probe{id: "open-forms." + x.op.Name() + "." + x.f.Name, section: x.section, contract: "2", op: x.op,
			title: "what the target does with the forms of " + x.f.Name + " that neither text decides",
			run:   func(ctx context.Context, f device.Format) { env.sendOpenForms(ctx, f, x.f, x.build) }})
	}
	return ps
}

// bodyOpenFormProbe sends a message in each form of a body that neither
// text decides, in the probe's format (oracle.OpenBodyForms).
func (env *Suite) bodyOpenFormProbe() probe {
	return probe{id: "open-forms.message.body", section: "2.1", contract: "2", op: device.SendMessage,
		title: "what the target does with the forms of a body that neither text decides",
		run: func(ctx context.Context, f device.Format) {
			n := 0
			for _, b := range oracle.OpenBodyForms() {
				if b.Format != f {
					continue
				}
				c := env.Base(device.SendMessage, "", "")
				valid := catalog.Encoded(&env.Bench, c, f)
				edit := b.Edit
				c.Raw = func(device.Format) []byte { return []byte(edit(string(valid))) }
				_, got := env.ask(ctx, c, f)
				observe(ctx, "a body %s: %s", b.Title, got)
				n++
			}
			if n == 0 {
				trial.From(ctx).Skip("no open body form in " + f.String())
			}
		}}
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// asked is what a probe's request got: the answer (nil when none came)
// and the words ask gives it.
type asked struct {
	r   *client.Response
	got string
}

// askAll asks each call in format f, as ask does one after another, and
// gives what each got, in order. When they all name one device of a
// target across a network (batch.Sender.FarDevice), they are sent
// together (Concurrency at a time): a probe judges nothing and only
// reports answers, which do not depend on the order the device takes them
// in. Their exchanges are recorded in order; the device's expected state
// is then unknown (the order the target applied the accepted ones in is),
// so it is forgotten rather than waited for.
func (env *Suite) askAll(ctx context.Context, calls []catalog.Call, f device.Format) []asked {
	out := make([]asked, len(calls))
	sn := ""
	for i, c := range calls {
		if i == 0 {
			sn = catalog.HexOnly(c.SN)
		}
		if c.SN == "" || catalog.HexOnly(c.SN) != sn {
			sn = ""
			break
		}
	}
	if len(calls) < 2 || sn == "" || !env.Batch().FarDevice(sn) || env.InFlight() < 2 || env.DryRun || env.MaxRequests > 0 || env.Link().Stopped() {
		for i, c := range calls {
			out[i].r, out[i].got = env.ask(ctx, c, f)
		}
		return out
	}
	trial.From(ctx).By(fmt.Sprintf("%d requests to the device %s sent together (they are only reported, not judged)", len(calls), env.DeviceName(sn)))
	exs := make([]client.Exchange, len(calls))
	errs := make([]error, len(calls))
	jobs := make([]func(), len(calls))
	for i, c := range calls {
		jobs[i] = func() { out[i].r, exs[i], errs[i] = env.Link().RoundTrip(ctx, c.Request(f)) }
	}
	env.runAll(jobs)
	anyAccepted := false
	for i := range calls {
		env.Link().Record(ctx, exs[i])
		if errs[i] != nil {
			out[i].r, out[i].got = nil, fmt.Sprintf("no answer from the target: %v", errs[i])
			continue
		}
		verdict := "rejected"
		if link.Accepted(out[i].r) {
			verdict, anyAccepted = "accepted", true
		}
		out[i].got = verdict + " (" + link.Describe(out[i].r) + ")"
	}
	if anyAccepted {
		env.Link().Forget(sn)
	}
	return out
}
