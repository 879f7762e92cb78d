package explore

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rules is the one place the model asks what the two texts say about a
// value: which fields a device type has, whether a value is valid and how
// it is stored, and the values to try. Everything else the model knows
// (accounts, gateways, devices, which device answers through which gateway,
// that a refused request changes nothing) is the state machine's own.
type Rules interface {
	// Types lists the published device types.
	Types() []string
	// Fields lists a type's command fields by state key.
	Fields(typ string) []string
	// JSONName is a field's name in JSON bodies ("cooling point").
	JSONName(typ, key string) string
	// Command judges a command's device fields (all of one type, none
	// missing): the stored value of each, or the refusal.
	Command(typ string, format string, fields []KV) (map[string]string, *Refusal)
	// Name judges a new display name: the name stored, or the refusal.
	Name(name string) (string, *Refusal)
	// Message judges message_type and message_value.
	Message(mtype, mvalue string) *Refusal
	// Valid and Invalid draw a value of a command field; Simplest is the
	// plainest valid value, for the shrinker.
	Valid(r *rand.Rand, typ, key string) KV
	Invalid(r *rand.Rand, typ, key string) (KV, string)
	Simplest(typ, key string) KV
	// ValidName, InvalidName, ValidMessage and InvalidMessage draw the
	// other operations' values.
	ValidName(r *rand.Rand) string
	InvalidName(r *rand.Rand) (string, string)
	ValidMessage(r *rand.Rand) Msg
	InvalidMessage(r *rand.Rand) (Msg, string)
}

// Refusal is the error a request must get: its codes (two where the texts
// leave the choice open) and the field it names.
type Refusal struct {
	Codes []string
	Field string
}

// ownRules is the explorer's rule table, written from docs/gateway-api.md
// 2.3 and CONTRACT 2 and 3. It serves until the harness's own rule table
// (conformance/oracle) replaces it.
type ownRules struct{}

type fieldKind int

const (
	enumKind fieldKind = iota
	intKind
	decimalKind
	textKind
)

type fieldRule struct {
	key, json string
	kind      fieldKind
	words     []string // enumKind: the published words, canonical case
	min, max  float64  // intKind, decimalKind
	maxLen    int      // textKind
}

var onOff = []string{"On", "Off"}

// ruleTable is published section 2.3 with CONTRACT 3's ranges.
var ruleTable = map[string][]fieldRule{
	"Appliance Module": {{key: "io", kind: enumKind, words: onOff}},
	"Appliance Module Plus": {
		{key: "opt", kind: textKind, maxLen: 32},
		{key: "Relay1", kind: enumKind, words: onOff},
		{key: "Relay2", kind: enumKind, words: onOff},
	},
	"Relay Module": {{key: "io", kind: enumKind, words: onOff}},
	"Thermostat": {
		{key: "mode", kind: enumKind, words: []string{"Auto", "Cool", "Heat", "Off"}},
		{key: "cooling_point", json: "cooling point", kind: decimalKind, min: -50, max: 100},
		{key: "heating_point", json: "heating point", kind: decimalKind, min: -50, max: 100},
		{key: "fan", kind: enumKind, words: []string{"On", "Auto"}},
	},
	"Infrared Sensor": {
		{key: "io", kind: enumKind, words: onOff},
		{key: "code", kind: intKind, min: 1, max: 4},
	},
	"Light Dimmer": {{key: "dimming", kind: intKind, min: 1, max: 100}},
}

var typeOrder = []string{"Appliance Module", "Appliance Module Plus", "Relay Module", "Thermostat", "Infrared Sensor", "Light Dimmer"}

func (ownRules) Types() []string { return typeOrder }

func lookupRule(typ, key string) (fieldRule, bool) {
	for _, f := range ruleTable[typ] {
		if f.key == key {
			return f, true
		}
	}
	return fieldRule{}, false
}

func (ownRules) Fields(typ string) []string {
	var out []string
	for _, f := range ruleTable[typ] {
		out = append(out, f.key)
	}
	return out
}

func (ownRules) JSONName(typ, key string) string {
	if f, ok := lookupRule(typ, key); ok && f.json != "" {
		return f.json
	}
	return key
}

func (r ownRules) Command(typ, format string, fields []KV) (map[string]string, *Refusal) {
	out := make(map[string]string, len(fields))
	for _, kv := range fields {
		wire := kv.Key
		if format == "json" {
			wire = r.JSONName(typ, kv.Key)
		}
		f, ok := lookupRule(typ, kv.Key)
		if !ok {
			return nil, &Refusal{Codes: []string{"unexpected_field"}, Field: wire}
		}
		v, ok := f.judge(kv.Value)
		if !ok {
			codes := []string{"invalid_field"}
			if strings.TrimSpace(kv.Value) == "" {
				// An empty value: the texts do not say whether it is
				// missing or invalid.
				codes = append(codes, "missing_field")
			}
			return nil, &Refusal{Codes: codes, Field: wire}
		}
		out[kv.Key] = v
	}
	if len(fields) == 0 {
		return nil, &Refusal{Codes: []string{"missing_field"}}
	}
	return out, nil
}

// judge is whether v is valid for the field, and its stored form.
func (f fieldRule) judge(v string) (string, bool) {
	switch f.kind {
	case enumKind:
		for _, w := range f.words {
			if strings.EqualFold(v, w) {
				return w, true
			}
		}
	case intKind:
		n, err := strconv.Atoi(v)
		if err == nil && float64(n) >= f.min && float64(n) <= f.max {
			return strconv.Itoa(n), true
		}
	case decimalKind:
		if !isDecimal(v) {
			return "", false
		}
		x, err := strconv.ParseFloat(v, 64)
		if err == nil && x >= f.min && x <= f.max {
			return canonNumber(x), true
		}
	case textKind:
		n := utf8.RuneCountInString(v)
		if n >= 1 && n <= f.maxLen && !hasControl(v) {
			return v, true
		}
	}
	return "", false
}

// isDecimal is a plain decimal number: optional sign, digits, optional
// fraction; no exponent, no hex, no NaN.
func isDecimal(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	intPart, frac, dot := strings.Cut(s, ".")
	if intPart == "" || (dot && frac == "") {
		return false
	}
	for _, c := range intPart + frac {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func canonNumber(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func hasControl(s string) bool {
	for _, c := range s {
		if unicode.IsControl(c) {
			return true
		}
	}
	return false
}

func (ownRules) Name(name string) (string, *Refusal) {
	t := strings.TrimSpace(name)
	n := utf8.RuneCountInString(t)
	if n == 0 {
		return "", &Refusal{Codes: []string{"invalid_field", "missing_field"}, Field: "name"}
	}
	if n > 64 || hasControl(t) {
		return "", &Refusal{Codes: []string{"invalid_field"}, Field: "name"}
	}
	return t, nil
}

func (ownRules) Message(mtype, mvalue string) *Refusal {
	if strings.TrimSpace(mtype) == "" || hasControl(mtype) || strings.ContainsAny(mtype, " \t") {
		return &Refusal{Codes: []string{"invalid_field", "missing_field"}, Field: "message_type"}
	}
	name, num, ok := strings.Cut(mvalue, "=")
	if !ok || !isSettingName(name) || !isDecimal(num) {
		return &Refusal{Codes: []string{"invalid_field"}, Field: "message_value"}
	}
	return nil
}

// isSettingName is CONTRACT 3's [A-Za-z_][A-Za-z0-9_.-]*.
func isSettingName(s string) bool {
	for i, c := range s {
		alpha := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
		if !alpha && (i == 0 || !(c >= '0' && c <= '9' || c == '.' || c == '-')) {
			return false
		}
	}
	return s != ""
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

var optWords = []string{"normal", "eco", "boost", "Sommer-Betrieb", "nuit calme", "x", "abcdefghijklmnopqrstuvwxyz012345"}

func (ownRules) Valid(r *rand.Rand, typ, key string) KV {
	f, _ := lookupRule(typ, key)
	switch f.kind {
	case enumKind:
		w := pick(r, f.words)
		switch r.IntN(4) {
		case 0:
			w = strings.ToLower(w)
		case 1:
			w = strings.ToUpper(w)
		}
		return KV{Key: key, Value: w}
	case intKind:
		n := int(f.min) + r.IntN(int(f.max-f.min)+1)
		if r.IntN(4) == 0 {
			n = int(pick(r, []float64{f.min, f.max}))
		}
		return KV{Key: key, Value: strconv.Itoa(n), Number: r.IntN(2) == 0}
	case decimalKind:
		v := pick(r, []string{"21", "21.5", "-12.5", "0", "100", "-50", "18.25", "+30", "26.0"})
		return KV{Key: key, Value: v, Number: r.IntN(3) == 0 && !strings.HasPrefix(v, "+")}
	default:
		return KV{Key: key, Value: pick(r, optWords)}
	}
}

func (ownRules) Invalid(r *rand.Rand, typ, key string) (KV, string) {
	f, _ := lookupRule(typ, key)
	var v string
	switch f.kind {
	case enumKind:
		v = pick(r, []string{"Maybe", "O n", "1", "Onn"})
	case intKind:
		v = pick(r, []string{strconv.Itoa(int(f.min) - 1), strconv.Itoa(int(f.max) + 1), "abc", "5.5"})
	case decimalKind:
		v = pick(r, []string{"100.5", "-50.5", "warm", "1e2", "12,5"})
	default:
		v = pick(r, []string{strings.Repeat("a", f.maxLen+1), strings.Repeat("é", f.maxLen+1)})
	}
	return KV{Key: key, Value: v}, "invalid " + key
}

func (ownRules) Simplest(typ, key string) KV {
	f, _ := lookupRule(typ, key)
	switch f.kind {
	case enumKind:
		return KV{Key: key, Value: f.words[0]}
	case intKind:
		return KV{Key: key, Value: strconv.Itoa(int(f.min))}
	case decimalKind:
		return KV{Key: key, Value: "20"}
	default:
		return KV{Key: key, Value: "x"}
	}
}

var names = []string{"Hall", "Kitchen Light", "Emma's Lamp", "  Porch  ", "Über-Licht", "客厅灯", "Garage <Door> & Co", strings.Repeat("é", 64)}

func (ownRules) ValidName(r *rand.Rand) string { return pick(r, names) }

func (ownRules) InvalidName(r *rand.Rand) (string, string) {
	return pick(r, []string{"   ", strings.Repeat("n", 65), strings.Repeat("ü", 65)}), "invalid name"
}

func (ownRules) ValidMessage(r *rand.Rand) Msg {
	return Msg{Type: pick(r, []string{"message", "alert", "setting"}),
		Value: pick(r, []string{"temp=21.5", "brightness=-3", "a.b_c-d=0", "_x=100"})}
}

func (ownRules) InvalidMessage(r *rand.Rand) (Msg, string) {
	return Msg{Type: "message", Value: pick(r, []string{"x", "=5", "temp=", "temp=abc", "1x=2"})}, "invalid message_value"
}
