package catalog

import (
	"strconv"
	"strings"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Cases from the oracle's samples: every boundary one
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

type pickKey struct {
	f    *oracle.Field
	base string
}

// maxPicks bounds the lists Bench.Pick keeps: a run derives its samples
// from a dozen values (the devices' mac and sn, the types, the formats, a
// few timestamps and signs), and a target whose clock or sign changes
// every request is derived afresh once the bound is reached.
const maxPicks = 256

// Pick is the sample of f with the given slug, derived from base. The
// samples derived from one value are kept for the rest of the run: two
// checks in three pick their value at run time from a dozen such lists,
// and each list takes every form the field's grammar breaks to build.
func (b *Bench) Pick(f *oracle.Field, base, slug string) (oracle.Sample, bool) {
	k := pickKey{f, base}
	b.picksMu.Lock()
	bySlug, ok := b.picks[k]
	b.picksMu.Unlock()
	if !ok {
		ss := samplesOf(f, base)
		bySlug = make(map[string]oracle.Sample, len(ss))
		for _, s := range ss {
			if _, dup := bySlug[s.Slug]; !dup { // the first sample listed with a slug
				bySlug[s.Slug] = s
			}
		}
		b.picksMu.Lock()
		if b.picks == nil {
			b.picks = map[pickKey]map[string]oracle.Sample{}
		}
		if len(b.picks) < maxPicks {
			b.picks[k] = bySlug
		}
		b.picksMu.Unlock()
	}
	s, ok := bySlug[slug]
	return s, ok
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
	c.Build = OnOp(op, func(e *Bench, c *Call, format device.Format, _ string) string {
		if f.Name == device.FieldSign {
			c.KeepSign = true
			if s.Verdict.OK { // a valid form of the real sign
				if skip := e.SignAs(c, format, e.Target.Key); skip != "" {
					return skip
				}
			}
		}
		base := c.Get(f.Name)
		if f.Name == device.FieldDeviceID {
			base = c.Get(device.FieldSN)
		}
		if f.Kind == oracle.FormatName {
			base = format.String()
		}
		got, ok := e.Pick(f, base, slug)
		if !ok {
			return check.NoSample + slug + " of " + f.Name + " derived from " + base
		}
		SetValue(c, f.Name, got.Value)
		if f.Name == device.FieldSign && s.Verdict.OK && c.Stamp != nil {
			// The same form of the sign of another timestamp.
			c.Resign = func(ts string) (string, bool) {
				at := *c
				at.Fields = append([]Field(nil), c.Fields...)
				at.Set(device.FieldTimestamp, ts)
				if e.SignAs(&at, format, e.Target.Key) != "" {
					return "", false
				}
				moved, ok := e.Pick(f, at.Get(device.FieldSign), slug)
				return moved.Value.Raw, ok
			}
		}
		if f.Name == device.FieldSign {
			c.Tamper = nil // another form of the sign: no line makes it afresh
		}
		return ""
	})
	return c
}

// wantOf is a case's expectation from the oracle's verdict on its value.
func wantOf(v oracle.Verdict, field string) Expectation {
	switch {
	case v.OK && v.Must:
		return Expectation{OK: true, Status: 200}
	case v.OK:
		return Expectation{ContractOK: true, Status: 200}
	}
	return Expectation{Must: v.Must, Status: v.Status, Codes: append([]string{v.Code}, v.Also...), Field: field, Quote: v.Quote}
}

// SetValue sets a field to a sample's value: a string, a JSON number or
// another JSON value as written.
func SetValue(c *Call, name string, v oracle.Value) {
	switch v.Kind {
	case oracle.Number:
		c.SetNum(name, v.Raw)
	case oracle.Other:
		c.Set(name, v.Raw)
		c.SetRaw(name)
	default:
		c.Set(name, v.Raw)
	}
}

// sampleTag names a sample's class in the case's tags.
var sampleTag = map[oracle.Class]string{oracle.Edge: "boundary", oracle.Form: "form", oracle.Broken: "broken"}

// sampleCase is a case that sends one sample of a field, changed by set in
// the request build makes; the oracle's verdict is the expectation.
func sampleCase(id, title, section, contract string, op device.Operation, field string, s oracle.Sample,
	build func(change func(*Bench, *Call, device.Format, string) string) func(*Bench, device.Format, string) (Call, string)) Case {
	c := Case{ID: id + "." + s.Slug, Op: op, Title: title + " " + s.Title, Section: section, Contract: contract,
		Want: wantOf(s.Verdict, field), Tags: []string{sampleTag[s.Class]},
		Build: build(func(_ *Bench, c *Call, _ device.Format, _ string) string { SetValue(c, field, s.Value); return "" })}
	if s.Value.JSONOnly() {
		c.Formats = []device.Format{device.JSON}
	}
	return c
}
