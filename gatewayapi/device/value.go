package device

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ValueKind is what a value was written as on the wire.
type ValueKind uint8

const (
	// String is a JSON string or any XML element text.
	String ValueKind = iota + 1
	// Number is a JSON number; Text holds its literal.
	Number
	// Other is a JSON true, false, null, object or array; Text names it.
	Other
)

// Value is one field value as a codec read it.
type Value struct {
	Text string
	Kind ValueKind
}

// Str is a string value.
func Str(s string) Value { return Value{Text: s, Kind: String} }

// Setting is one validated field value, ready to apply to a State.
type Setting struct {
	Index int
	Num   float64
	Text  string
}

// State is a device's current values, held by field position in its Type:
// an Enum as the index of its word, Integer and Decimal as the number, the
// one Text field (if any) in Text. It is a small value so that a store can
// keep millions of them.
type State struct {
	Num  [MaxFields]float64
	Text string
}

// digitRun is the number of ASCII digits s starts with.
func digitRun(s string) int {
	n := 0
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		n++
	}
	return n
}

// maxNumberLen bounds the digits we are willing to read in a number.
const maxNumberLen = 32

// Parse validates a wire value for this field; errors name the field by
// its canonical name. Open forms are refused (RefuseOpen).
func (f *Field) Parse(index int, v Value) (Setting, *Error) {
	return f.parse(index, v, f.Name, RefuseOpen)
}

// parse validates a value; errors name the field as name (its name as the
// request wrote it). open says how the forms neither text decides are read
// (OpenForms).
func (f *Field) parse(index int, v Value, name string, open OpenForms) (Setting, *Error) {
	s := Setting{Index: index}
	if v.Kind == Other {
		return s, invalid(name, "%s must be %s, not %s", name, f.Rule, v.Text)
	}
	text := v.Text
	switch f.Kind {
	case Enum:
		if v.Kind == Number {
			return s, invalid(name, "%s must be %s, not a number", name, f.Rule)
		}
		for i, w := range f.Values {
			if strings.EqualFold(w, text) {
				s.Num = float64(i)
				return s, nil
			}
		}
		return s, invalid(name, "%s must be %s, not %s", name, f.Rule, quote(text))
	case Integer, Decimal:
		// CONTRACT 2: a JSON number in any JSON number syntax, its value
		// deciding; a string in the published form -?digits[.digits], or
		// (AcceptOpen) any form a lenient reading takes.
		if n, ok := fastNumber(f, v, text); ok {
			s.Num = n
			return s, nil
		}
		return f.exactNumber(s, v, name, open)
	case Text:
		if v.Kind == Number {
			return s, invalid(name, "%s must be %s, not a number", name, f.Rule)
		}
		// White space around the text is open: refused, or taken away;
		// so are control characters (the CONTRACT refuses them in name
		// alone).
		t := strings.TrimSpace(text)
		if open == RefuseOpen && t != text && t != "" {
			return s, invalid(name, "%s must be %s without white space around it", name, f.Rule)
		}
		text = t
		if open == AcceptOpen {
			if !utf8.ValidString(text) {
				return s, invalid(name, "%s must be valid UTF-8", name)
			}
			if n := utf8.RuneCountInString(text); n == 0 || n > f.MaxLen {
				return s, invalid(name, "%s must be %s, not %d characters", name, f.Rule, n)
			}
		} else if e := checkText(name, text, f.MaxLen, f.Rule); e != nil {
			return s, e
		}
		s.Text = text
		return s, nil
	}
	return s, invalid(name, "%s has no known kind", name)
}

// exactNumber is parse's verdict on a number by its exact value
// (math/big): every form, every value.
func (f *Field) exactNumber(s Setting, v Value, name string, open OpenForms) (Setting, *Error) {
	text := v.Text
	var x *big.Rat
	ok := false
	switch {
	case v.Kind == Number:
		x, ok = jsonNumber(text)
	case len(text) <= maxNumberLen && plainNumber(text, f.Kind == Decimal):
		x, ok = new(big.Rat).SetString(text)
	case open == AcceptOpen:
		x, ok = lenientNumber(text, f.Kind == Integer)
	}
	if !ok || f.Kind == Integer && !x.IsInt() {
		return s, invalid(name, "%s must be %s, not %s", name, f.Rule, quote(text))
	}
	lo, hi := new(big.Rat).SetFloat64(f.Min), new(big.Rat).SetFloat64(f.Max)
	if x.Cmp(lo) < 0 || x.Cmp(hi) > 0 {
		return s, invalid(name, "%s must be %s, not %s", name, f.Rule, quote(text))
	}
	n, _ := x.Float64()
	if n == 0 || math.IsInf(n, 0) {
		n = 0 // -0 is stored as 0
	}
	s.Num = n
	return s, nil
}

// fastDigits is the most digits fastNumber reads: m < 10^15 < 2^53 is
// exact in a float64, and so is 10^k for k <= 15.
const fastDigits = 15

var pow10 = [fastDigits + 1]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// fastNumber is parse's verdict on a number in range without math/big,
// for the values nearly every request carries: -?digits[.digits] with at
// most fastDigits digits, which a JSON number literal or the published
// string form may be. ok false means "not decided here": the exact path
// decides (a value out of range or not whole, another form, a value whose
// rounding ties with a bound).
//
// The literal is m/10^k exactly; n = float64(m)/10^k is that value
// correctly rounded (both operands exact, one IEEE division), which is
// what big.Rat's Float64 gives. Rounding is monotone, so n > Min implies
// the exact value is > Min (and n < Max that it is < Max): only n equal to
// a bound would need the exact comparison, and it is left to the exact
// path.
func fastNumber(f *Field, v Value, text string) (float64, bool) {
	if v.Kind != Number && v.Kind != String {
		return 0, false
	}
	s := text
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	whole := digitRun(s)
	if whole == 0 || whole > 1 && s[0] == '0' {
		return 0, false
	}
	frac := ""
	if rest := s[whole:]; rest != "" {
		// A fraction: a JSON number's for either kind, a string's only
		// for a Decimal (the published form of an Integer has none).
		if rest[0] != '.' || v.Kind == String && f.Kind != Decimal {
			return 0, false
		}
		frac = rest[1:]
		if frac == "" || digitRun(frac) != len(frac) {
			return 0, false
		}
	}
	k := len(frac)
	if whole+k > fastDigits {
		return 0, false
	}
	var m int64
	for i := 0; i < whole; i++ {
		m = m*10 + int64(s[i]-'0')
	}
	exactInt := true
	for i := 0; i < k; i++ {
		d := int64(frac[i] - '0')
		m = m*10 + d
		if d != 0 {
			exactInt = false
		}
	}
	if f.Kind == Integer && !exactInt {
		return 0, false
	}
	n := float64(m) / pow10[k]
	if neg {
		n = -n
	}
	if !(n > f.Min && n < f.Max) {
		// Out of range, or on a bound: the exact path decides (and
		// words the error).
		if !exactInt || n < f.Min || n > f.Max {
			return 0, false
		}
		// A whole number of at most 15 digits is exact in a float64:
		// on a bound is in range.
	}
	if n == 0 {
		n = 0 // -0 is stored as 0
	}
	return n, true
}

// checkText accepts 1 to max characters of valid UTF-8 with no control
// characters.
func checkText(name, text string, max int, rule string) *Error {
	if !utf8.ValidString(text) {
		return invalid(name, "%s must be valid UTF-8", name)
	}
	n := utf8.RuneCountInString(text)
	if n == 0 {
		return invalid(name, "%s must be %s, not empty", name, rule)
	}
	if n > max {
		return invalid(name, "%s must be %s, not %d characters", name, rule, n)
	}
	for _, r := range text {
		if unicode.IsControl(r) {
			return invalid(name, "%s must not contain control characters", name)
		}
	}
	return nil
}

// quote shows a rejected value in an error message, cut short if long.
func quote(s string) string {
	const max = 40
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max]) + "…"
	}
	return strconv.Quote(s)
}

// DefaultState is the state of a new device of this type.
func (t *Type) DefaultState() State { return t.defaults }

func (t *Type) computeDefaults() State {
	var s State
	for i := range t.Fields {
		set, err := t.Fields[i].Parse(i, Str(t.Fields[i].Default))
		if err != nil {
			panic("device: bad default for " + t.Name + "." + t.Fields[i].Name)
		}
		s = t.Apply(s, set)
	}
	return s
}

// Apply returns s with the settings applied; fields not set keep their value.
func (t *Type) Apply(s State, settings ...Setting) State {
	for _, set := range settings {
		if t.Fields[set.Index].Kind == Text {
			s.Text = set.Text
		} else {
			s.Num[set.Index] = set.Num
		}
	}
	return s
}

// Get is one field's value in its natural Go type: string for Enum and
// Text, int64 for Integer, float64 for Decimal.
func (t *Type) Get(s State, index int) any {
	f := &t.Fields[index]
	switch f.Kind {
	case Enum:
		i := int(s.Num[index])
		if i < 0 || i >= len(f.Values) {
			return ""
		}
		return f.Values[i]
	case Integer:
		return int64(s.Num[index])
	case Decimal:
		return s.Num[index]
	default:
		return s.Text
	}
}

// StateMap is the state keyed by canonical field name, as the admin API and
// fleet files show it.
func (t *Type) StateMap(s State) map[string]any {
	m := make(map[string]any, len(t.Fields))
	for i := range t.Fields {
		m[t.Fields[i].Name] = t.Get(s, i)
	}
	return m
}

// ParseState reads a state as a fleet file writes it: canonical field names
// with strings or numbers. Fields not given take their default.
func (t *Type) ParseState(m map[string]any) (State, error) {
	s := t.defaults
	for k, raw := range m {
		f, i, ok := t.Field(k)
		if !ok {
			return s, fmt.Errorf("state of %s has no field %q (fields: %s)", A(t.Name), k, t.fieldList())
		}
		var v Value
		switch x := raw.(type) {
		case string:
			v = Str(x)
		case int, int64, uint64:
			v = Value{Text: fmt.Sprint(x), Kind: Number}
		case float64:
			// Without an exponent: 1e-07 (how %v writes 0.0000001, which a
			// request may set) is not a decimal a request may send.
			v = Value{Text: strconv.FormatFloat(x, 'f', -1, 64), Kind: Number}
		case bool:
			// YAML 1.1 readers turn On/Off into booleans; take them back.
			v = Str(map[bool]string{true: "On", false: "Off"}[x])
		default:
			return s, fmt.Errorf("state field %s: unsupported value %v", k, raw)
		}
		set, err := f.Parse(i, v)
		if err != nil {
			return s, fmt.Errorf("state field %s: %s", k, err.Message)
		}
		s = t.Apply(s, set)
	}
	return s, nil
}

func (t *Type) fieldList() string {
	names := make([]string, len(t.Fields))
	for i := range t.Fields {
		names[i] = t.Fields[i].Name
	}
	return strings.Join(names, ", ")
}
