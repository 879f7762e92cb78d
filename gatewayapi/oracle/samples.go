package oracle

import (
	"math/rand"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Class is why a sample exists.
type Class uint8

const (
	// Edge is a boundary value: the boundary itself and one smallest step
	// inside it, and one step outside it, on each side.
	Edge Class = iota + 1
	// Form is a valid value written in one of the forms a rule allows.
	Form
	// Broken is a value that breaks the rule's grammar in one way.
	Broken
)

// Sample is one value of a field with the oracle's verdict on it.
type Sample struct {
	// Slug is stable and unique among the field's samples: check IDs are
	// built from it.
	Slug string
	// Title describes the value: `"101" (one above the range)`; What is
	// the part in brackets alone, "one above the range", for a value
	// derived from another at run time.
	Title, What string
	Value       Value
	Class       Class
	// Verdict is Judge's, in XML, or in JSON for a value only JSON can
	// carry (and, for the format argument, in the format base names); a
	// sample is never Open.
	Verdict Verdict
}

// mk judges v and builds the sample; Open samples are left out by the
// generators' callers (keep).
func (f *Field) mk(class Class, slug, what string, v Value, base string) Sample {
	format := device.XML
	if v.JSONOnly() || f.Kind == FormatName && base == "json" {
		format = device.JSON
	}
	t := title(v.Raw)
	if v.Kind != String {
		t = "JSON " + v.Raw
		if len(v.Raw) > 24 {
			t = "JSON " + v.Raw[:20] + "…"
		}
	}
	if what != "" {
		t += " (" + what + ")"
	}
	if what == "" {
		what = strings.TrimPrefix(t, "JSON ")
		if v.Kind == String {
			what = "the value " + t
		} else {
			what = "the JSON value " + what
		}
	}
	return Sample{Slug: slug, Title: t, What: what, Value: v, Class: class, Verdict: f.Judge(format, v)}
}

// keep drops the samples the texts leave open and repeated slugs.
func keep(ss []Sample) []Sample { return pick(ss, false) }

// pick keeps the samples whose verdict is Open (open) or not, each slug
// once.
func pick(ss []Sample, open bool) []Sample {
	var out []Sample
	seen := map[string]bool{}
	for _, s := range ss {
		if s.Verdict.Open != open || seen[s.Slug] {
			continue
		}
		seen[s.Slug] = true
		out = append(out, s)
	}
	return out
}

// OpenForms are the field's samples that neither text decides (the
// CONTRACT's preamble: "a form that neither text forbids is open"): the
// harness probes them (INFO) and never fails the answer, and gwsim
// --open-forms accept reads each the other way from its default. base is
// as for Forms and Broken.
func (f *Field) OpenForms(base string) []Sample {
	return pick(append(append(f.edges(), f.forms(base)...), f.broken(base)...), true)
}

// Slug of a number: "101", "minus-1", "99.999" becomes "99_999".
func numSlug(s string) string {
	s = strings.ReplaceAll(s, ".", "_")
	if strings.HasPrefix(s, "-") {
		return "minus-" + s[1:]
	}
	return s
}

// Edges are the field's boundaries: each boundary value and one smallest
// step inside it, and one step outside it, on each side. An Integer range
// of at most 4 values is given whole. A Decimal's step is Step (0.001). A
// Text field's length bound is tried at MaxLen and MaxLen+1 characters in
// ASCII, two-, three- and four-byte UTF-8 and with combining characters
// (each code point is a character), and at 1 and 0 characters. Fields
// without a range have none.
func (f *Field) Edges() []Sample { return keep(f.edges()) }

func (f *Field) edges() []Sample {
	var ss []Sample
	switch f.Kind {
	case Integer:
		add := func(n int64, what string) {
			s := f.Format(n)
			ss = append(ss, f.mk(Edge, numSlug(s), what, Str(s), ""))
		}
		add(f.Min-1, "one below the range")
		if f.Max-f.Min <= 3 {
			for n := f.Min; n <= f.Max; n++ {
				add(n, "in the range "+f.RangeText())
			}
		} else {
			add(f.Min, "the lowest")
			add(f.Min+1, "one above the lowest")
			add(f.Max-1, "one below the highest")
			add(f.Max, "the highest")
		}
		add(f.Max+1, "one above the range")
	case Decimal:
		add := func(slug string, n int64, what string) {
			ss = append(ss, f.mk(Edge, slug, what, Str(f.Format(n)), ""))
		}
		add("below-by-a-step", f.Min-1, "one step of 0.001 below the range")
		add("lowest", f.Min, "the lowest")
		add("above-lowest-by-a-step", f.Min+1, "one step above the lowest")
		add("below-highest-by-a-step", f.Max-1, "one step below the highest")
		add("highest", f.Max, "the highest")
		add("above-by-a-step", f.Max+1, "one step of 0.001 above the range")
	case Text:
		n := f.MaxLen
		add := func(slug, what string, s string) { ss = append(ss, f.mk(Edge, slug, what, Str(s), "")) }
		add("empty", "empty", "")
		add("one-character", "one character", "x")
		for _, w := range textWidths {
			add("longest"+w.slug, strconv.Itoa(n)+" characters"+w.what, w.text(n))
			add("too-long"+w.slug, strconv.Itoa(n+1)+" characters"+w.what, w.text(n+1))
		}
		if f.Trim {
			add("longest-padded", strconv.Itoa(n)+" characters between spaces, trimmed", "  "+w0.text(n)+"  ")
			add("only-spaces", "only spaces, empty after trimming", "   ")
		}
	}
	return ss
}

// textWidth builds texts of n characters of one kind.
type textWidth struct {
	slug, what string
	text       func(n int) string
}

var w0 = textWidth{"", "", func(n int) string { return strings.Repeat("n", n) }}

// repeatRunes is n characters cycling through s's code points.
func repeatRunes(s string, n int) string {
	rs := []rune(s)
	out := make([]rune, n)
	for i := range out {
		out[i] = rs[i%len(rs)]
	}
	return string(out)
}

var textWidths = []textWidth{
	w0,
	{"-two-byte", ", each two bytes in UTF-8", func(n int) string { return repeatRunes("éüñø", n) }},
	{"-three-byte", ", each three bytes in UTF-8", func(n int) string { return repeatRunes("台所灯光", n) }},
	{"-four-byte", ", each four bytes in UTF-8 (two UTF-16 units)", func(n int) string { return repeatRunes("💡🔥𝄞😀", n) }},
	// e followed by U+0301 COMBINING ACUTE ACCENT: two characters that
	// show as one.
	{"-combining", ", every other one a combining accent", func(n int) string { return repeatRunes("e\u0301", n) }},
}

// Forms are valid values of the field written in each form its rule
// allows; base is the value the request would carry (a hex id, the
// body's format name for format), for forms derived from it.
func (f *Field) Forms(base string) []Sample { return keep(f.forms(base)) }

func (f *Field) forms(base string) []Sample {
	s := &sampler{f: f, class: Form, format: base}
	switch f.Kind {
	case Enum:
		s.formsEnum()
	case Integer:
		s.formsInteger()
	case Decimal:
		s.formsDecimal()
	case Text:
		s.formsText()
	case Hex:
		s.formsHex(base)
	case Setting:
		s.formsSetting()
	case Token:
		s.add("other-word", "another word than message", Str("alert"))
		s.add("dotted", "with . _ -", Str("sensor.alert_2-b"))
		s.add("colon", "with a colon", Str("sensor:alert"))
	case FormatName:
		s.add("matching", "naming the body's format", Str(base))
	}
	return s.ss
}

// formsEnum writes each allowed value as listed and in each case.
func (s *sampler) formsEnum() {
	f := s.f
	for _, w := range f.Values {
		slug := valueSlug(w)
		s.add(slug, "", Str(w))
		s.add(slug+".lower-case", "lower case", Str(strings.ToLower(w)))
		s.add(slug+".upper-case", "upper case", Str(strings.ToUpper(w)))
		s.add(slug+".mixed-case", "mixed case", Str(swapCase(w)))
	}
}

// formsInteger writes a number of the range with a sign, leading zeros and
// as a JSON number in each syntax; the value decides (CONTRACT 2).
func (s *sampler) formsInteger() {
	f := s.f
	mid := f.Format((f.Min + f.Max + 1) / 2)
	s.add("plus-sign", "with a plus sign", Str("+"+mid))
	s.add("leading-zeros", "with leading zeros", Str("00"+mid))
	s.add("json-number", "as a JSON number", Num(f.Format(f.Max)))
	s.add("json-number-lowest", "the lowest, as a JSON number", Num(f.Format(f.Min)))
	// CONTRACT 2: any JSON number syntax, the value decides.
	s.add("json-number-zero-fraction", "a JSON number with .0", Num(mid+".0"))
	s.add("json-number-exponent", "a JSON number in exponent notation", Num(mid+"e0"))
	if hi := f.Format(f.Max); len(hi) > 1 {
		s.add("json-number-exponent-fraction", "a whole JSON number written with a fraction and an exponent", Num(hi[:1]+"."+hi[1:]+"e"+strconv.Itoa(len(hi)-1)))
	}
}

// formsDecimal writes decimals around a whole number the range holds with
// room to spare, as text and as JSON numbers.
func (s *sampler) formsDecimal() {
	f := s.f
	// Written around a whole number w the range holds with room to
	// spare (21 for the thermostat points); zero and the negative
	// forms only where the range holds them.
	w := f.decimalWhole()
	s.add("integer", "a whole number", Str(w))
	s.add("fraction", "one decimal", Str(w+".5"))
	s.add("three-decimals", "three decimals", Str(w+".125"))
	s.add("many-decimals", "nine decimals, finer than the step", Str(w+".123456789"))
	s.add("trailing-zeros", "with trailing zeros", Str(w+".500"))
	if f.holds(0) {
		s.add("zero", "", Str("0"))
	}
	if f.holds(-5500) {
		s.add("negative", "negative", Str("-5.5"))
	}
	if f.holds(0) {
		s.add("negative-zero", "minus zero", Str("-0"))
	}
	if !strings.HasPrefix(w, "-") {
		s.add("plus-sign", "with a plus sign", Str("+"+w+".5"))
		s.add("leading-zeros", "with leading zeros", Str("0"+w+".5"))
	}
	s.add("json-number", "as a JSON number", Num(f.Format(f.decimalWholeN()+1500)))
	if f.holds(-5500) {
		s.add("json-number-negative", "a negative JSON number", Num("-5.5"))
	}
	s.add("json-number-integer", "a whole JSON number", Num(w))
	if len(w) > 1 && w[0] != '-' {
		s.add("json-number-exponent", "a JSON number in exponent notation", Num(w[:len(w)-1]+"."+w[len(w)-1:]+"e1"))
	}
	s.add("json-number-upper-exponent", "a JSON number with E and a signed exponent", Num(w+"5E-1"))
	// Forms neither text decides (Open): digits on one side of the
	// point only.
	if f.holds(500) {
		s.add("point-first", "digits after the point only", Str(".5"))
	}
	s.add("point-last", "digits before the point only", Str(w+"."))
}

// formsText writes texts beyond the example: other scripts, emoji,
// combining accents, inner spaces, punctuation and padding.
func (s *sampler) formsText() {
	f := s.f
	s.add(valueSlug(f.Example), "", Str(f.Example))
	if !f.Trim {
		s.add("other-word", "another word than the example", Str("eco"))
	}
	s.add("non-ascii", "in other scripts", Str("Küche Licht 台所"))
	s.add("emoji", "with an emoji outside the BMP", Str("Lamp 💡"))
	s.add("combining", "with a combining accent", Str("Cafe\u0301 light"))
	s.add("inner-spaces", "with spaces inside", Str("Hall  Light 2"))
	s.add("punctuation", "with punctuation", Str(`Hall's "big" <lamp> & co.`))
	if f.Trim {
		s.add("padded", "with spaces around, stored trimmed", Str("  Porch Light  "))
	} else {
		s.add("padded", "with spaces around", Str(" eco "))
	}
}

// formsHex writes the request's id in upper and mixed case.
func (s *sampler) formsHex(base string) {
	s.add("upper-case", "in upper case", Str(strings.ToUpper(base)))
	if len(strings.Map(hexLetter, base)) >= 2 {
		// Only an id with two letters or more has a mixed case.
		s.add("mixed-case", "in mixed case", Str(mixCase(base)))
	}
}

// formsSetting writes settings with signed, fractional and zero-padded
// numbers and the setting names the grammar allows.
func (s *sampler) formsSetting() {
	s.add("negative", "a negative number", Str("temperature=-5"))
	s.add("fraction", "a fraction", Str("temperature=21.5"))
	s.add("plus-sign", "a number with a plus sign", Str("temperature=+5"))
	s.add("leading-zeros", "a number with leading zeros", Str("volume=007"))
	s.add("underscore-name", "a setting name that starts with _", Str("_level=1"))
	s.add("dotted-name", "a setting name with . and -", Str("zone.1-level=3"))
	s.add("upper-case-name", "a setting name in capitals", Str("BRIGHTNESS=80"))
}

// valueSlug is a word as an ID part: "On" becomes "on".
func valueSlug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case 'a' <= r && r <= 'z' || '0' <= r && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// swapCase swaps the case of every ASCII letter.
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

// hexLetter keeps the letters of a hex id and drops the rest.
func hexLetter(r rune) rune {
	if 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F' {
		return r
	}
	return -1
}

// mixCase upper-cases every other letter of a hex id and lower-cases the
// others.
func mixCase(s string) string {
	b := []byte(strings.ToLower(s))
	up := true
	for i, c := range b {
		if 'a' <= c && c <= 'f' {
			if up {
				b[i] = c - 'a' + 'A'
			}
			up = !up
		}
	}
	return string(b)
}

// Broken are values that break the field's grammar, each in one way, with
// the refusal the oracle expects. base is the valid value the request
// would carry (a hex id, the timestamp of now, a type name, the body's
// format name); the breaks are derived from it so that the break is the
// only fault.
func (f *Field) Broken(base string) []Sample { return keep(f.broken(base)) }

func (f *Field) broken(base string) []Sample {
	s := &sampler{f: f, class: Broken, format: base}
	switch f.Kind {
	case Hex:
		s.brokenHex(base)
	case Timestamp:
		s.brokenTimestamp(base)
	case Enum:
		s.brokenEnum(base)
	case Integer:
		s.brokenInteger()
	case Decimal:
		s.brokenDecimal()
	case Text:
		s.brokenText(base)
	case Setting:
		s.brokenSetting()
	case Token:
		s.brokenToken(base)
	case TypeName:
		s.brokenTypeName(base)
	case FormatName:
		s.brokenFormatName(base)
	case Key:
		s.jsonTypes("an-api-key", "12345")
	}
	return s.ss
}

// sampler builds a field's samples of one class. format is the base the
// caller gave, which mk reads for a format name's verdict, even where the
// breaks derive from another value.
type sampler struct {
	f      *Field
	class  Class
	format string
	ss     []Sample
}

// add judges v and keeps it as a sample.
func (s *sampler) add(slug, what string, v Value) {
	s.ss = append(s.ss, s.f.mk(s.class, slug, what, v, s.format))
}

// jsonTypes gives the value in JSON types other than a string: a number
// (asNumber, unless empty), a boolean, null, and base in an array and an
// object.
func (s *sampler) jsonTypes(base, asNumber string) {
	if asNumber != "" {
		s.add("json-number", "a JSON number", Num(asNumber))
	}
	s.add("json-true", "a JSON boolean", Lit("true"))
	s.add("json-null", "JSON null", Lit("null"))
	s.add("json-array", "a JSON array", Lit(`["`+jsonEscape(base)+`"]`))
	s.add("json-object", "a JSON object", Lit(`{"value":"`+jsonEscape(base)+`"}`))
}

// spaces pads base with a space on either side, and empties it.
func (s *sampler) spaces(base string) {
	s.add("leading-space", "with a leading space", Str(" "+base))
	s.add("trailing-space", "with a trailing space", Str(base+" "))
	s.add("empty", "empty", Str(""))
}

// brokenHex breaks the request's id: its length, one character outside
// the alphabet on each side of each class, separators and prefixes.
func (s *sampler) brokenHex(base string) {
	n := len(base)
	last := func(r string) string { return base[:n-1] + r }
	s.add("short", "one character short", Str(base[:n-1]))
	s.add("long", "one character too long", Str(base+"0"))
	// One character outside the alphabet at each class around it.
	s.add("not-hex", "g, the letter after f", Str(last("g")))
	s.add("not-hex-upper", "G, the capital after F", Str(last("G")))
	s.add("colon", ":, the character after 9", Str(last(":")))
	s.add("slash", "/, the character before 0", Str(last("/")))
	s.add("at-sign", "@, the character before A", Str(last("@")))
	s.add("backtick", "`, the character before a", Str(last("`")))
	s.add("inner-space", "a space in place of a character", Str(base[:n/2]+" "+base[n/2+1:]))
	s.add("fullwidth-digit", "a fullwidth digit, one character but three bytes", Str(last("０")))
	s.add("0x-prefix", "0x in place of the first two characters", Str("0x"+base[2:]))
	s.add("separators", "with a separator every two characters", Str(pairs(base, ":")))
	if n == 32 {
		s.add("uuid-form", "written as a UUID, with dashes", Str(base[:8]+"-"+base[8:12]+"-"+base[12:16]+"-"+base[16:20]+"-"+base[20:]))
	}
	s.spaces(base)
	s.jsonTypes(base, digitsOf(n))
}

// brokenTimestamp breaks the timestamp of now: its length, each field out
// of its range, other date notations and digits of other scripts.
func (s *sampler) brokenTimestamp(base string) {
	d := func(i int, s string) string { return base[:i] + s + base[i+len(s):] }
	s.add("13-digits", "13 digits", Str(base[:13]))
	s.add("15-digits", "15 digits", Str(base+"0"))
	s.add("month-13", "month 13", Str(d(4, "13")))
	s.add("month-00", "month 00", Str(d(4, "00")))
	s.add("day-00", "day 00", Str(d(6, "00")))
	s.add("day-32", "day 32", Str(d(6, "32")))
	s.add("hour-24", "hour 24", Str(d(8, "24")))
	s.add("minute-60", "minute 60", Str(d(10, "60")))
	s.add("second-61", "second 61", Str(d(12, "61")))
	s.add("february-30", "30 February, no real date", Str(d(4, "0230")))
	s.add("iso-8601", "ISO 8601 with separators", Str(base[:4]+"-"+base[4:6]+"-"+base[6:8]+"T"+base[8:10]+":"+base[10:12]+":"+base[12:]))
	s.add("with-t", "a T between date and time", Str(base[:8]+"T"+base[8:]))
	s.add("zone-suffix", "with a Z after it", Str(base+"Z"))
	s.add("fraction", "with a fraction of a second", Str(base+".5"))
	s.add("unix-seconds", "seconds since 1970", Str("1767268800"))
	s.add("letter", "a letter in place of its last digit", Str(base[:13]+"a"))
	s.add("second-60", "second 60 (a leap second)", Str(d(12, "60")))
	s.add("plus-sign", "a plus sign in place of the first digit", Str("+"+base[1:]))
	s.add("fullwidth-digit", "a fullwidth digit, one character but three bytes", Str(base[:13]+"５"))
	s.add("arabic-indic-digit", "an Arabic-Indic digit", Str(base[:13]+"٥"))
	s.spaces(base)
	s.jsonTypes(base, base)
}

// brokenEnum gives values that are not one of the list but look like one:
// padded, cut, lengthened, lookalike letters, ligatures, its index.
func (s *sampler) brokenEnum(base string) {
	f := s.f
	s.add("not-allowed", "not one of "+strings.Join(f.Values, ", "), Str("Maybe"))
	s.add("empty", "empty", Str(""))
	s.add("leading-space", "with a leading space", Str(" "+base))
	s.add("trailing-space", "with a trailing space", Str(base+" "))
	s.add("prefix", "its first letter alone", Str(base[:1]))
	s.add("suffix", "with a letter after it", Str(base+"x"))
	s.add("cyrillic-letter", "its first letter a Cyrillic lookalike", Str(cyrillic(base)))
	s.add("fullwidth", "in fullwidth letters", Str(fullwidth(base)))
	for _, w := range f.Values {
		if strings.Contains(w, "ff") {
			s.add("ligature", w+" with ff written as the ligature ﬀ", Str(strings.Replace(w, "ff", "ﬀ", 1)))
		}
	}
	s.add("index", "its position in the list as a string", Str("1"))
	s.jsonTypes(base, "1")
}

// brokenInteger gives numbers that are not integers of the range, as
// text and as JSON.
func (s *sampler) brokenInteger() {
	f := s.f
	mid := f.Format((f.Min + f.Max + 1) / 2)
	lo := f.Format(f.Min)
	s.add("fraction", "not an integer", Str(lo+".5"))
	s.add("zero-fraction", "an integer written with .0", Str(mid+".0"))
	s.add("exponent", "exponent notation", Str(mid+"e0"))
	s.add("not-a-number", "", Str("abc"))
	s.add("empty", "empty", Str(""))
	s.add("sign-only", "a sign alone", Str("+"))
	s.add("double-sign", "two signs", Str("--"+mid))
	s.add("inner-space", "a space inside", Str("1 "+mid))
	s.add("leading-space", "with a leading space", Str(" "+mid))
	s.add("trailing-space", "with a trailing space", Str(mid+" "))
	s.add("hex", "hexadecimal", Str("0x"+strconv.FormatInt(f.Max, 16)))
	s.add("fullwidth-digits", "fullwidth digits", Str(fullwidth(mid)))
	s.add("arabic-indic-digits", "Arabic-Indic digits", Str(arabicIndic(mid)))
	s.add("nan", "", Str("NaN"))
	s.add("infinity", "", Str("Infinity"))
	s.add("with-unit", "with a unit", Str(mid+"%"))
	s.add("json-fraction", "a fractional JSON number", Num(lo+".5"))
	s.add("json-exponent-fraction", "a JSON number in exponent notation that is not whole", Num(lo+"5e-1"))
	s.add("json-above-range", "a JSON number above the range", Num(f.Format(f.Max+1)))
	s.add("json-exponent-above-range", "a JSON number in exponent notation above the range", Num(f.Format(f.Max)+"1e0"))
	s.jsonTypes(mid, "")
}

// brokenDecimal gives texts that are not decimals and JSON numbers below
// the range.
func (s *sampler) brokenDecimal() {
	f := s.f
	s.add("not-a-number", "", Str("warm"))
	s.add("nan", "", Str("NaN"))
	s.add("infinity", "", Str("Infinity"))
	s.add("minus-infinity", "", Str("-Infinity"))
	s.add("exponent", "exponent notation", Str("2.1e1"))
	s.add("comma", "a decimal comma", Str("21,5"))
	s.add("two-points", "two decimal points", Str("21.5.1"))
	s.add("point-only", "a point alone", Str("."))
	s.add("sign-only", "a sign alone", Str("-"))
	s.add("double-sign", "two signs", Str("--21"))
	s.add("inner-space", "a space inside", Str("21 .5"))
	s.add("leading-space", "with a leading space", Str(" 21.5"))
	s.add("trailing-space", "with a trailing space", Str("21.5 "))
	s.add("with-unit", "with a unit", Str("21.5C"))
	s.add("hex", "hexadecimal", Str("0x15"))
	s.add("fullwidth-digits", "fullwidth digits", Str("２１.５"))
	s.add("empty", "empty", Str(""))
	s.add("json-below-range", "a JSON number below the range", Num(f.Format(f.Min-1000)))
	s.add("json-exponent-below-range", "a JSON number in exponent notation below the range", Num(f.Format(f.Min-1000)+"0e-1"))
	s.jsonTypes(f.decimalWhole()+".5", "")
}

// brokenText puts control characters inside a text and gives other JSON
// types.
func (s *sampler) brokenText(base string) {
	s.add("control-character", "a tab inside", Str("Hall\tLight"))
	s.add("newline", "a line feed inside", Str("Hall\nLight"))
	s.add("delete-character", "U+007F DELETE inside", Str("Hall\u007fLight"))
	s.add("next-line", "U+0085 NEXT LINE inside", Str("Hall\u0085Light"))
	s.jsonTypes(base, "42")
}

// brokenSetting breaks the name=number grammar of a setting in each part.
func (s *sampler) brokenSetting() {
	s.add("no-equals", "no =", Str("brightness"))
	s.add("no-name", "no setting name", Str("=80"))
	s.add("not-a-number", "not a number", Str("brightness=high"))
	s.add("empty", "empty", Str(""))
	s.add("no-number", "nothing after =", Str("brightness="))
	s.add("two-equals", "two =", Str("brightness=80=90"))
	s.add("name-starts-with-digit", "a setting name that starts with a digit", Str("1st_level=5"))
	s.add("space-in-name", "a space in the setting name", Str("trench coat=1"))
	s.add("spaces-around-equals", "spaces around =", Str("brightness = 80"))
	s.add("non-ascii-name", "a letter outside ASCII in the name", Str("höhe=3"))
	s.add("exponent", "a number in exponent notation", Str("brightness=8e1"))
	s.add("fullwidth-digits", "fullwidth digits", Str("brightness=８０"))
	s.add("hex-number", "a hexadecimal number", Str("brightness=0x50"))
	s.add("nan", "NaN", Str("brightness=NaN"))
	s.add("leading-space", "with a leading space", Str(" brightness=80"))
	s.add("trailing-space", "with a trailing space", Str("brightness=80 "))
	s.jsonTypes("brightness=80", "80")
}

// brokenToken gives tokens that are empty, blank or hold white space.
func (s *sampler) brokenToken(base string) {
	s.add("empty", "empty", Str(""))
	s.add("only-spaces", "only spaces", Str("   "))
	s.add("inner-space", "two words", Str("two words"))
	s.add("tab", "a tab inside", Str("a\tb"))
	s.jsonTypes(base, "1")
}

// brokenTypeName gives an unknown type and the request's type name in
// other cases and with its spaces changed.
func (s *sampler) brokenTypeName(base string) {
	s.add("unknown-type", "no published type", Str("Toaster"))
	s.add("in-lower-case", "in lower case", Str(strings.ToLower(base)))
	s.add("in-upper-case", "in upper case", Str(strings.ToUpper(base)))
	s.add("no-space", "without spaces", Str(strings.ReplaceAll(base, " ", "")))
	s.add("underscore", "with _ for spaces", Str(strings.ReplaceAll(base, " ", "_")))
	s.add("hyphen", "with - for spaces", Str(strings.ReplaceAll(base, " ", "-")))
	s.add("double-space", "with two spaces between words", Str(strings.Replace(base, " ", "  ", 1)))
	s.add("last-word", "its last word alone", Str(base[strings.LastIndex(base, " ")+1:]))
	s.spaces(base)
	s.jsonTypes(base, "1")
}

// brokenFormatName names the other format, an unknown one, none, a media
// type, and the body's format in upper case.
func (s *sampler) brokenFormatName(base string) {
	other := map[string]string{"json": "xml", "xml": "json"}[base]
	s.add("other", "naming the other format", Str(other))
	s.add("unknown", "yaml", Str("yaml"))
	s.add("empty", "empty", Str(""))
	s.add("media-type", "a media type", Str("application/"+base))
	s.add("upper-case", "in upper case", Str(strings.ToUpper(base)))
}

func jsonEscape(s string) string { return jsonEscaper.Replace(s) }

var jsonEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)

func pairs(s, sep string) string {
	var parts []string
	for i := 0; i < len(s); i += 2 {
		parts = append(parts, s[i:min(i+2, len(s))])
	}
	return strings.Join(parts, sep)
}

// digitsOf is n decimal digits, no leading zero: a number of the field's
// length.
func digitsOf(n int) string {
	if n > 15 { // beyond what a JSON number keeps exactly
		n = 15
	}
	return strings.Repeat("7", n)
}

var cyrillicOf = map[rune]rune{'O': 'О', 'o': 'о', 'A': 'А', 'a': 'а', 'C': 'С', 'c': 'с', 'H': 'Н', 'e': 'е', 'E': 'Е'}

func cyrillic(s string) string {
	rs := []rune(s)
	for i, r := range rs {
		if c, ok := cyrillicOf[r]; ok {
			rs[i] = c
			break
		}
	}
	return string(rs)
}

// fullwidth writes ASCII letters and digits in their fullwidth forms.
func fullwidth(s string) string {
	rs := []rune(s)
	for i, r := range rs {
		if r > ' ' && r < 0x7f {
			rs[i] = r - '!' + '！'
		}
	}
	return string(rs)
}

func arabicIndic(s string) string {
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsDigit(r) && r < 0x80 {
			rs[i] = r - '0' + '٠'
		}
	}
	return string(rs)
}

// Draw is a valid value of the field in its plain form, drawn from r: an
// enumerated word in its published case, a number strictly inside the
// range (a Decimal with up to three decimals, at least Margin inside a
// range of the CONTRACT's), a name of a few words, a
// message value <setting>=<number>, a token, or, for a hex field, Len
// lower-case hex digits.
func (f *Field) Draw(r *rand.Rand) string {
	switch f.Kind {
	case Enum:
		return f.Values[r.Intn(len(f.Values))]
	case Integer:
		if f.Max-f.Min < 2 {
			return f.Format(f.Min)
		}
		return f.Format(f.Min + 1 + r.Int63n(f.Max-f.Min-1))
	case Decimal:
		lo, hi := f.Min+1, f.Max-1
		if !f.RangeMust {
			lo, hi = f.Min+Margin, f.Max-Margin
		}
		n := lo + r.Int63n(hi-lo+1)
		// Whole, tenths, hundredths or thousandths: every width of fraction.
		unit := []int64{1000, 100, 10, 1}[r.Intn(4)]
		n -= n % unit
		if n < lo {
			n += unit
		}
		return f.Format(n)
	case Text:
		words := []string{"Hall", "Porch", "Kitchen", "Attic", "Lamp", "Heater", "Fan", "Light", "Küche", "Büro", "台所", "Salón"}
		k := 1 + r.Intn(3)
		parts := make([]string, k)
		for i := range parts {
			parts[i] = words[r.Intn(len(words))]
		}
		s := strings.Join(parts, " ")
		if rs := []rune(s); len(rs) > f.MaxLen {
			s = string(rs[:f.MaxLen])
		}
		return strings.TrimSpace(s)
	case Hex:
		const digits = "0123456789abcdef"
		b := make([]byte, f.Len)
		for i := range b {
			b[i] = digits[r.Intn(16)]
		}
		return string(b)
	case Setting:
		names := []string{"brightness", "temperature", "volume", "humidity", "fan_speed", "eco_mode", "zone.1", "night-level", "_debug"}
		num := strconv.Itoa(r.Intn(2001) - 1000)
		if r.Intn(2) == 0 {
			num += "." + strconv.Itoa(r.Intn(10))
		}
		return names[r.Intn(len(names))] + "=" + num
	case Token:
		return []string{"message", "alert", "notice", "status.update", "config_change"}[r.Intn(5)]
	case TypeName:
		return TypeNames()[r.Intn(len(Types))]
	case Timestamp:
		return time.Unix(1_700_000_000+r.Int63n(100_000_000), 0).UTC().Format(TimestampLayout)
	}
	return f.Example
}

// WindowEdge is a timestamp offset from now at the edge of the window.
type WindowEdge struct {
	Slug, Title string
	// Offset is added to now (truncated to the second) to make the
	// timestamp.
	Offset time.Duration
	// OK: inside the window (CONTRACT 1, SHOULD); else 401 stale_timestamp.
	OK bool
}

// WindowEdges are the timestamps one second inside and one second outside
// the window (CONTRACT 1), in the past and in the future. The offsets are
// whole seconds from now truncated to the second: the timestamp names the
// start of its second, so a harness that sends early in a second is
// judged on the edge it means (see Aligned).
func WindowEdges(window time.Duration) []WindowEdge {
	return []WindowEdge{
		{"past-outside-window-by-a-second", "one second older than the window allows", -window - time.Second, false},
		{"past-inside-window-by-a-second", "one second inside the window, in the past", -window + time.Second, true},
		{"future-inside-window-by-a-second", "one second inside the window, in the future", window - time.Second, true},
		{"future-outside-window-by-a-second", "one second further ahead than the window allows", window + time.Second, false},
	}
}

// Aligned is how long to wait before sending a timestamp at the window's
// edge so that the second it names has just begun: a timestamp one second
// inside the window must not slip outside it while the request travels.
// It is zero early in a second.
func Aligned(now time.Time) time.Duration {
	frac := time.Duration(now.Nanosecond())
	if frac < 600*time.Millisecond {
		return 0
	}
	return time.Second - frac
}

// DrawForm draws a valid value of the field in any form its rule allows:
// the plain form of Draw, or a drawn value written with a plus sign,
// as a JSON number in any syntax (numbers), in another letter case
// (enumerated words, hex ids), padded (name), or one of Forms' values. The
// value may be valid by the CONTRACT only: Judge says at which level.
// format is the body's format (a JSON number only in JSON; the format
// argument names it).
func (f *Field) DrawForm(r *rand.Rand, format device.Format) Value {
	v := f.Draw(r)
	if f.Kind == FormatName {
		v = format.String()
	}
	var cands []Value
	cands = append(cands, Str(v))
	switch f.Kind {
	case Integer, Decimal:
		// A sign or leading zeros are open (neither text decides them);
		// a JSON number in any syntax is CONTRACT 2's.
		if format == device.JSON {
			cands = append(cands, Num(v))
		}
	case Enum:
		cands = append(cands, Str(strings.ToLower(v)), Str(strings.ToUpper(v)), Str(swapCase(v)))
	case Hex:
		cands = append(cands, Str(strings.ToUpper(v)), Str(mixCase(v)))
	case Text:
		if f.Trim {
			cands = append(cands, Str(" "+v+"  "))
		}
	}
	for _, s := range f.Forms(v) {
		if !s.Value.JSONOnly() || format == device.JSON {
			cands = append(cands, s.Value)
		}
	}
	for i := 0; i < 8; i++ {
		c := cands[r.Intn(len(cands))]
		if j := f.Judge(format, c); j.OK && !j.Open {
			return c
		}
	}
	return Str(v)
}

// holds reports whether n (in units of Step) is inside the field's range.
func (f *Field) holds(n int64) bool { return f.Min <= n && n <= f.Max }

// decimalWholeN is the whole number (in units of Step) a Decimal field's
// forms are written around: 21 when the range holds 21 to 22.5 (a room
// temperature, the thermostat points' forms), otherwise the whole number
// in the middle of the range, not below zero when the range holds zero
// (the sign and leading-zero forms are written for w of zero or more).
func (f *Field) decimalWholeN() int64 {
	if f.holds(21000) && f.holds(22500) {
		return 21000
	}
	mid := (f.Min + f.Max) / 2 / 1000 * 1000
	if mid < 0 && f.holds(0) && f.holds(1500) {
		mid = 0
	}
	return mid
}

// decimalWhole is decimalWholeN written out ("21").
func (f *Field) decimalWhole() string { return f.Format(f.decimalWholeN()) }
