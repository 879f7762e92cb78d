package oracle

import (
	"strconv"
	"strings"
)

// JSON's grammar (RFC 8259) broken one production at a time. A text that
// breaks it is no JSON; published 1 says "The request body is JSON or
// XML." (MUST: it is not answered with success), and CONTRACT 2 gives the
// answer, 400 malformed_body (SHOULD). Where RFC 8259 leaves a text to the
// implementation (a byte order mark, a lone surrogate, bytes that are not
// UTF-8), the form is Open.

// notJSON is the verdict on a text RFC 8259 does not allow.
func notJSON(rfc string) (Verdict, string) {
	v := malformed(true, "not JSON: "+rfc, QuoteJSONOrXML)
	section, _, _ := strings.Cut(rfc, ":")
	return v, "RFC 8259 " + section + ": no JSON, so not the body published 1 allows"
}

// JSONNumberNearMisses are the near misses of RFC 8259's number, written
// around mid (a whole number inside the field's range, so that a lenient
// reading would take it): number = [ minus ] int [ frac ] [ exp ], int =
// zero / ( digit1-9 *DIGIT ), frac = "." 1*DIGIT, exp = ( "e" / "E" )
// [ "-" / "+" ] 1*DIGIT, each production broken in each way it can be,
// and the number syntaxes of other languages. Each is the literal of a
// JSON member's value (not a string): every one is refused.
func JSONNumberNearMisses(mid int64) []NearMiss {
	m := strconv.FormatInt(mid, 10)
	split := m[:1] + "_" + m[1:]
	if len(m) == 1 {
		split = "0_" + m
	}
	inner := m[:1] + " " + m[1:]
	if len(m) == 1 {
		inner = m + " 0"
	}
	var out []NearMiss
	add := func(slug, title, lit, rfc string) {
		v, inf := notJSON(rfc)
		out = append(out, NearMiss{Slug: slug, Title: lit + " (" + title + ")", Text: lit, Verdict: v, Inference: inf})
	}
	const (
		signRule = "section 6: a number has an optional minus sign, no plus sign"
		intRule  = "section 6: int = zero / ( digit1-9 *DIGIT ); leading zeros are not allowed"
		fracRule = "section 6: frac = decimal-point 1*DIGIT"
		expRule  = "section 6: exp = e [ minus / plus ] 1*DIGIT"
		digits   = "section 6: a number is written in decimal digits 0-9"
		special  = "section 6: numeric values that cannot be represented as sequences of digits (such as Infinity and NaN) are not permitted"
	)
	add("plus-sign", "a plus sign", "+"+m, signRule)
	add("plus-alone", "a plus sign alone", "+", signRule)
	add("minus-alone", "a minus sign alone", "-", signRule)
	add("double-minus", "two minus signs", "--"+m, signRule)
	add("minus-then-space", "a space after the minus sign", "- "+m, signRule)
	add("leading-zero", "a leading zero", "0"+m, intRule)
	add("leading-zeros", "two leading zeros", "00"+m, intRule)
	add("minus-leading-zero", "a minus sign and a leading zero", "-0"+m, intRule)
	add("space-inside", "a space between its digits", inner, intRule)
	add("point-first", "no digit before the point", "."+m, intRule)
	add("minus-point-first", "a minus sign and no digit before the point", "-."+m, intRule)
	add("point-last", "no digit after the point", m+".", fracRule)
	add("point-then-exponent", "no digit between the point and the exponent", m+".e1", fracRule)
	add("two-points", "two decimal points", m+".0.0", fracRule)
	add("exponent-without-digits", "e and no digit", m+"e", expRule)
	add("exponent-sign-without-digits", "e+ and no digit", m+"e+", expRule)
	add("exponent-minus-without-digits", "e- and no digit", m+"E-", expRule)
	add("exponent-with-fraction", "an exponent with a fraction", m+"e0.5", expRule)
	add("two-exponents", "two exponents", m+"e0e0", expRule)
	add("hexadecimal", "hexadecimal", "0x"+strconv.FormatInt(mid, 16), digits)
	add("hexadecimal-upper", "hexadecimal with 0X", "0X"+strings.ToUpper(strconv.FormatInt(mid, 16)), digits)
	add("octal", "octal with 0o", "0o"+strconv.FormatInt(mid, 8), digits)
	add("binary", "binary with 0b", "0b"+strconv.FormatInt(mid, 2), digits)
	add("digit-separator", "an underscore between digits", split, digits)
	add("fullwidth-digits", "fullwidth digits", fullwidth(m), digits)
	add("nan", "NaN", "NaN", special)
	add("infinity", "Infinity", "Infinity", special)
	add("minus-infinity", "-Infinity", "-Infinity", special)
	return out
}

// JSONTextNearMisses are the near misses of the rest of RFC 8259's
// grammar, each written into a valid body of send message (one object
// whose member control holds the fields, message_type "message" among
// them): structural characters, white space, member names, strings and
// their escapes, literals; each refused (MUST: not JSON), allowed (a JSON
// text written another way: SHOULD, as the catalog's other body forms) or
// Open where RFC 8259 leaves it to the implementation.
func JSONTextNearMisses() []NearMiss {
	var out []NearMiss
	const mt = `"message_type":"message"`
	rep := func(old, new string) func(string) string {
		return func(s string) string { return strings.Replace(s, old, new, 1) }
	}
	bad := func(slug, title, rfc string, edit func(string) string) {
		v, inf := notJSON(rfc)
		out = append(out, NearMiss{Slug: slug, Title: title, Edit: edit, Verdict: v, Inference: inf})
	}
	good := func(slug, title string, edit func(string) string) {
		out = append(out, NearMiss{Slug: slug, Title: title, Edit: edit,
			Verdict: ok(false, nil, "a JSON text (RFC 8259) of the published shape, written another way")})
	}
	undecided := func(slug, title, why string, edit func(string) string) {
		out = append(out, NearMiss{Slug: slug, Title: title, Edit: edit, Verdict: open(why)})
	}
	const (
		members = "section 4: object = begin-object [ member *( value-separator member ) ] end-object; member = string name-separator value"
		names   = "section 4: a name is a string, in quotation marks"
		strs    = "section 7: a string begins and ends with quotation marks"
		ctrl    = "section 7: the control characters U+0000 through U+001F must be escaped"
		escapes = "section 7: an escape is \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\u and four hexadecimal digits"
		ws      = "section 2: insignificant white space is space, horizontal tab, line feed and carriage return only"
		lits    = "section 3: the literal names are true, false and null, in lower case"
		comment = "sections 2 and 4: the grammar has no comments"
	)
	bad("unquoted-name", "whose member name message_type has no quotation marks", names, rep(`"message_type":`, `message_type:`))
	bad("single-quoted-name", "whose member name message_type is in single quotes", names, rep(`"message_type":`, `'message_type':`))
	bad("single-quoted-value", "whose message_type value is in single quotes", strs, rep(mt, `"message_type":'message'`))
	bad("unquoted-value", "whose message_type value has no quotation marks", strs, rep(mt, `"message_type":message`))
	bad("leading-comma", "with a comma before control's first member", members, rep(`{"control":{`, `{"control":{,`))
	bad("double-comma", "with two commas between two members", members, rep(`","`, `",,"`))
	bad("missing-comma", "without the comma between two members", members, rep(`","`, `" "`))
	bad("trailing-comma-outer", "with a comma after control, the outer object's last member", members, func(s string) string {
		return strings.TrimSuffix(s, "}") + ",}"
	})
	bad("missing-colon", "without the colon after a member name", members, rep(mt, `"message_type" "message"`))
	bad("equals-for-colon", "with = in place of the colon", members, rep(mt, `"message_type"="message"`))
	bad("line-comment", "that begins with a // comment", comment, func(s string) string { return "// a comment\n" + s })
	bad("hash-comment", "that begins with a # comment", comment, func(s string) string { return "# a comment\n" + s })
	bad("inner-block-comment", "with a /* */ comment before a value", comment, rep(mt, `"message_type":/* c */"message"`))
	bad("raw-tab-in-string", "whose message_type holds an unescaped tab", ctrl, rep(mt, "\"message_type\":\"mess\tage\""))
	bad("raw-line-feed-in-string", "whose message_type holds an unescaped line feed", ctrl, rep(mt, "\"message_type\":\"mess\nage\""))
	bad("raw-nul-in-string", "whose message_type holds an unescaped U+0000", ctrl, rep(mt, "\"message_type\":\"mess\x00age\""))
	bad("raw-unit-separator-in-string", "whose message_type holds an unescaped U+001F", ctrl, rep(mt, "\"message_type\":\"mess\x1fage\""))
	bad("escape-x", `whose message_type holds the escape \x6d`, escapes, rep(mt, `"message_type":"\x6dessage"`))
	bad("escape-capital-u", `whose message_type holds the escape \U006d`, escapes, rep(mt, `"message_type":"\U006dessage"`))
	bad("escape-single-quote", `whose message_type holds the escape \'`, escapes, rep(mt, `"message_type":"mess\'age"`))
	bad("escape-a", `whose message_type holds the escape \a`, escapes, rep(mt, `"message_type":"mess\age"`))
	bad("escape-short-u", `whose message_type ends in \u with three hexadecimal digits`, escapes, rep(mt, `"message_type":"message\u006"`))
	bad("escape-u-not-hex", `whose message_type holds \u and a letter that is not hexadecimal`, escapes, rep(mt, `"message_type":"\u006message"`))
	bad("backslash-before-closing-quote", `whose message_type ends in a backslash that escapes its closing quote`, strs, rep(mt, `"message_type":"message\"`))
	bad("literal-capitalized", "whose message_type is True", lits, rep(mt, `"message_type":True`))
	bad("literal-undefined", "whose message_type is undefined", lits, rep(mt, `"message_type":undefined`))
	bad("vertical-tab-between-tokens", "with a vertical tab between tokens", ws, func(s string) string { return "{\v" + s[1:] })
	bad("form-feed-between-tokens", "with a form feed between tokens", ws, func(s string) string { return "{\f" + s[1:] })
	bad("no-break-space-between-tokens", "with U+00A0 NO-BREAK SPACE between tokens", ws, func(s string) string { return "{\u00a0" + s[1:] })
	good("white-space-around", "with carriage return, line feed, tab and space around the text", func(s string) string {
		return "\r\n\t " + s + " \t\r\n"
	})
	good("white-space-between-tokens", "with a space around every colon and comma", func(s string) string {
		return strings.NewReplacer(`":`, `" : `, `","`, `" , "`).Replace(s)
	})
	good("escaped-member-name", `whose member name message_type is written with a \u escape`, rep(mt, `"message\u005ftype":"message"`))
	good("escape-upper-hex", `whose message_type is written with \u escapes in upper-case hexadecimal`, rep(mt, `"message_type":"\u006D\u0065ssage"`))
	undecided("byte-order-mark", "that begins with a byte order mark",
		"RFC 8259 section 8.1: implementations that parse JSON texts MAY ignore the presence of a byte order mark rather than treating it as an error",
		func(s string) string { return "\ufeff" + s })
	undecided("lone-high-surrogate", `whose message_type holds the lone surrogate \ud800`,
		"RFC 8259 section 8.2: the behavior of software that receives a string holding a lone surrogate is unpredictable",
		rep(mt, `"message_type":"message\ud800"`))
	undecided("lone-low-surrogate", `whose message_type holds the lone surrogate \udc00`,
		"RFC 8259 section 8.2: the behavior of software that receives a string holding a lone surrogate is unpredictable",
		rep(mt, `"message_type":"message\udc00"`))
	undecided("invalid-utf8-in-string", "whose message_type holds a byte that is not UTF-8",
		"RFC 8259 section 8.1 asks the sender for UTF-8 and leaves a receiver's reading of other bytes open",
		rep(mt, "\"message_type\":\"mess\xffage\""))
	return out
}
