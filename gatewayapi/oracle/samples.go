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
	var ss []Sample
	add := func(slug, what string, v Value) { ss = append(ss, f.mk(Form, slug, what, v, base)) }
	switch f.Kind {
	case Enum:
		for _, w := range f.Values {
			s := valueSlug(w)
			add(s, "", Str(w))
			add(s+".lower-case", "lower case", Str(strings.ToLower(w)))
			add(s+".upper-case", "upper case", Str(strings.ToUpper(w)))
			add(s+".mixed-case", "mixed case", Str(swapCase(w)))
		}
	case Integer:
		mid := f.Format((f.Min + f.Max + 1) / 2)
		add("plus-sign", "with a plus sign", Str("+"+mid))
		add("leading-zeros", "with leading zeros", Str("00"+mid))
		add("json-number", "as a JSON number", Num(f.Format(f.Max)))
		add("json-number-lowest", "the lowest, as a JSON number", Num(f.Format(f.Min)))
		// CONTRACT 2: any JSON number syntax, the value decides.
		add("json-number-zero-fraction", "a JSON number with .0", Num(mid+".0"))
		add("json-number-exponent", "a JSON number in exponent notation", Num(mid+"e0"))
		if hi := f.Format(f.Max); len(hi) > 1 {
			add("json-number-exponent-fraction", "a whole JSON number written with a fraction and an exponent", Num(hi[:1]+"."+hi[1:]+"e"+strconv.Itoa(len(hi)-1)))
		}
	case Decimal:
		// Written around a whole number w the range holds with room to
		// spare (21 for the thermostat points); zero and the negative
		// forms only where the range holds them.
		w := f.decimalWhole()
		add("integer", "a whole number", Str(w))
		add("fraction", "one decimal", Str(w+".5"))
		add("three-decimals", "three decimals", Str(w+".125"))
		add("many-decimals", "nine decimals, finer than the step", Str(w+".123456789"))
		add("trailing-zeros", "with trailing zeros", Str(w+".500"))
		if f.holds(0) {
			add("zero", "", Str("0"))
		}
		if f.holds(-5500) {
			add("negative", "negative", Str("-5.5"))
		}
		if f.holds(0) {
			add("negative-zero", "minus zero", Str("-0"))
		}
		if !strings.HasPrefix(w, "-") {
			add("plus-sign", "with a plus sign", Str("+"+w+".5"))
			add("leading-zeros", "with leading zeros", Str("0"+w+".5"))
		}
		add("json-number", "as a JSON number", Num(f.Format(f.decimalWholeN()+1500)))
		if f.holds(-5500) {
			add("json-number-negative", "a negative JSON number", Num("-5.5"))
		}
		add("json-number-integer", "a whole JSON number", Num(w))
		if len(w) > 1 && w[0] != '-' {
			add("json-number-exponent", "a JSON number in exponent notation", Num(w[:len(w)-1]+"."+w[len(w)-1:]+"e1"))
		}
		add("json-number-upper-exponent", "a JSON number with E and a signed exponent", Num(w+"5E-1"))
		// Forms neither text decides (Open): digits on one side of the
		// point only.
		if f.holds(500) {
			add("point-first", "digits after the point only", Str(".5"))
		}
		add("point-last", "digits before the point only", Str(w+"."))
	case Text:
		add(valueSlug(f.Example), "", Str(f.Example))
		if !f.Trim {
			add("other-word", "another word than the example", Str("eco"))
		}
		add("non-ascii", "in other scripts", Str("Küche Licht 台所"))
		add("emoji", "with an emoji outside the BMP", Str("Lamp 💡"))
		add("combining", "with a combining accent", Str("Cafe\u0301 light"))
		add("inner-spaces", "with spaces inside", Str("Hall  Light 2"))
		add("punctuation", "with punctuation", Str(`Hall's "big" <lamp> & co.`))
		if f.Trim {
			add("padded", "with spaces around, stored trimmed", Str("  Porch Light  "))
		} else {
			add("padded", "with spaces around", Str(" eco "))
		}
	case Hex:
		add("upper-case", "in upper case", Str(strings.ToUpper(base)))
		if len(strings.Map(hexLetter, base)) >= 2 {
			// Only an id with two letters or more has a mixed case.
			add("mixed-case", "in mixed case", Str(mixCase(base)))
		}
	case Setting:
		add("negative", "a negative number", Str("temperature=-5"))
		add("fraction", "a fraction", Str("temperature=21.5"))
		add("plus-sign", "a number with a plus sign", Str("temperature=+5"))
		add("leading-zeros", "a number with leading zeros", Str("volume=007"))
		add("underscore-name", "a setting name that starts with _", Str("_level=1"))
		add("dotted-name", "a setting name with . and -", Str("zone.1-level=3"))
		add("upper-case-name", "a setting name in capitals", Str("BRIGHTNESS=80"))
	case Token:
		add("other-word", "another word than message", Str("alert"))
		add("dotted", "with . _ -", Str("sensor.alert_2-b"))
		add("colon", "with a colon", Str("sensor:alert"))
	case FormatName:
		add("matching", "naming the body's format", Str(base))
	}
	return ss
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
	var ss []Sample
	format := base
	add := func(slug, what string, v Value) { ss = append(ss, f.mk(Broken, slug, what, v, format)) }
	jsonTypes := func(asNumber string) {
		if asNumber != "" {
			add("json-number", "a JSON number", Num(asNumber))
		}
		add("json-true", "a JSON boolean", Lit("true"))
		add("json-null", "JSON null", Lit("null"))
		add("json-array", "a JSON array", Lit(`["`+jsonEscape(base)+`"]`))
		add("json-object", "a JSON object", Lit(`{"value":"`+jsonEscape(base)+`"}`))
	}
	space := func() {
		add("leading-space", "with a leading space", Str(" "+base))
		add("trailing-space", "with a trailing space", Str(base+" "))
		add("empty", "empty", Str(""))
	}
	switch f.Kind {
	case Hex:
		n := len(base)
		last := func(r string) string { return base[:n-1] + r }
		add("short", "one character short", Str(base[:n-1]))
		add("long", "one character too long", Str(base+"0"))
		// One character outside the alphabet at each class around it.
		add("not-hex", "g, the letter after f", Str(last("g")))
		add("not-hex-upper", "G, the capital after F", Str(last("G")))
		add("colon", ":, the character after 9", Str(last(":")))
		add("slash", "/, the character before 0", Str(last("/")))
		add("at-sign", "@, the character before A", Str(last("@")))
		add("backtick", "`, the character before a", Str(last("`")))
		add("inner-space", "a space in place of a character", Str(base[:n/2]+" "+base[n/2+1:]))
		add("fullwidth-digit", "a fullwidth digit, one character but three bytes", Str(last("０")))
		add("0x-prefix", "0x in place of the first two characters", Str("0x"+base[2:]))
		add("separators", "with a separator every two characters", Str(pairs(base, ":")))
		if n == 32 {
			add("uuid-form", "written as a UUID, with dashes", Str(base[:8]+"-"+base[8:12]+"-"+base[12:16]+"-"+base[16:20]+"-"+base[20:]))
		}
		space()
		jsonTypes(digitsOf(n))
	case Timestamp:
		d := func(i int, s string) string { return base[:i] + s + base[i+len(s):] }
		add("13-digits", "13 digits", Str(base[:13]))
		add("15-digits", "15 digits", Str(base+"0"))
		add("month-13", "month 13", Str(d(4, "13")))
		add("month-00", "month 00", Str(d(4, "00")))
		add("day-00", "day 00", Str(d(6, "00")))
		add("day-32", "day 32", Str(d(6, "32")))
		add("hour-24", "hour 24", Str(d(8, "24")))
		add("minute-60", "minute 60", Str(d(10, "60")))
		add("second-61", "second 61", Str(d(12, "61")))
		add("february-30", "30 February, no real date", Str(d(4, "0230")))
		add("iso-8601", "ISO 8601 with separators", Str(base[:4]+"-"+base[4:6]+"-"+base[6:8]+"T"+base[8:10]+":"+base[10:12]+":"+base[12:]))
		add("with-t", "a T between date and time", Str(base[:8]+"T"+base[8:]))
		add("zone-suffix", "with a Z after it", Str(base+"Z"))
		add("fraction", "with a fraction of a second", Str(base+".5"))
		add("unix-seconds", "seconds since 1970", Str("1767268800"))
		add("letter", "a letter in place of its last digit", Str(base[:13]+"a"))
		add("second-60", "second 60 (a leap second)", Str(d(12, "60")))
		add("plus-sign", "a plus sign in place of the first digit", Str("+"+base[1:]))
		add("fullwidth-digit", "a fullwidth digit, one character but three bytes", Str(base[:13]+"５"))
		add("arabic-indic-digit", "an Arabic-Indic digit", Str(base[:13]+"٥"))
		space()
		jsonTypes(base)
	case Enum:
		add("not-allowed", "not one of "+strings.Join(f.Values, ", "), Str("Maybe"))
		add("empty", "empty", Str(""))
		add("leading-space", "with a leading space", Str(" "+base))
		add("trailing-space", "with a trailing space", Str(base+" "))
		add("prefix", "its first letter alone", Str(base[:1]))
		add("suffix", "with a letter after it", Str(base+"x"))
		add("cyrillic-letter", "its first letter a Cyrillic lookalike", Str(cyrillic(base)))
		add("fullwidth", "in fullwidth letters", Str(fullwidth(base)))
		for _, w := range f.Values {
			if strings.Contains(w, "ff") {
				add("ligature", w+" with ff written as the ligature ﬀ", Str(strings.Replace(w, "ff", "ﬀ", 1)))
			}
		}
		add("index", "its position in the list as a string", Str("1"))
		jsonTypes("1")
	case Integer:
		mid := f.Format((f.Min + f.Max + 1) / 2)
		lo := f.Format(f.Min)
		add("fraction", "not an integer", Str(lo+".5"))
		add("zero-fraction", "an integer written with .0", Str(mid+".0"))
		add("exponent", "exponent notation", Str(mid+"e0"))
		add("not-a-number", "", Str("abc"))
		add("empty", "empty", Str(""))
		add("sign-only", "a sign alone", Str("+"))
		add("double-sign", "two signs", Str("--"+mid))
		add("inner-space", "a space inside", Str("1 "+mid))
		add("leading-space", "with a leading space", Str(" "+mid))
		add("trailing-space", "with a trailing space", Str(mid+" "))
		add("hex", "hexadecimal", Str("0x"+strconv.FormatInt(f.Max, 16)))
		add("fullwidth-digits", "fullwidth digits", Str(fullwidth(mid)))
		add("arabic-indic-digits", "Arabic-Indic digits", Str(arabicIndic(mid)))
		add("nan", "", Str("NaN"))
		add("infinity", "", Str("Infinity"))
		add("with-unit", "with a unit", Str(mid+"%"))
		add("json-fraction", "a fractional JSON number", Num(lo+".5"))
		add("json-exponent-fraction", "a JSON number in exponent notation that is not whole", Num(lo+"5e-1"))
		add("json-above-range", "a JSON number above the range", Num(f.Format(f.Max+1)))
		add("json-exponent-above-range", "a JSON number in exponent notation above the range", Num(f.Format(f.Max)+"1e0"))
		base = mid
		jsonTypes("")
	case Decimal:
		add("not-a-number", "", Str("warm"))
		add("nan", "", Str("NaN"))
		add("infinity", "", Str("Infinity"))
		add("minus-infinity", "", Str("-Infinity"))
		add("exponent", "exponent notation", Str("2.1e1"))
		add("comma", "a decimal comma", Str("21,5"))
		add("two-points", "two decimal points", Str("21.5.1"))
		add("point-only", "a point alone", Str("."))
		add("sign-only", "a sign alone", Str("-"))
		add("double-sign", "two signs", Str("--21"))
		add("inner-space", "a space inside", Str("21 .5"))
		add("leading-space", "with a leading space", Str(" 21.5"))
		add("trailing-space", "with a trailing space", Str("21.5 "))
		add("with-unit", "with a unit", Str("21.5C"))
		add("hex", "hexadecimal", Str("0x15"))
		add("fullwidth-digits", "fullwidth digits", Str("２１.５"))
		add("empty", "empty", Str(""))
		add("json-below-range", "a JSON number below the range", Num(f.Format(f.Min-1000)))
		add("json-exponent-below-range", "a JSON number in exponent notation below the range", Num(f.Format(f.Min-1000)+"0e-1"))
		base = f.decimalWhole() + ".5"
		jsonTypes("")
	case Text:
		add("control-character", "a tab inside", Str("Hall\tLight"))
		add("newline", "a line feed inside", Str("Hall\nLight"))
		add("delete-character", "U+007F DELETE inside", Str("Hall\u007fLight"))
		add("next-line", "U+0085 NEXT LINE inside", Str("Hall\u0085Light"))
		jsonTypes("42")
	case Setting:
		add("no-equals", "no =", Str("brightness"))
		add("no-name", "no setting name", Str("=80"))
		add("not-a-number", "not a number", Str("brightness=high"))
		add("empty", "empty", Str(""))
		add("no-number", "nothing after =", Str("brightness="))
		add("two-equals", "two =", Str("brightness=80=90"))
		add("name-starts-with-digit", "a setting name that starts with a digit", Str("1st_level=5"))
		add("space-in-name", "a space in the setting name", Str("trench coat=1"))
		add("spaces-around-equals", "spaces around =", Str("brightness = 80"))
		add("non-ascii-name", "a letter outside ASCII in the name", Str("höhe=3"))
		add("exponent", "a number in exponent notation", Str("brightness=8e1"))
		add("fullwidth-digits", "fullwidth digits", Str("brightness=８０"))
		add("hex-number", "a hexadecimal number", Str("brightness=0x50"))
		add("nan", "NaN", Str("brightness=NaN"))
		add("leading-space", "with a leading space", Str(" brightness=80"))
		add("trailing-space", "with a trailing space", Str("brightness=80 "))
		base = "brightness=80"
		jsonTypes("80")
	case Token:
		add("empty", "empty", Str(""))
		add("only-spaces", "only spaces", Str("   "))
		add("inner-space", "two words", Str("two words"))
		add("tab", "a tab inside", Str("a\tb"))
		jsonTypes("1")
	case TypeName:
		add("unknown-type", "no published type", Str("Toaster"))
		add("in-lower-case", "in lower case", Str(strings.ToLower(base)))
		add("in-upper-case", "in upper case", Str(strings.ToUpper(base)))
		add("no-space", "without spaces", Str(strings.ReplaceAll(base, " ", "")))
		add("underscore", "with _ for spaces", Str(strings.ReplaceAll(base, " ", "_")))
		add("hyphen", "with - for spaces", Str(strings.ReplaceAll(base, " ", "-")))
		add("double-space", "with two spaces between words", Str(strings.Replace(base, " ", "  ", 1)))
		add("last-word", "its last word alone", Str(base[strings.LastIndex(base, " ")+1:]))
		space()
		jsonTypes("1")
	case FormatName:
		other := map[string]string{"json": "xml", "xml": "json"}[base]
		add("other", "naming the other format", Str(other))
		add("unknown", "yaml", Str("yaml"))
		add("empty", "empty", Str(""))
		add("media-type", "a media type", Str("application/"+base))
		add("upper-case", "in upper case", Str(strings.ToUpper(base)))
	case Key:
		base = "an-api-key"
		jsonTypes("12345")
	}
	return ss
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
