package conformance

import (
	"strconv"
	"strings"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Cases from the oracle's samples (issue 17 item 4): every boundary one
// step inside and outside it, every form a rule allows, and every way the
// rule's grammar can be broken, each expecting the oracle's verdict.
//
// A sample's case ID is <field's case prefix>.valid.<slug> when the oracle
// calls it valid and <prefix>.invalid.<slug> when it does not, so that a
// rule of rules.yaml maps a side with one pattern; samples that the
// catalog already had before the oracle keep their IDs, <prefix>.<slug>.

// legacySlug reports whether a sample of f had its own case, with the
// sample's slug as its last part, before the oracle.
func legacySlug(f *oracle.Field, slug string) bool {
	switch f.Kind {
	case oracle.Enum:
		for _, w := range f.Values {
			s := check.Slug(w)
			if slug == s || slug == s+".lower-case" || slug == s+".upper-case" {
				return true
			}
		}
		return slug == "not-allowed" || slug == "empty"
	case oracle.Integer:
		if n, err := strconv.ParseInt(strings.Replace(slug, "minus-", "-", 1), 10, 64); err == nil {
			return f.Max-f.Min <= 3 || n == f.Min-1 || n == f.Min || n == f.Max || n == f.Max+1
		}
		return oneOf(slug, "fraction", "not-a-number", "json-number", "negative")
	case oracle.Decimal:
		return oneOf(slug, "lowest", "highest", "zero", "negative", "integer", "not-a-number", "nan", "exponent", "json-number",
			"below-by-a-tenth", "above-by-a-tenth", "too-low", "too-high")
	case oracle.Text:
		if f.Trim {
			return oneOf(slug, "empty", "too-long", "control-character")
		}
		return oneOf(slug, "normal", "empty", "too-long")
	case oracle.Hex:
		return f.Name != device.FieldDeviceID && oneOf(slug, "short", "long", "not-hex", "upper-case")
	case oracle.Timestamp:
		return oneOf(slug, "13-digits", "15-digits", "month-13")
	case oracle.Setting:
		return oneOf(slug, "no-equals", "no-name", "not-a-number", "empty")
	case oracle.FormatName:
		return oneOf(slug, "other", "unknown")
	}
	return false
}

func oneOf(s string, list ...string) bool {
	for _, x := range list {
		if s == x {
			return true
		}
	}
	return false
}

// sampleID is a sample's case ID under prefix.
func sampleID(prefix string, f *oracle.Field, s oracle.Sample) string {
	if legacySlug(f, s.Slug) {
		return prefix + "." + s.Slug
	}
	if s.Verdict.OK {
		return prefix + ".valid." + s.Slug
	}
	return prefix + ".invalid." + s.Slug
}

// samplesOf are a field's samples around base: edges, forms, broken forms.
func samplesOf(f *oracle.Field, base string) []oracle.Sample {
	return append(append(f.Edges(), f.Forms(base)...), f.Broken(base)...)
}

// pick is the sample of f with the given slug, derived from base.
func pick(f *oracle.Field, base, slug string) (oracle.Sample, bool) {
	for _, s := range samplesOf(f, base) {
		if s.Slug == slug {
			return s, true
		}
	}
	return oracle.Sample{}, false
}

// fieldSampleCase is a case that sets field name of a request of op to
// the sample of slug derived, at run time, from the value the request
// carries (its real mac, sn, sign or timestamp).
func fieldSampleCase(op device.Operation, prefix, title, section, contract string, f *oracle.Field, s oracle.Sample) Case {
	slug := s.Slug
	what := s.Title
	if s.What != "" && (f.Kind == oracle.Hex || f.Kind == oracle.Timestamp || f.Kind == oracle.TypeName) {
		// Derived at run time from the request's own value: the title
		// says how, not the example's value.
		what = s.What
	}
	c := Case{ID: sampleID(prefix, f, s), Op: op, Title: title + " " + what, Section: section, Contract: contract,
		Want: wantOf(s.Verdict, f.Name), Tags: []string{sampleTag[s.Class]}}
	if s.Value.JSONOnly() {
		c.Formats = []device.Format{device.JSON}
	}
	if strings.Contains(slug, "case") {
		c.Tags = append(c.Tags, "letter-case")
	}
	c.Build = onOp(op, func(e *Env, c *call, format device.Format, _ string) string {
		if f.Name == device.FieldSign {
			c.keepSign = true
			if s.Verdict.OK { // a valid form of the real sign
				if skip := e.signAs(c, format, e.Target.Key); skip != "" {
					return skip
				}
			}
		}
		base := c.get(f.Name)
		if f.Name == device.FieldDeviceID {
			base = c.get(device.FieldSN)
		}
		if f.Kind == oracle.FormatName {
			base = format.String()
		}
		got, ok := pick(f, base, slug)
		if !ok {
			return report.NoSample + slug + " of " + f.Name + " derived from " + base
		}
		setValue(c, f.Name, got.Value)
		return ""
	})
	return c
}

// envelopeSamples are the cases of the envelope fields and sn: every
// sample on the field's home operation (send message for the envelope,
// update name for sn), the catalog's first ones on the others.
func envelopeSamples(op device.Operation, prefix string, names []string) []Case {
	var cs []Case
	for _, name := range names {
		f, _ := oracle.Lookup(name)
		home := op == device.SendMessage && name != device.FieldSN || name == device.FieldSN && op == device.UpdateName
		section, contract := "2.1", "2"
		switch name {
		case device.FieldSN:
			section = "2.2"
		case device.FieldTimestamp:
			section, contract = "5", "1"
		}
		for _, s := range samplesOf(f, f.Example) {
			legacy := legacySlug(f, s.Slug)
			if !home && !legacy {
				continue
			}
			c := fieldSampleCase(op, prefix+name, "a "+op.Name()+" request with "+name, section, contract, f, s)
			c.Tags = append([]string{"envelope"}, c.Tags...)
			// A new form check judges the answer; the state checks of the
			// catalog's first ones already show a refusal changes nothing.
			c.NoSim = !legacy
			cs = append(cs, c)
		}
	}
	return cs
}

// operationSamples are the cases of the operations' own fields: type and
// format and device_id of send command, message_type and message_value,
// and name.
func operationSamples() []Case {
	var cs []Case
	add := func(op device.Operation, prefix, title, section, contract string, f *oracle.Field, ss []oracle.Sample, skip ...string) {
		for _, s := range ss {
			if oneOf(s.Slug, skip...) {
				continue
			}
			cs = append(cs, fieldSampleCase(op, prefix, title, section, contract, f, s))
		}
	}
	add(device.SendMessage, "message.message_type", "a message whose message_type is", "2.4", "3", &oracle.MessageType,
		samplesOf(&oracle.MessageType, "message"))
	add(device.SendMessage, "message.message_value", "a message whose message_value is", "2.4", "3", &oracle.MessageValue,
		samplesOf(&oracle.MessageValue, oracle.MessageValue.Example))
	// "non-ascii" is the catalog's update_name.name.unicode.
	add(device.UpdateName, "update_name.name", "an update_name with the name", "4.3", "3", &oracle.Name,
		samplesOf(&oracle.Name, oracle.Name.Example), "non-ascii")
	// "unknown-type" is the catalog's command.unknown-type.
	add(device.SendCommand, "command.type", "a command whose type is", "2.3", "2", &oracle.TypeField,
		oracle.TypeField.Broken("Light Dimmer"), "unknown-type")
	add(device.SendCommand, "command.format", "a command whose format argument is", "4", "2", &oracle.FormatField,
		samplesOf(&oracle.FormatField, "json"))
	// device_id in place of sn (CONTRACT 2: an alias of sn), and beside it.
	alias := func(id, title string, keepSN bool) Case {
		return Case{ID: "command.device_id." + id, Op: device.SendCommand, Title: "a command " + title, Section: "2.2", Contract: "2",
			Want: expect{contractOK: true, status: 200}, Tags: []string{"form"},
			Build: onOp(device.SendCommand, func(_ *Env, c *call, _ device.Format, _ string) string {
				sn := c.get(device.FieldSN)
				if !keepSN {
					c.drop(device.FieldSN)
				}
				c.fields = append(c.fields, kv{name: device.FieldDeviceID, value: sn})
				return ""
			})}
	}
	cs = append(cs, alias("alias", "that names its device by device_id instead of sn", false),
		alias("equal", "that carries both device_id and sn, equal", true))
	for _, s := range samplesOf(&oracle.DeviceID, oracle.DeviceID.Example) {
		c := fieldSampleCase(device.SendCommand, "command.device_id", "a command that names its device by device_id", "2.2", "2",
			&oracle.DeviceID, s)
		build := c.Build
		c.Build = func(e *Env, f device.Format, id string) (call, string) {
			k, skip := build(e, f, id)
			if skip == "" {
				k.drop(device.FieldSN)
			}
			return k, skip
		}
		cs = append(cs, c)
	}
	return cs
}
