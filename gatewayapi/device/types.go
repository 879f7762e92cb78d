// Package device is the domain of the Gateway Device Management Interface:
// the device types and their fields (published section 2.3), the request
// envelope and the three operations, the validation of every value, a
// device's state and the error codes. It knows nothing of HTTP, of the wire
// formats beyond each field's two names, or of storage.
package device

import "strings"

// Kind is how a field's value is written and checked.
type Kind uint8

const (
	// Enum is one of a fixed list of words, matched in any letter case and
	// stored in the canonical case of the published table.
	Enum Kind = iota + 1
	// Integer is a whole number in [Min, Max], written as digits (a JSON
	// number or string).
	Integer
	// Decimal is a finite decimal number in [Min, Max] (no exponent).
	Decimal
	// Text is free text of 1 to MaxLen characters without control characters.
	Text
)

// MaxFields is the most fields one device type may have; State holds one
// numeric slot per field.
const MaxFields = 4

// Field is one command field of a device type.
type Field struct {
	// Name is the canonical name: the XML element and the state key.
	Name string
	// JSON is the member name in a JSON body; it differs from Name only for
	// the thermostat points, whose JSON keys contain a space.
	JSON string
	Kind Kind
	// Values are the allowed words of an Enum, in canonical case.
	Values []string
	// Min and Max bound Integer and Decimal values.
	Min, Max float64
	// MaxLen bounds Text values, in characters.
	MaxLen int
	// Default is the value a device of this type starts with when a fleet
	// gives none; Example is the value the published examples use.
	Default, Example string
	// Rule is the sentence that error messages use: "<field> must be <Rule>".
	Rule string
}

// Type is a device type of published section 2.3.
type Type struct {
	Name   string
	Fields []Field
	// ID is the type's position in Types; it is what the store keeps.
	ID       uint8
	defaults State
}

var onOff = []string{"On", "Off"}

func enum(name string, values []string, def, example string) Field {
	return Field{Name: name, JSON: name, Kind: Enum, Values: values, Default: def, Example: example,
		Rule: "one of " + strings.Join(values, ", ")}
}

func point(name, json, def string) Field {
	return Field{Name: name, JSON: json, Kind: Decimal, Min: -50, Max: 100, Default: def, Example: def,
		Rule: "a decimal number of degrees Celsius from -50 to 100"}
}

// Types is the table of published section 2.3. Adding a device type is
// adding an entry here; nothing else in the simulator or the harness names a
// type or a field.
var Types = []*Type{
	{Name: "Appliance Module", Fields: []Field{enum("io", onOff, "Off", "On")}},
	{Name: "Appliance Module Plus", Fields: []Field{
		{Name: "opt", JSON: "opt", Kind: Text, MaxLen: 32, Default: "normal", Example: "normal",
			Rule: "text of 1 to 32 characters"},
		enum("Relay1", onOff, "Off", "On"),
		enum("Relay2", onOff, "Off", "Off"),
	}},
	{Name: "Relay Module", Fields: []Field{enum("io", onOff, "Off", "On")}},
	{Name: "Thermostat", Fields: []Field{
		enum("mode", []string{"Auto", "Cool", "Heat", "Off"}, "Off", "Auto"),
		point("cooling_point", "cooling point", "26"),
		point("heating_point", "heating point", "20"),
		enum("fan", []string{"On", "Auto"}, "Auto", "Auto"),
	}},
	{Name: "Infrared Sensor", Fields: []Field{
		enum("io", onOff, "Off", "On"),
		{Name: "code", JSON: "code", Kind: Integer, Min: 1, Max: 4, Default: "1", Example: "1",
			Rule: "an integer from 1 to 4"},
	}},
	{Name: "Light Dimmer", Fields: []Field{
		{Name: "dimming", JSON: "dimming", Kind: Integer, Min: 1, Max: 100, Default: "100", Example: "50",
			Rule: "an integer from 1 to 100"},
	}},
}

// typeNames holds Types' names in table order, side by side: LookupType
// reads them without following a pointer to each type.
var typeNames []string

func init() {
	for i, t := range Types {
		if len(t.Fields) > MaxFields {
			panic("device: type " + t.Name + " has more than MaxFields fields")
		}
		t.ID = uint8(i)
		t.defaults = t.computeDefaults()
		typeNames = append(typeNames, t.Name)
	}
}

// LookupType finds a type by its published name, matched exactly. The
// names are scanned: for so few that is quicker than a map, whose
// hashing of the name was some 6 % of the client report's request path
// (a profile under load); and the names lie side by side (typeNames), on a
// cache line or two, rather than one on each type's own lines.
func LookupType(name string) (*Type, bool) {
	for i, n := range typeNames {
		if n == name {
			return Types[i], true
		}
	}
	return nil, false
}

// A is a name with its indefinite article, as a sentence says it: "a
// Light Dimmer", "an Appliance Module".
func A(name string) string {
	if name != "" && strings.ContainsRune("AEIOUaeiou", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// TypeNames lists the published type names in table order.
func TypeNames() []string {
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = t.Name
	}
	return names
}

// Field returns the field with the given canonical name and its position.
func (t *Type) Field(name string) (*Field, int, bool) {
	for i := range t.Fields {
		if t.Fields[i].Name == name {
			return &t.Fields[i], i, true
		}
	}
	return nil, -1, false
}

// WireName is a field's name in the given format.
func (f *Field) WireName(format Format) string {
	if format == JSON {
		return f.JSON
	}
	return f.Name
}

// Format is a wire format of the interface.
type Format uint8

const (
	JSON Format = iota + 1
	XML
)

func (f Format) String() string {
	switch f {
	case JSON:
		return "json"
	case XML:
		return "xml"
	}
	return "unknown"
}

// ParseFormat reads "json" or "xml" in any letter case.
func ParseFormat(s string) (Format, bool) {
	switch strings.ToLower(s) {
	case "json":
		return JSON, true
	case "xml":
		return XML, true
	}
	return 0, false
}
