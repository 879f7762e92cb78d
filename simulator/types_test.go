package simulator_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// val is one value of a field as a test writes it.
type val struct {
	text string
	num  bool // a JSON number rather than a string
	want any  // the canonical stored value (accepted values only)
}

func (v val) field(key string) simtest.F {
	if v.num {
		return simtest.N(key, v.text)
	}
	return simtest.S(key, v.text)
}

func (v val) String() string {
	if v.num {
		return "number " + cut(v.text)
	}
	return strconv.Quote(cut(v.text))
}

func cut(s string) string {
	if len(s) > 24 {
		return s[:24] + "…"
	}
	return s
}

// canonical is how the admin API shows an accepted text value of f.
func canonical(f *device.Field, text string) any {
	switch f.Kind {
	case device.Enum:
		for _, w := range f.Values {
			if strings.EqualFold(w, strings.TrimSpace(text)) {
				return w
			}
		}
	case device.Integer, device.Decimal:
		n, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err == nil {
			return n
		}
	case device.Text:
		return strings.TrimSpace(text)
	}
	panic("not a valid value: " + text)
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

var thousandDigits = "1" + strings.Repeat("0", 999)

// goodValues are values of f that must be accepted, with what is stored.
// Numbers are written both as JSON strings and JSON numbers.
func goodValues(f *device.Field) []val {
	var vs []val
	numeric := func(ns ...float64) {
		for _, n := range ns {
			vs = append(vs, val{text: num(n), want: n}, val{text: num(n), num: true, want: n})
		}
	}
	switch f.Kind {
	case device.Enum:
		for _, w := range f.Values {
			vs = append(vs, val{text: w, want: w}, val{text: strings.ToLower(w), want: w},
				val{text: strings.ToUpper(w), want: w})
		}
	case device.Integer:
		numeric(f.Min, f.Max, float64(int((f.Min+f.Max)/2)))
	case device.Decimal:
		numeric(f.Min, f.Max, f.Min+0.5, (f.Min+f.Max)/2+0.25)
		// Zero, a negative fraction and a room temperature, where the
		// field's range holds them (the thermostat points' does).
		for _, n := range []float64{26.5, -0.25, 0} {
			if f.Min <= n && n <= f.Max {
				numeric(n)
			}
		}
	case device.Text:
		vs = append(vs, val{text: f.Example, want: f.Example}, val{text: "x", want: "x"},
			val{text: strings.Repeat("a", f.MaxLen), want: strings.Repeat("a", f.MaxLen)},
			val{text: "Grün ✓", want: "Grün ✓"})
	}
	return vs
}

// badValues are values of f that must be refused with invalid_field.
func badValues(f *device.Field, format device.Format) []val {
	vs := []val{{text: ""}, {text: "   "}}
	if f.Kind != device.Text {
		vs = append(vs, val{text: "abc"})
	}
	if format == device.JSON {
		vs = append(vs, val{text: "true", num: true}, val{text: "null", num: true},
			val{text: `{"value":"On"}`, num: true}, val{text: `["On"]`, num: true})
	} else {
		vs = append(vs, val{text: "<value>On</value>", num: true})
	}
	both := func(texts ...string) {
		for _, s := range texts {
			vs = append(vs, val{text: s})
			if format == device.JSON {
				vs = append(vs, val{text: s, num: true})
			}
		}
	}
	switch f.Kind {
	case device.Enum:
		vs = append(vs, val{text: "Maybe"}, val{text: f.Values[0] + f.Values[0]})
		if format == device.JSON {
			vs = append(vs, val{text: "1", num: true})
		}
	case device.Integer:
		both(num(f.Min-1), num(f.Max+1), num(f.Min)+".5", num(f.Min)+"5e-1", thousandDigits, "-"+thousandDigits)
		vs = append(vs, val{text: "1 2"}, val{text: "NaN"}, val{text: "1e1"}) // 1e1 in a string: open, refused by default
	case device.Decimal:
		both(num(f.Min-0.1), num(f.Max+0.1), num(f.Max+1), num(f.Max)+"1E0", thousandDigits, "0."+thousandDigits)
		vs = append(vs, val{text: "1e1"}, val{text: "2E1"}) // open in a string, refused by default
		vs = append(vs, val{text: "NaN"}, val{text: "Infinity"}, val{text: "-Infinity"}, val{text: "Inf"},
			val{text: "26,5"}, val{text: "0x1A"}, val{text: "26.5C"})
	case device.Text:
		vs = append(vs, val{text: strings.Repeat("a", f.MaxLen+1)}, val{text: "a\tb"}, val{text: "a\nb"})
		if format == device.JSON {
			vs = append(vs, val{text: "5", num: true}, val{text: "a\u0007b"})
		}
	}
	return vs
}

// TestEveryTypeEveryValue sends, for every device type in device.Types and
// both formats, every allowed value of every field (each must be stored in
// canonical form) and every invalid class of value (each must be refused
// with 400 invalid_field naming the field, and change nothing).
func TestEveryTypeEveryValue(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	_, c := start(t, simulator.Options{})
	for _, typ := range device.Types {
		sn := snOf(typ.Name)
		for _, format := range formats {
			for i := range typ.Fields {
				f := &typ.Fields[i]
				key := f.WireName(format)
				for _, v := range goodValues(f) {
					if v.num && format == device.XML {
						continue
					}
					t.Run(fmt.Sprintf("%s/%s/%s=%s", typ.Name, format, key, v), func(t *testing.T) {
						fields := c.Command(sn, typ.Name, v.field(key))
						expect(t, c, format, sendOp(c, device.SendCommand, format, fields),
							ok(setState(typ.Name, f.Name, v.want)))
					})
				}
				for _, v := range badValues(f, format) {
					t.Run(fmt.Sprintf("%s/%s/%s=%s refused", typ.Name, format, key, v), func(t *testing.T) {
						fields := c.Command(sn, typ.Name, v.field(key))
						expect(t, c, format, sendOp(c, device.SendCommand, format, fields),
							bad(device.CodeInvalidField, key))
					})
				}
			}
		}
	}
}

// TestEveryTypeCommandShape covers, for every type and format, a command
// with all its fields, one with none, fields of other types, a type that
// does not match the device, and the absent device.
func TestEveryTypeCommandShape(t *testing.T) {
	t.Parallel()
	_, c := start(t, simulator.Options{})
	for _, typ := range device.Types {
		sn := snOf(typ.Name)
		own := map[string]bool{}
		for _, format := range formats {
			t.Run(typ.Name+"/"+format.String(), func(t *testing.T) {
				var all []simtest.F
				want := setState(typ.Name)
				for i := range typ.Fields {
					f := &typ.Fields[i]
					own[f.WireName(format)] = true
					all = append(all, simtest.S(f.WireName(format), f.Example))
					want.state[f.Name] = canonical(f, f.Example)
				}
				t.Run("all fields", func(t *testing.T) {
					expect(t, c, format, sendOp(c, device.SendCommand, format, c.Command(sn, typ.Name, all...)), ok(want))
				})
				t.Run("no field", func(t *testing.T) {
					expect(t, c, format, sendOp(c, device.SendCommand, format, c.Command(sn, typ.Name)),
						bad(device.CodeMissingField, typ.Fields[0].WireName(format)))
				})
				for _, other := range device.Types {
					for i := range other.Fields {
						key := other.Fields[i].WireName(format)
						if own[key] {
							continue
						}
						t.Run("field of "+other.Name+" "+key, func(t *testing.T) {
							fields := c.Command(sn, typ.Name, append(all[:1:1], simtest.S(key, other.Fields[i].Example))...)
							expect(t, c, format, sendOp(c, device.SendCommand, format, fields),
								bad(device.CodeUnexpectedField, key))
						})
					}
					if other == typ {
						continue
					}
					t.Run("sent to a "+other.Name, func(t *testing.T) {
						fields := c.Command(snOf(other.Name), typ.Name, all...)
						expect(t, c, format, sendOp(c, device.SendCommand, format, fields),
							rejected(409, device.CodeTypeMismatch, device.FieldType))
					})
				}
				if format == device.JSON {
					for i := range typ.Fields {
						if f := &typ.Fields[i]; f.Name != f.JSON {
							t.Run("XML name "+f.Name+" in JSON", func(t *testing.T) {
								fields := c.Command(sn, typ.Name, simtest.S(f.Name, f.Example))
								expect(t, c, format, sendOp(c, device.SendCommand, format, fields),
									bad(device.CodeUnexpectedField, f.Name))
							})
						}
					}
				}
				t.Run("unknown device", func(t *testing.T) {
					fields := c.Command(simtest.SN('f', 99), typ.Name, all...)
					expect(t, c, format, sendOp(c, device.SendCommand, format, fields),
						rejected(404, device.CodeDeviceNotFound, device.FieldSN))
				})
			})
		}
	}
}
