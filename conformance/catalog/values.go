package catalog

import (
	"fmt"
	"strings"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Cases of the values of the device types' fields (published 2.3): each
// type's valid command, and every boundary, allowed form and broken form
// of every field, from the harness's own rule table (package oracle).

func validCases() []Case {
	var cs []Case
	for _, t := range device.Types {
		cs = append(cs, Case{
			ID: "command." + check.Slug(t.Name) + ".valid", Op: device.SendCommand, Type: t.Name,
			Title: "a " + t.Name + " command with every field", Section: "4.1", Contract: "4",
			Build: commandOn(t.Name, nil), Want: Expectation{OK: true, Status: 200}, Tags: []string{"valid"},
		})
	}
	cs = append(cs,
		Case{ID: "message.valid", Op: device.SendMessage, Title: "a valid message (brightness_…=80: a setting name of its own in each run)", Section: "4.2", Contract: "4",
			Build: OnOp(device.SendMessage, nil), Want: Expectation{OK: true, Status: 200}, Tags: []string{"valid"}},
		Case{ID: "update_name.valid", Op: device.UpdateName, Title: "an update of a device's name", Section: "4.3", Contract: "4",
			Build: OnOp(device.UpdateName, nil), Want: Expectation{OK: true, Status: 200}, Tags: []string{"valid"}},
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
		Build: OnOp(device.SendCommand, setTo(device.FieldType, "Toaster")), Want: invalidField(device.FieldType),
	})
	return cs
}

func fieldCases(t *oracle.Type, f *oracle.Field) []Case {
	base := "command." + check.Slug(t.Name) + "." + check.Slug(f.Name)
	title := fmt.Sprintf("a %s command with %s", t.Name, f.Name)
	build := func(change func(*Bench, *Call, device.Format, string) string) func(*Bench, device.Format, string) (Call, string) {
		return commandOn(t.Name, change)
	}
	valid := func(slug, what, value string, w Expectation, tags ...string) Case {
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
			drawn := valid("drawn", "drawn from the run's seed", "", Expectation{OK: true, Status: 200})
			drawn.Build = commandOn(t.Name, func(e *Bench, c *Call, _ device.Format, id string) string {
				c.Set(f.Name, drawNumber(e.Faker(id), f))
				return ""
			})
			cs = append(cs, drawn)
		}
		neg := oracle.Sample{Slug: "negative", Title: `"-1" (negative)`, Value: oracle.Str("-1"), Class: oracle.Edge}
		neg.Verdict = f.Judge(device.XML, neg.Value)
		cs = append(cs, sample(neg))
	case oracle.Decimal:
		drawn := valid("drawn", "a decimal drawn from the run's seed", "", Expectation{OK: true, Status: 200})
		drawn.Build = commandOn(t.Name, func(e *Bench, c *Call, _ device.Format, id string) string {
			c.Set(f.Name, drawNumber(e.Faker(id), f))
			return ""
		})
		cs = append(cs, drawn)
		for _, x := range []struct{ slug, what, v string }{
			{"below-by-a-tenth", "0.1 below the range", f.Format(f.Min - 100)},
			{"above-by-a-tenth", "0.1 above the range", f.Format(f.Max + 100)},
			{"too-low", "below " + withUnit(f.Format(f.Min), f.Unit), f.Format(f.Min - 1000)},
			{"too-high", "above " + withUnit(f.Format(f.Max), f.Unit), f.Format(f.Max + 1000)},
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
		Build: commandOn(t.Name, func(_ *Bench, c *Call, _ device.Format, _ string) string {
			c.Keep(device.FieldSN, device.FieldType)
			return ""
		}),
		Want: Expectation{Status: 400, Codes: []string{device.CodeMissingField}, Field: t.Fields[0].Name}, Tags: []string{"edge"},
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
			Want:  Expectation{Status: 400, Codes: []string{device.CodeUnexpectedField}, Field: fo.Name},
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
			Build: commandOn(t.Name, func(_ *Bench, c *Call, _ device.Format, _ string) string {
				for i := range c.Fields {
					if c.Fields[i].Name == fn.Name {
						c.Fields[i].Wire = fn.Name
					}
				}
				return ""
			}),
			Want: Expectation{Status: 400, Codes: []string{device.CodeUnexpectedField}, Field: fn.Name, Literal: true}, Tags: []string{"edge"},
		})
	}
	// The device's type named wrongly: the first other type, with its fields.
	cs = append(cs, Case{
		ID: slug + ".type-mismatch", Op: device.SendCommand, Type: t.Name, Section: "4.1", Contract: "3",
		Title: "a command to a " + t.Name + " that names another type",
		Build: func(e *Bench, f device.Format, id string) (Call, string) {
			d, ok := e.Device(t.Name)
			if !ok {
				return Call{}, "the fleet has no " + t.Name + ": not covered"
			}
			for _, o := range oracle.Types {
				if o != t && !sameFields(o, t) {
					c := e.Base(device.SendCommand, d.SN, o.Name)
					c.Type = t.Name
					return c, ""
				}
			}
			return Call{}, "no other type to name"
		},
		Want: Expectation{Status: 409, Codes: []string{device.CodeTypeMismatch}, Field: device.FieldType}, Tags: []string{"edge"},
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

// withUnit is a number and its unit, if it has one: "-50 °C".
func withUnit(n, unit string) string {
	if unit == "" {
		return n
	}
	return n + " " + unit
}
