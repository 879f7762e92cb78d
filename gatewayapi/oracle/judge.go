package oracle

import (
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// ValueKind is what a field's value was written as.
type ValueKind uint8

const (
	// String is a JSON string, or the text of an XML element.
	String ValueKind = iota
	// Number is a JSON number; Raw is its literal.
	Number
	// Other is a JSON true, false, null, array or object; Raw is its
	// literal. Only JSON can carry it.
	Other
)

// Value is one field's value as sent.
type Value struct {
	Raw  string
	Kind ValueKind
}

// Str is a string value.
func Str(s string) Value { return Value{Raw: s} }

// Num is a JSON number written as lit.
func Num(lit string) Value { return Value{Raw: lit, Kind: Number} }

// Lit is a JSON literal that is neither a string nor a number: true, null,
// [..], {..}.
func Lit(lit string) Value { return Value{Raw: lit, Kind: Other} }

// JSONOnly reports whether only a JSON body can carry v.
func (v Value) JSONOnly() bool { return v.Kind != String }

// Verdict is the oracle's judgement of a value or a request.
type Verdict struct {
	// OK: the value (request) is valid at the field level.
	OK bool
	// Open: the two texts leave it open; any answer conforms. OK and the
	// error fields are then meaningless.
	Open bool
	// Must: the verdict follows from the published interface (a MUST
	// check); otherwise only from the CONTRACT (SHOULD). For a valid
	// request, Must means every allowance it uses is published.
	Must bool
	// Status, Code and Field are the CONTRACT's refusal (CONTRACT 2-4);
	// Field is the key as the request wrote it.
	Status int
	Code   string
	Field  string
	// Also are further codes the texts allow for this refusal (a body
	// whose structure breaks in a way that is also an unexpected or a
	// missing field); ReadBody and JudgeRequest set them.
	Also []string
	// Why says which rule decided, for people.
	Why string
	// Quote is, for a refusal, the sentence of the published interface or
	// the CONTRACT that forbids the form (quotes.go); a refusal without
	// one is a defect of the table (TestEveryRefusalQuotesItsSentence).
	Quote string
	// Stored is a valid field's canonical stored value: an enumerated
	// word in its published case, an int64 or float64 for numbers, hex in
	// lower case, a name trimmed.
	Stored any
	// State is, for a valid request, what it must store: the command's
	// fields by state key (CONTRACT 3), "name" for update name,
	// "message_type" and "message_value" for a message.
	State map[string]any
}

func ok(must bool, stored any, why string) Verdict {
	return Verdict{OK: true, Must: must, Stored: stored, Why: why}
}

func refuse(must bool, code, field, why, quote string) Verdict {
	return Verdict{Must: must && MustLevel(quote, ""), Status: 400, Code: code, Field: field, Why: why, Quote: quote}
}

func open(why string) Verdict { return Verdict{Open: true, Why: why} }

func (f *Field) invalid(format device.Format, must bool, why, quote string) Verdict {
	return refuse(must, device.CodeInvalidField, f.Wire(format), f.Wire(format)+": "+why, quote)
}

// typeQuote is the sentence that types the field: its row of published
// 2.1/2.2/2.4 ("string") where it has one, else CONTRACT 2's sentence on
// which JSON values a field takes.
func (f *Field) typeQuote() string {
	if !f.typed() {
		return QuoteJSONValues
	}
	switch f.Name {
	case device.FieldAPIKey:
		return QuoteAPIKey
	case device.FieldTimestamp:
		return QuoteTimestamp
	case device.FieldSign:
		return QuoteSign
	case device.FieldAccount:
		return QuoteAccount
	case device.FieldMAC:
		return QuoteMAC
	case device.FieldSN:
		return QuoteSN
	case device.FieldType:
		return QuoteTypeString
	case device.FieldName:
		return QuoteName
	case device.FieldMessageValue:
		return QuoteMessageVal
	}
	if f.Kind == Decimal {
		return QuotePointForm
	}
	if f.Name == "opt" {
		return QuoteOptRow
	}
	if f.Quote != "" && Texts(f.Quote) == "published" {
		// An enumeration's or a range's row lists what the field takes: a
		// JSON true, null, array or object is none of it.
		return f.Quote
	}
	return QuoteJSONValues
}

// Judge judges one value of the field, sent in a body of the given format
// (which names the field, and which the format argument must match).
func (f *Field) Judge(format device.Format, v Value) Verdict {
	if v.Kind == Other {
		// A JSON true, null, array or object is no value of any field.
		return f.invalid(format, f.typed(), "not a string: "+v.Raw, f.typeQuote())
	}
	if v.Kind == Number && f.Kind != Integer && f.Kind != Decimal {
		// CONTRACT 2 allows numbers only where the field is numeric; the
		// published interface types these fields as strings, or lists
		// their values. A text field (opt) can read a number as its text:
		// only the CONTRACT refuses that.
		if f.Name == "opt" {
			return f.invalid(format, false, "a number where a string is required", QuoteJSONValues)
		}
		return f.invalid(format, f.typed(), "a number where a string is required", f.typeQuote())
	}
	switch f.Kind {
	case Enum:
		return f.judgeEnum(format, v.Raw)
	case Integer, Decimal:
		return f.judgeNumber(format, v)
	case Text:
		return f.judgeText(format, v.Raw)
	case Hex:
		return f.judgeHex(format, v.Raw)
	case Timestamp:
		return f.judgeTimestamp(format, v.Raw)
	case Key:
		if strings.TrimSpace(v.Raw) == "" {
			return open("an empty api_key: invalid_field or unknown_api_key")
		}
		return ok(true, v.Raw, "a non-empty api_key")
	case TypeName:
		if _, found := LookupType(v.Raw); found {
			return ok(true, v.Raw, "a published type name")
		}
		// "The allowed values of `type` are listed below": a name in
		// another letter case or with white space around it is not listed,
		// and no sentence makes it equal to one (CONTRACT 2's letter-case
		// rule names the enumerated values, not type).
		return f.invalid(format, true, "not one of "+strings.Join(TypeNames(), ", "), QuoteType)
	case FormatName:
		switch v.Raw {
		case format.String():
			return ok(false, v.Raw, "format names the body's format (CONTRACT 2)")
		case "json", "xml":
			return f.invalid(format, false, "format names the other format than the body's", QuoteFormat)
		}
		if l := asciiFold(v.Raw); l == "json" || l == "xml" {
			return open("format in upper case")
		}
		return f.invalid(format, false, "format must be json or xml", QuoteFormat)
	case Token:
		return f.judgeToken(format, v.Raw)
	case Setting:
		return f.judgeSetting(format, v.Raw)
	}
	return open("no grammar")
}

// typed reports whether the published interface types the field as a
// string, so that another JSON type MUST be refused.
func (f *Field) typed() bool {
	return f.Kind != FormatName && f.Kind != Token && f.Name != device.FieldDeviceID
}

func asciiFold(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func (f *Field) judgeEnum(format device.Format, s string) Verdict {
	for _, w := range f.Values {
		if s == w {
			return ok(true, w, "a published value")
		}
	}
	for _, w := range f.Values {
		if asciiFold(s) == asciiFold(w) {
			return ok(false, w, "a published value in another letter case (CONTRACT 2)")
		}
	}
	// White space around a listed value makes another value: the table
	// lists the allowed values, and no sentence trims them (CONTRACT 2's
	// rule on letter case is the only one that makes another spelling
	// equal to a listed value).
	return f.invalid(format, true, "not one of "+strings.Join(f.Values, ", "), f.Quote)
}

// numberText is what a numeric field's string says, read by the texts:
//   - plain: -?digits(.digits)? in ASCII, no plus sign, no leading zero
//     (the form of the published examples);
//   - lenient: a number in some reading the texts neither allow nor
//     forbid (a plus sign, leading zeros, white space around it, .5 or 5.,
//     a decimal comma, an exponent, digits of another script, and with
//     hex 0x hexadecimal): its value is x;
//   - neither: not a number in any reading (letters, units, NaN,
//     Infinity, two signs or points, a space inside, empty).
func numberText(s string, hex bool) (x *big.Rat, plain, lenient bool) {
	if x, ok := plainNumber(s); ok {
		return x, true, false
	}
	if x, ok := lenientNumber(s, hex); ok {
		return x, false, true
	}
	return nil, false, false
}

// plainNumber reads -?(0|[1-9][0-9]*)(\.[0-9]+)? ("-0" and "0.5" too).
func plainNumber(s string) (*big.Rat, bool) {
	body := strings.TrimPrefix(s, "-")
	whole, rest := splitDigits(body)
	if whole == "" || len(whole) > 1 && whole[0] == '0' {
		return nil, false
	}
	if rest != "" && (rest[0] != '.' || !allDigits(rest[1:])) {
		return nil, false
	}
	x, ok := new(big.Rat).SetString(s)
	return x, ok
}

// lenientNumber reads s in the most lenient reading any text could give
// a number: white space around it trimmed, digits of any script, a
// decimal comma, a plus sign, leading zeros, .5 and 5., an exponent, and
// with hex, 0x hexadecimal (for an integer, and the <number> of a message
// value, which no text calls decimal).
func lenientNumber(s string, hex bool) (*big.Rat, bool) {
	t := strings.TrimFunc(s, unicode.IsSpace)
	var b strings.Builder
	for _, r := range t {
		switch {
		case r < utf8.RuneSelf:
			if r == ',' {
				r = '.'
			}
			b.WriteRune(r)
		case unicode.IsDigit(r):
			b.WriteByte(byte('0' + digitValue(r)))
		default:
			return nil, false
		}
	}
	u := b.String()
	sign := ""
	if u != "" && (u[0] == '+' || u[0] == '-') {
		sign, u = u[:1], u[1:]
	}
	if l := strings.ToLower(u); hex && strings.HasPrefix(l, "0x") {
		n, err := strconv.ParseUint(l[2:], 16, 63)
		if err != nil || strings.HasPrefix(l[2:], "+") {
			return nil, false
		}
		x := new(big.Rat).SetInt64(int64(n))
		if sign == "-" {
			x.Neg(x)
		}
		return x, true
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(u), "e")
	whole, rest := splitDigits(mant)
	frac := ""
	switch {
	case rest == "":
	case rest[0] == '.' && (rest[1:] == "" || allDigits(rest[1:])):
		frac = rest[1:]
	default:
		return nil, false
	}
	if whole == "" && frac == "" {
		return nil, false
	}
	if hasExp {
		e := strings.TrimPrefix(strings.TrimPrefix(exp, "+"), "-")
		if !allDigits(e) || len(e) > 4 {
			return nil, false
		}
	}
	lit := sign + "0" + whole
	if frac != "" {
		lit += "." + frac
	}
	if hasExp {
		lit += "e" + exp
	}
	x, ok := new(big.Rat).SetString(lit)
	return x, ok
}

// digitValue is the value of a decimal digit of any script: the digits
// of a script are ten code points in a row (Unicode Nd), so it is the
// distance from the start of its run of digits, modulo 10.
func digitValue(r rune) int {
	start := r
	for unicode.IsDigit(start - 1) {
		start--
	}
	return int(r-start) % 10
}

func splitDigits(s string) (digits, rest string) {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:]
}

func allDigits(s string) bool {
	d, rest := splitDigits(s)
	return d != "" && rest == ""
}

// formQuote is the sentence that gives a numeric field its form and range.
func (f *Field) formQuote() string {
	if f.Quote != "" {
		return f.Quote
	}
	return QuotePointForm
}

// rangeQuote is the sentence that gives the field's range.
func (f *Field) rangeQuote() string {
	if f.Kind == Decimal && !f.RangeMust {
		return QuotePoints
	}
	if f.Kind == Text && !f.Trim {
		return QuoteOpt
	}
	if f.Kind == Text {
		return QuoteNameRule
	}
	return f.formQuote()
}

func (f *Field) judgeNumber(format device.Format, v Value) Verdict {
	what := "an integer"
	if f.Kind == Decimal {
		what = "a decimal number"
	}
	var x *big.Rat
	plain, lenient := false, false
	if v.Kind == Number {
		// CONTRACT 2: a JSON number in any JSON number syntax; its value
		// decides.
		var good bool
		if m, e, found := strings.Cut(strings.ToLower(v.Raw), "e"); found && len(strings.TrimLeft(e, "+-0")) > 4 {
			// An exponent beyond 4 digits is computed no further: far
			// outside any range, or a value finer than any step.
			if strings.HasPrefix(e, "-") && f.Kind == Decimal {
				return open("a JSON number finer than any step: " + m + "e" + e)
			}
			return f.invalid(format, true, "outside "+f.RangeText(), f.rangeQuote())
		}
		if x, good = new(big.Rat).SetString(v.Raw); !good {
			return f.invalid(format, true, "not a JSON number", f.formQuote())
		}
	} else {
		x, plain, lenient = numberText(v.Raw, f.Kind == Integer)
		if x == nil {
			return f.invalid(format, true, "not "+what+" in any reading", f.formQuote())
		}
	}
	if f.Kind == Integer && !x.IsInt() {
		if v.Kind == Number {
			return f.invalid(format, true, "not a whole number", f.formQuote())
		}
		return f.invalid(format, true, "not a whole number", f.formQuote())
	}
	lo, hi := f.bound(f.Min), f.bound(f.Max)
	if x.Cmp(lo) < 0 || x.Cmp(hi) > 0 {
		return f.invalid(format, f.RangeMust, "outside "+f.RangeText(), f.rangeQuote())
	}
	if lenient {
		return open(what + " written in a form neither text shows nor forbids (a sign, leading zeros, white space, .5, a comma, an exponent, other digits)")
	}
	if f.Kind == Integer && v.Kind == String && strings.Contains(v.Raw, ".") {
		return open("an integer written with a fraction of zero")
	}
	var stored any
	if f.Kind == Integer {
		stored = x.Num().Int64()
	} else {
		f, _ := x.Float64()
		if f == 0 {
			f = 0 // -0 is stored as 0
		}
		stored = f
	}
	// A JSON number is CONTRACT 2's allowance. A range of the CONTRACT's
	// alone is SHOULD near its edges (see Margin).
	inner := f.RangeMust || x.Cmp(f.bound(f.Min+Margin)) >= 0 && x.Cmp(f.bound(f.Max-Margin)) <= 0
	return ok(plain && inner, stored, what+" in "+f.RangeText())
}

// Margin is, for a Decimal whose range is the CONTRACT's alone (the
// thermostat points), how far inside each bound (in units of Step: one
// degree) a value's acceptance is still SHOULD. The published interface
// allows any decimal number there but states no range; a vendor's
// thermostat may have its own, so only values well inside the CONTRACT's
// range MUST be accepted, and the CONTRACT's edges are SHOULD.
const Margin = 1000

// bound is a Min or Max as an exact number.
func (f *Field) bound(n int64) *big.Rat {
	if f.Kind == Decimal {
		return big.NewRat(n, 1000)
	}
	return big.NewRat(n, 1)
}

// RangeText is the field's range in words: "1 to 100", "-50 to 100".
func (f *Field) RangeText() string {
	return f.Format(f.Min) + " to " + f.Format(f.Max)
}

// Format writes n (in units of Step for a Decimal) as the field's
// shortest decimal text: -50000 is "-50" and 99999 "99.999" for a Decimal.
func (f *Field) Format(n int64) string {
	if f.Kind != Decimal {
		return strconv.FormatInt(n, 10)
	}
	return trimDecimal(big.NewRat(n, 1000).FloatString(stepDigits))
}

func trimDecimal(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// plainText reports whether s is short printable ASCII without surrounding
// space: text any reading of "text" takes.
func plainText(s string) bool {
	if len(s) == 0 || len(s) > 20 || strings.TrimSpace(s) != s {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func (f *Field) judgeText(format device.Format, s string) Verdict {
	t := s
	if f.Trim {
		t = strings.TrimFunc(s, unicode.IsSpace)
	} else if strings.TrimFunc(s, unicode.IsSpace) != s && strings.TrimSpace(s) != "" {
		return open("text with surrounding white space: the CONTRACT says nothing of trimming " + f.Name)
	}
	if !utf8.ValidString(t) {
		return f.invalid(format, false, "not valid UTF-8", f.rangeQuote())
	}
	n := utf8.RuneCountInString(t)
	switch {
	case n == 0:
		return f.invalid(format, false, "empty"+map[bool]string{true: " after trimming"}[f.Trim], f.rangeQuote())
	case n > f.MaxLen:
		return f.invalid(format, f.RangeMust, strconv.Itoa(n)+" characters, more than "+strconv.Itoa(f.MaxLen), f.rangeQuote())
	}
	for _, r := range t {
		if unicode.IsControl(r) {
			if !f.Trim {
				return open("a control character in " + f.Name + ": the CONTRACT refuses them only in name")
			}
			return f.invalid(format, false, "a control character", f.rangeQuote())
		}
	}
	return ok(plainText(s), t, "text of 1 to "+strconv.Itoa(f.MaxLen)+" characters")
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (f *Field) judgeHex(format device.Format, s string) Verdict {
	if len(s) != f.Len {
		return f.invalid(format, f.RangeMust, "not "+strconv.Itoa(f.Len)+" characters", f.Quote)
	}
	for i := 0; i < len(s); i++ {
		if !isHexDigit(s[i]) {
			return f.invalid(format, f.RangeMust, "not hexadecimal", f.Quote)
		}
	}
	lower := strings.ToLower(s)
	return ok(lower == s && f.RangeMust, lower, strconv.Itoa(f.Len)+" hexadecimal characters")
}

// TimestampLayout is the published form YYYYMMDDHHMMSS, as a Go layout.
const TimestampLayout = "20060102150405"

func (f *Field) judgeTimestamp(format device.Format, s string) Verdict {
	if len(s) != 14 || !allDigits(s) {
		return f.invalid(format, true, "not 14 digits YYYYMMDDHHMMSS", QuoteTimestamp)
	}
	n := func(i, j int) int { x, _ := strconv.Atoi(s[i:j]); return x }
	mon, day, hh, mm, ss := n(4, 6), n(6, 8), n(8, 10), n(10, 12), n(12, 14)
	switch {
	case ss == 60 && mon >= 1 && mon <= 12 && day >= 1 && day <= 31 && hh <= 23 && mm <= 59:
		return open("second 60: a leap second")
	case mon < 1 || mon > 12 || day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 59:
		return f.invalid(format, true, "a month, day, hour, minute or second out of its range", QuoteTimestamp)
	}
	if day > time.Date(n(0, 4), time.Month(mon)+1, 0, 0, 0, 0, 0, time.UTC).Day() {
		return f.invalid(format, false, "not a real calendar date (CONTRACT 1)", QuoteRealDate)
	}
	return ok(true, s, "14 digits naming a real date and time")
}

// InWindow reports whether timestamp ts (read in loc) is inside the
// window around now (CONTRACT 1): the start of the second it names is at
// most window away from now, before or after. A zero window holds every
// timestamp.
func InWindow(ts string, loc *time.Location, now time.Time, window time.Duration) bool {
	if window == 0 {
		return true
	}
	t, err := time.ParseInLocation(TimestampLayout, ts, loc)
	if err != nil {
		return false
	}
	d := now.Sub(t)
	return d <= window && d >= -window
}

func tokenChar(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '.' || r == '-'
}

func (f *Field) judgeToken(format device.Format, s string) Verdict {
	if s == "" {
		return f.invalid(format, false, "empty", QuoteMessageToken)
	}
	plain := true
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return f.invalid(format, false, "a token holds no white space or control characters", QuoteMessageToken)
		}
		if !tokenChar(r) {
			plain = false
		}
	}
	if !plain {
		return open("a token with characters beyond letters, digits, _ . -")
	}
	return ok(s == "message", s, "a non-empty token")
}

func settingStart(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' }

func (f *Field) judgeSetting(format device.Format, s string) Verdict {
	name, num, found := strings.Cut(s, "=")
	if !found || name == "" {
		return f.invalid(format, true, "not <setting_name>=<number>", QuoteMessageVal)
	}
	// CONTRACT 3: the setting name is [A-Za-z_][A-Za-z0-9_.-]*.
	if !settingStart(name[0]) {
		return f.invalid(format, false, "a setting name must start with a letter or _", QuoteMessageValue)
	}
	simple := true
	for i := 1; i < len(name); i++ {
		c := name[i]
		switch {
		case settingStart(c) || '0' <= c && c <= '9':
		case c == '.' || c == '-':
			simple = false
		default:
			return f.invalid(format, false, "a setting name holds letters, digits, _ . - only", QuoteMessageValue)
		}
	}
	x, plain, _ := numberText(num, true)
	switch {
	case x == nil:
		return f.invalid(format, true, "the part after = is not a number in any reading", QuoteMessageVal)
	case !plain:
		return open("a number written in a form neither text shows nor forbids")
	}
	return ok(simple, s, "<setting_name>=<number>")
}

// Sent is one control field as sent: its key as written on the wire.
type Sent struct {
	Key   string
	Value Value
}

// Judge judges the control fields of one request of op in a body of the
// given format at the field level (CONTRACT 2-4): everything but whether
// the credentials, gateway and device exist and whether the timestamp is
// inside the window. Where a request has several faults, the texts do not
// say which is reported; Judge reports the first in this order: a missing
// envelope field, an envelope field's form (published order), format,
// type (missing, then unknown), an unexpected field, sn and device_id, the
// type's fields, none of them present; for a message, message_type, then
// message_value; for update name, sn, then name.
func Judge(op device.Operation, format device.Format, fields []Sent) Verdict {
	j := &judging{op: op, format: format, fields: fields, get: map[string]Value{}, must: true, state: map[string]any{}}
	if v, done := j.collect(); done {
		return v
	}
	if v, done := j.envelope(); done {
		return v
	}
	if v, done := j.commandType(); done {
		return v
	}
	if v, done := j.unexpected(); done {
		return v
	}
	var v Verdict
	var done bool
	switch op {
	case device.SendCommand:
		v, done = j.command()
	case device.SendMessage:
		v, done = j.message()
	case device.UpdateName:
		v, done = j.rename()
	}
	if done {
		return v
	}
	return Verdict{OK: true, Must: j.must, Status: 200, State: j.state, Why: "valid"}
}

// judging is one request as Judge goes through it. Each step returns the
// verdict and true when it decides the request, false to go on.
type judging struct {
	op     device.Operation
	format device.Format
	fields []Sent
	// get is each field's value by key.
	get map[string]Value
	// must stays true while every verdict so far rests on the published
	// text alone.
	must bool
	// state is what a valid request stores; typ a command's type.
	state map[string]any
	typ   *Type
}

// and keeps must true only when v rests on the published text too.
func (j *judging) and(v Verdict) { j.must = j.must && v.Must }

// collect reads the fields by key. A field twice is refused in XML, one
// element per field; in a JSON object the texts leave it open.
func (j *judging) collect() (Verdict, bool) {
	for _, s := range j.fields {
		if _, dup := j.get[s.Key]; dup {
			if j.format == device.XML {
				return refuse(false, device.CodeInvalidField, s.Key, s.Key+" appears twice: one element per field", QuoteXMLBody), true
			}
			return open(s.Key + " appears twice in a JSON object"), true
		}
		j.get[s.Key] = s.Value
	}
	return Verdict{}, false
}

// envelope judges the envelope: a missing field first, then each field's
// form in published order, then format when it is there.
func (j *judging) envelope() (Verdict, bool) {
	for _, f := range Envelope {
		if _, ok := j.get[f.Name]; !ok {
			return refuse(true, device.CodeMissingField, f.Name, f.Name+" is required (published 2.1)", f.typeQuote()), true
		}
	}
	for _, f := range Envelope {
		v := f.Judge(j.format, j.get[f.Name])
		if !v.OK || v.Open {
			return v, true
		}
		j.and(v)
	}
	if v, ok := j.get[device.FieldFormat]; ok {
		k := FormatField.Judge(j.format, v)
		if !k.OK || k.Open {
			return k, true
		}
		j.and(k)
	}
	return Verdict{}, false
}

// commandType judges a command's type, missing then unknown, and finds
// the type whose fields the command may carry.
func (j *judging) commandType() (Verdict, bool) {
	if j.op != device.SendCommand {
		return Verdict{}, false
	}
	v, ok := j.get[device.FieldType]
	if !ok {
		return refuse(true, device.CodeMissingField, device.FieldType, "type is required (published 4.1)", QuoteCommandBody), true
	}
	k := TypeField.Judge(j.format, v)
	if !k.OK {
		return k, true
	}
	j.typ, _ = LookupType(v.Raw)
	return Verdict{}, false
}

// unexpected refuses a field that is neither the envelope's, format, the
// operation's nor, for a command, its type's (CONTRACT 2).
func (j *judging) unexpected() (Verdict, bool) {
	allowed := map[string]bool{device.FieldFormat: true}
	for _, f := range Envelope {
		allowed[f.Name] = true
	}
	for _, k := range opFields(j.op) {
		allowed[k] = true
	}
	if j.typ != nil {
		for i := range j.typ.Fields {
			allowed[j.typ.Fields[i].Wire(j.format)] = true
		}
	}
	for _, s := range j.fields {
		if !allowed[s.Key] {
			return refuse(false, device.CodeUnexpectedField, s.Key, s.Key+" is not a field of this request (CONTRACT 2)", QuoteUnexpected), true
		}
	}
	return Verdict{}, false
}

// required judges a field the operation requires; ok is false when the
// verdict decides the request.
func (j *judging) required(f *Field) (Verdict, bool) {
	v, ok := j.get[f.Name]
	if !ok {
		return refuse(true, device.CodeMissingField, f.Name, f.Name+" is required", bodyQuote(j.op)), false
	}
	k := f.Judge(j.format, v)
	if !k.OK || k.Open {
		return k, false
	}
	j.and(k)
	return k, true
}

// command judges a command's device, then its type's fields.
func (j *judging) command() (Verdict, bool) {
	if v, done := j.commandDevice(); done {
		return v, true
	}
	return j.commandFields()
}

// commandDevice judges sn and device_id: one of them is required, and
// both must name the same device. device_id is CONTRACT 2's alias, not
// the published text's.
func (j *judging) commandDevice() (Verdict, bool) {
	sn, hasSN := j.get[device.FieldSN]
	id, hasID := j.get[device.FieldDeviceID]
	switch {
	case hasSN:
		v := SN.Judge(j.format, sn)
		if !v.OK || v.Open {
			return v, true
		}
		j.and(v)
		if hasID {
			k := DeviceID.Judge(j.format, id)
			if !k.OK || k.Open {
				return k, true
			}
			if k.Stored != v.Stored {
				return refuse(false, device.CodeInvalidField, device.FieldDeviceID, "device_id and sn name different devices (CONTRACT 2)", QuoteDeviceIDBoth), true
			}
			j.must = false
		}
	case hasID:
		k := DeviceID.Judge(j.format, id)
		if !k.OK || k.Open {
			return k, true
		}
		j.must = false // the alias is CONTRACT 2's
	default:
		return refuse(true, device.CodeMissingField, device.FieldSN, "sn is required (published 4.1)", QuoteCommandBody), true
	}
	return Verdict{}, false
}

// commandFields judges the type's fields the command carries, of which
// there must be at least one, and keeps what each stores.
func (j *judging) commandFields() (Verdict, bool) {
	typ := j.typ
	for i := range typ.Fields {
		f := &typ.Fields[i]
		v, ok := j.get[f.Wire(j.format)]
		if !ok {
			j.must = false // a subset of the fields is CONTRACT 3's
			continue
		}
		k := f.Judge(j.format, v)
		if !k.OK || k.Open {
			return k, true
		}
		j.and(k)
		j.state[f.Name] = k.Stored
	}
	if len(j.state) == 0 {
		return refuse(false, device.CodeMissingField, typ.Fields[0].Wire(j.format),
			"a command must carry at least one field of its type (CONTRACT 3)", QuoteOneField), true
	}
	return Verdict{}, false
}

// message judges message_type, then message_value, and keeps both.
func (j *judging) message() (Verdict, bool) {
	for _, f := range []*Field{&MessageType, &MessageValue} {
		v, ok := j.required(f)
		if !ok {
			return v, true
		}
		j.state[f.Name] = v.Stored
	}
	return Verdict{}, false
}

// rename judges sn, then name, and keeps the name.
func (j *judging) rename() (Verdict, bool) {
	for _, f := range []*Field{&SN, &Name} {
		v, ok := j.required(f)
		if !ok {
			return v, true
		}
		if f == &Name {
			j.state[f.Name] = v.Stored
		}
	}
	return Verdict{}, false
}

// Canonical is the value a valid command field stores, given its XML name
// and the value sent; false when the oracle does not call the value valid.
func Canonical(fieldName string, v Value) (any, bool) {
	f, found := Lookup(fieldName)
	if !found {
		return nil, false
	}
	j := f.Judge(device.XML, v)
	if !j.OK || j.Open {
		return nil, false
	}
	return j.Stored, true
}

// bodyQuote is the sentence that lists an operation's fields.
func bodyQuote(op device.Operation) string {
	switch op {
	case device.SendMessage:
		return QuoteMessageBody
	case device.UpdateName:
		return QuoteRenameBody
	}
	return QuoteCommandBody
}
