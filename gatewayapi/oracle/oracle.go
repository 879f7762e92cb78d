// Package oracle is the conformance harness's own rule table: which values
// each field of the Gateway Device Management Interface takes, where each
// edge lies, and which refusal each mistake gets. It is written from
// docs/gateway-api.md (the published interface: MUST) and docs/CONTRACT.md
// (our decisions in its gaps: SHOULD) alone. It never calls the simulator's
// parsing or validation (package gatewayapi/device's Parse, Field.Parse,
// ParseState, CheckName) nor reads that package's device table; it uses
// only plain names from it (operations, formats, field names, error
// codes). A wrong range in the simulator is then caught by the harness
// instead of being certified against every vendor.
//
// The package has three parts:
//   - the table: Types with their Fields, the envelope and operation fields
//     (Envelope, SN, DeviceID, TypeField, FormatField, MessageType,
//     MessageValue, Name), each with its grammar;
//   - judging: Field.Judge for one value, Judge for a whole control element,
//     InWindow for the timestamp window;
//   - generating: Field.Draw for a valid value in its plain form,
//     Field.DrawForm for one in any allowed form, Field.Edges for each
//     boundary one step inside and outside, Field.Forms for every allowed
//     form and Field.Broken for every way the field's grammar can be broken,
//     each Sample carrying the oracle's verdict.
//
// Where the two texts leave a value open (neither allowed nor forbidden),
// the verdict says Open and no generator draws it.
package oracle

import (
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Kind is a field's grammar.
type Kind uint8

const (
	// Enum is one word of Values. The canonical case is the published
	// table's (MUST); any other letter case is allowed by CONTRACT 2
	// (SHOULD) and stored in the canonical case.
	Enum Kind = iota + 1
	// Integer is a whole number in [Min, Max] written in decimal digits,
	// as a JSON string or (CONTRACT 2) a JSON number.
	Integer
	// Decimal is a finite decimal number in [Min, Max] (in units of Step),
	// written [+-]digits[.digits], as a JSON string or (CONTRACT 2) a JSON
	// number.
	Decimal
	// Text is 1 to MaxLen characters (Unicode code points); with Trim, the
	// length is counted after trimming white space and control characters
	// are refused (CONTRACT 3 for name).
	Text
	// Hex is exactly Len hexadecimal characters, either case (CONTRACT 2),
	// stored in lower case.
	Hex
	// Timestamp is 14 ASCII digits YYYYMMDDHHMMSS naming a real calendar
	// date and time (published 2.1, CONTRACT 1).
	Timestamp
	// Key is the api_key: a non-empty string; whether it is registered is
	// not a question of its form.
	Key
	// TypeName is one of the published type names, exactly.
	TypeName
	// FormatName is the optional format argument: json or xml, matching
	// the body's format (CONTRACT 2).
	FormatName
	// Token is message_type: a non-empty token (CONTRACT 3).
	Token
	// Setting is message_value: <setting_name>=<number> (published 2.4),
	// the setting name [A-Za-z_][A-Za-z0-9_.-]* (CONTRACT 3).
	Setting
)

// Step is the smallest decimal step the harness judges a Decimal field's
// range with: 0.001 (three fractional digits). The edges of the thermostat
// points are therefore -50.001 | -50, -49.999 … 99.999, 100 | 100.001.
const Step = 0.001

// stepDigits is the number of fractional digits of Step.
const stepDigits = 3

// MaxBody is the body limit of CONTRACT 2, 64 KiB: a body of MaxBody
// bytes is valid, one of MaxBody+1 is 413 body_too_large.
const MaxBody = 64 << 10

// Field is one field of a request and its grammar.
type Field struct {
	// Name is the field's name in XML and its key in the stored state
	// (CONTRACT 3): "cooling_point".
	Name string
	// JSON is its key in a JSON body: "cooling point".
	JSON string
	Kind Kind
	// Values are an Enum's words in their published (canonical) case.
	Values []string
	// Min and Max bound an Integer, and a Decimal in units of Step
	// (-50000 for -50).
	Min, Max int64
	// Len is a Hex field's exact length.
	Len int
	// MaxLen bounds a Text field, in characters.
	MaxLen int
	// Trim: a Text field's length is counted after trimming white space,
	// it is stored trimmed, and control characters are refused.
	Trim bool
	// RangeMust: the bounds (Min, Max, MaxLen) are the published
	// interface's, so a value outside them MUST be refused; otherwise they
	// are the CONTRACT's (SHOULD).
	RangeMust bool
	// Unit is what a Decimal field's number counts ("°C"), for the words
	// of the checks about it; empty when the texts name none.
	Unit string
	// Example is a valid value, the one the published examples use where
	// they show one.
	Example string
	// Section is where the field is defined in the published interface.
	Section string
	// Quote is the sentence of the texts that gives the field its form
	// (quotes.go): its row of published 2.1, 2.2 or 2.3, or the CONTRACT's
	// sentence where the published interface gives none.
	Quote string
}

// Wire is the field's key in a body of format f.
func (f *Field) Wire(format device.Format) string {
	if format == device.JSON && f.JSON != "" {
		return f.JSON
	}
	return f.Name
}

// Type is a device type of published 2.3.
type Type struct {
	Name   string
	Fields []Field
}

// Field finds one of the type's fields by its XML name.
func (t *Type) Field(name string) (*Field, bool) {
	for i := range t.Fields {
		if t.Fields[i].Name == name {
			return &t.Fields[i], true
		}
	}
	return nil, false
}

// StateKeys are the keys of the type's stored state (CONTRACT 3): the XML
// element names of its fields.
func (t *Type) StateKeys() []string {
	keys := make([]string, len(t.Fields))
	for i := range t.Fields {
		keys[i] = t.Fields[i].Name
	}
	return keys
}

var onOff = []string{"On", "Off"}

func enum(typ, name string, values []string, example string) Field {
	return Field{Name: name, JSON: name, Kind: Enum, Values: values, Example: example, RangeMust: true, Section: "2.3",
		Quote: rowOf(typ, name, strings.Join(values, ", "))}
}

// point is a thermostat point: the published interface says "decimal
// number as string, degrees Celsius"; the range is CONTRACT 3's.
func point(name, json, example string) Field {
	return Field{Name: name, JSON: json, Kind: Decimal, Min: -50000, Max: 100000, Unit: "°C", Example: example, Section: "2.3",
		Quote: QuotePointForm}
}

// Types is published 2.3, in its order. The Appliance Module Plus is named
// so (the published note says to use that name for it).
var Types = []*Type{
	{Name: "Appliance Module", Fields: []Field{enum("Appliance Module", "io", onOff, "On")}},
	{Name: "Appliance Module Plus", Fields: []Field{
		// "text; the example uses the word normal"; 1 to 32 characters is
		// CONTRACT 3's.
		{Name: "opt", JSON: "opt", Kind: Text, MaxLen: 32, Example: "normal", Section: "2.3", Quote: QuoteOpt},
		enum("Appliance Module Plus", "Relay1", onOff, "On"),
		enum("Appliance Module Plus", "Relay2", onOff, "Off"),
	}},
	{Name: "Relay Module", Fields: []Field{enum("Relay Module", "io", onOff, "On")}},
	{Name: "Thermostat", Fields: []Field{
		enum("Thermostat", "mode", []string{"Auto", "Cool", "Heat", "Off"}, "Auto"),
		point("cooling_point", "cooling point", "26"),
		point("heating_point", "heating point", "20"),
		enum("Thermostat", "fan", []string{"On", "Auto"}, "Auto"),
	}},
	{Name: "Infrared Sensor", Fields: []Field{
		enum("Infrared Sensor", "io", onOff, "On"),
		{Name: "code", JSON: "code", Kind: Integer, Min: 1, Max: 4, RangeMust: true, Example: "1", Section: "2.3", Quote: QuoteCode},
	}},
	{Name: "Light Dimmer", Fields: []Field{
		{Name: "dimming", JSON: "dimming", Kind: Integer, Min: 1, Max: 100, RangeMust: true, Example: "50", Section: "2.3", Quote: QuoteDimming},
	}},
}

// LookupType finds a type by its published name, exactly.
func LookupType(name string) (*Type, bool) {
	for _, t := range Types {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// TypeNames are the published type names in table order.
func TypeNames() []string {
	out := make([]string, len(Types))
	for i, t := range Types {
		out[i] = t.Name
	}
	return out
}

// The envelope (published 2.1) and the operations' own fields (2.2, 2.4).
var (
	APIKey       = Field{Name: device.FieldAPIKey, Kind: Key, RangeMust: true, Example: "an-api-key", Section: "2.1", Quote: QuoteRegistered}
	TimestampF   = Field{Name: device.FieldTimestamp, Kind: Timestamp, RangeMust: true, Example: "20260101120000", Section: "2.1", Quote: QuoteTimestamp}
	Sign         = Field{Name: device.FieldSign, Kind: Hex, Len: 32, RangeMust: true, Example: "0123456789abcdef0123456789abcdef", Section: "2.1", Quote: QuoteSign}
	Account      = Field{Name: device.FieldAccount, Kind: Hex, Len: 24, RangeMust: true, Example: "5f3a9c0e1b2d4f6a8c0e1b2d", Section: "2.1", Quote: QuoteAccount}
	MAC          = Field{Name: device.FieldMAC, Kind: Hex, Len: 12, RangeMust: true, Example: "a4c138f0e2b1", Section: "2.1", Quote: QuoteMAC}
	SN           = Field{Name: device.FieldSN, Kind: Hex, Len: 32, RangeMust: true, Example: "0123456789abcdef0123456789abcdef", Section: "2.2", Quote: QuoteSN}
	DeviceID     = Field{Name: device.FieldDeviceID, Kind: Hex, Len: 32, Example: "0123456789abcdef0123456789abcdef", Section: "2.2", Quote: QuoteSN}
	TypeField    = Field{Name: device.FieldType, Kind: TypeName, RangeMust: true, Example: "Light Dimmer", Section: "2.3", Quote: QuoteType}
	FormatField  = Field{Name: device.FieldFormat, Kind: FormatName, Example: "json", Section: "4", Quote: QuoteFormat}
	MessageType  = Field{Name: device.FieldMessageType, Kind: Token, Example: "message", Section: "2.4", Quote: QuoteMessageToken}
	MessageValue = Field{Name: device.FieldMessageValue, Kind: Setting, RangeMust: true, Example: "brightness=80", Section: "2.4", Quote: QuoteMessageVal}
	Name         = Field{Name: device.FieldName, Kind: Text, MaxLen: 64, Trim: true, Example: "Conformance Check", Section: "2.2", Quote: QuoteNameRule}
)

// Envelope are the fields every request carries (published 2.1), in
// published order.
var Envelope = []*Field{&APIKey, &TimestampF, &Sign, &Account, &MAC}

// Lookup finds an envelope or operation field, or a command field of any
// type, by its XML name.
func Lookup(name string) (*Field, bool) {
	for _, f := range []*Field{&APIKey, &TimestampF, &Sign, &Account, &MAC, &SN, &DeviceID, &TypeField, &FormatField,
		&MessageType, &MessageValue, &Name} {
		if f.Name == name {
			return f, true
		}
	}
	for _, t := range Types {
		if f, ok := t.Field(name); ok {
			return f, true
		}
	}
	return nil, false
}

// JSONName is the JSON key of a field given by its XML name (they differ
// only for the thermostat points).
func JSONName(name string) string {
	for _, t := range Types {
		if f, ok := t.Field(name); ok {
			return f.JSON
		}
	}
	return name
}

// XMLName is the XML name of a field given by its JSON key.
func XMLName(key string) string {
	for _, t := range Types {
		for i := range t.Fields {
			if t.Fields[i].JSON == key {
				return t.Fields[i].Name
			}
		}
	}
	return key
}

// opFields are an operation's own fields besides the envelope and format.
func opFields(op device.Operation) []string {
	switch op {
	case device.SendCommand:
		return []string{device.FieldSN, device.FieldDeviceID, device.FieldType}
	case device.SendMessage:
		return []string{device.FieldMessageType, device.FieldMessageValue}
	case device.UpdateName:
		return []string{device.FieldSN, device.FieldName}
	}
	return nil
}

// title is a short description of a value for titles: quoted, long values
// cut.
func title(s string) string {
	r := []rune(s)
	if len(r) > 24 {
		s = string(r[:20]) + "…"
	}
	return `"` + titleEscaper.Replace(s) + `"`
}

// titleEscaper is built once: a Replacer builds its tables on first use,
// which per call was 7 % of gwconform run's CPU.
var titleEscaper = strings.NewReplacer("\t", `\t`, "\n", `\n`, "\r", `\r`)
