package device

import (
	"strings"
	"testing"
)

const (
	key  = "demo-key"
	ts   = "20240102030405"
	sign = "0123456789abcdef0123456789abcdef"
	acct = "5f3a9c0e1b2d4f6a8c0e1b2d"
	mac  = "a4c138f0e2b1"
	sn   = "0123456789abcdef0123456789abcd06"
)

func envelope() []Pair {
	return []Pair{{FieldAPIKey, Str(key)}, {FieldTimestamp, Str(ts)}, {FieldSign, Str(sign)},
		{FieldAccount, Str(acct)}, {FieldMAC, Str(mac)}}
}

func with(pairs []Pair, more ...Pair) []Pair { return append(append([]Pair{}, pairs...), more...) }

func without(pairs []Pair, key string) []Pair {
	var out []Pair
	for _, p := range pairs {
		if p.Key != key {
			out = append(out, p)
		}
	}
	return out
}

func replace(pairs []Pair, p Pair) []Pair {
	out := without(pairs, p.Key)
	return append(out, p)
}

func num(s string) Value { return Value{Text: s, Kind: Number} }

func dimmer(v Value) []Pair {
	return with(envelope(), Pair{FieldSN, Str(sn)}, Pair{FieldType, Str("Light Dimmer")}, Pair{"dimming", v})
}

func TestParseEnvelope(t *testing.T) {
	// Hex fields in either case; a space around one is no hexadecimal
	// character (published 2.1), so it is refused, not trimmed.
	for _, m := range []string{" " + mac, mac + " ", " " + strings.ToUpper(mac) + " "} {
		if _, err := Parse(SendCommand, JSON, replace(dimmer(Str("7")), Pair{FieldMAC, Str(m)})); err == nil || err.Field != FieldMAC {
			t.Errorf("mac %q: %v", m, err)
		}
	}
	r, err := Parse(SendCommand, JSON, replace(replace(dimmer(Str("7")), Pair{FieldMAC, Str("A4C138F0E2B1")}),
		Pair{FieldSign, Str(strings.ToUpper(sign))}))
	if err != nil {
		t.Fatal(err)
	}
	if r.MAC != mac || r.Sign != sign || r.APIKey != key || r.AccountID != acct || r.SN != sn || r.Type.Name != "Light Dimmer" {
		t.Errorf("parsed %+v", r)
	}
	if r.Time.Format(TimestampLayout) != ts || r.Format != 0 {
		t.Errorf("time %s format %v", r.Time, r.Format)
	}
	if len(r.Settings) != 1 || r.Settings[0].Num != 7 {
		t.Errorf("settings %+v", r.Settings)
	}
	// Each missing envelope field is named.
	for _, name := range EnvelopeFields {
		for _, op := range Operations {
			_, err := Parse(op, XML, without(dimmer(Str("7")), name))
			if err == nil || err.Code != CodeMissingField || err.Field != name {
				t.Errorf("%s without %s: %v", op, name, err)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	base := dimmer(Str("7"))
	cases := []struct {
		name   string
		format Format
		pairs  []Pair
		code   string
		field  string
	}{
		{"field twice", JSON, with(base, Pair{"dimming", Str("8")}), CodeInvalidField, "dimming"},
		{"envelope field twice", JSON, with(base, Pair{FieldMAC, Str(mac)}), CodeInvalidField, FieldMAC},
		{"api_key a number", JSON, replace(base, Pair{FieldAPIKey, num("5")}), CodeInvalidField, FieldAPIKey},
		{"api_key null", JSON, replace(base, Pair{FieldAPIKey, Value{Text: "null", Kind: Other}}), CodeInvalidField, FieldAPIKey},
		{"api_key too long", JSON, replace(base, Pair{FieldAPIKey, Str(strings.Repeat("k", 129))}), CodeInvalidField, FieldAPIKey},
		{"timestamp number", JSON, replace(base, Pair{FieldTimestamp, num(ts)}), CodeInvalidField, FieldTimestamp},
		{"timestamp 13", JSON, replace(base, Pair{FieldTimestamp, Str(ts[:13])}), CodeInvalidField, FieldTimestamp},
		{"timestamp month 13", JSON, replace(base, Pair{FieldTimestamp, Str("20241301000000")}), CodeInvalidField, FieldTimestamp},
		{"timestamp 31 April", JSON, replace(base, Pair{FieldTimestamp, Str("20240431000000")}), CodeInvalidField, FieldTimestamp},
		{"timestamp 60 s", JSON, replace(base, Pair{FieldTimestamp, Str("20240101000060")}), CodeInvalidField, FieldTimestamp},
		{"timestamp Arabic-Indic digits", JSON, replace(base, Pair{FieldTimestamp, Str("٢٠٢٤٠١٠١٠٠٠٠٠٠")}), CodeInvalidField, FieldTimestamp},
		{"sign 33", JSON, replace(base, Pair{FieldSign, Str(sign + "0")}), CodeInvalidField, FieldSign},
		{"mac with colons", JSON, replace(base, Pair{FieldMAC, Str("a4:c1:38:f0:e2:b1")}), CodeInvalidField, FieldMAC},
		{"format yaml", JSON, with(base, Pair{FieldFormat, Str("yaml")}), CodeInvalidField, FieldFormat},
		{"format other", XML, with(base, Pair{FieldFormat, Str("json")}), CodeInvalidField, FieldFormat},
		{"format number", JSON, with(base, Pair{FieldFormat, num("1")}), CodeInvalidField, FieldFormat},
		{"no sn", JSON, without(base, FieldSN), CodeMissingField, FieldSN},
		{"no type", JSON, without(base, FieldType), CodeMissingField, FieldType},
		{"type case", JSON, replace(base, Pair{FieldType, Str("light dimmer")}), CodeInvalidField, FieldType},
		{"no field of the type", JSON, without(base, "dimming"), CodeMissingField, "dimming"},
		{"field of another type", JSON, with(base, Pair{"io", Str("On")}), CodeUnexpectedField, "io"},
		{"unknown field first in order", JSON, with(base, Pair{"zz", Str("1")}, Pair{"aa", Str("1")}), CodeUnexpectedField, "zz"},
		{"device_id differs", JSON, with(base, Pair{FieldDeviceID, Str(strings.Replace(sn, "06", "07", 1))}), CodeInvalidField, FieldDeviceID},
		{"device_id bad", JSON, with(base, Pair{FieldDeviceID, Str("06")}), CodeInvalidField, FieldDeviceID},
		{"message sn", JSON, with(envelope(), Pair{FieldMessageType, Str("m")}, Pair{FieldMessageValue, Str("a=1")}, Pair{FieldSN, Str(sn)}),
			CodeUnexpectedField, FieldSN},
		{"message no value", JSON, with(envelope(), Pair{FieldMessageType, Str("m")}), CodeMissingField, FieldMessageValue},
		{"message value long", JSON, with(envelope(), Pair{FieldMessageType, Str("m")}, Pair{FieldMessageValue, Str("a=" + strings.Repeat("1", 255))}),
			CodeInvalidField, FieldMessageValue},
		{"name no sn", JSON, with(envelope(), Pair{FieldName, Str("x")}), CodeMissingField, FieldSN},
		{"name control", XML, with(envelope(), Pair{FieldSN, Str(sn)}, Pair{FieldName, Str("a\x7fb")}), CodeInvalidField, FieldName},
		{"name bad UTF-8", XML, with(envelope(), Pair{FieldSN, Str(sn)}, Pair{FieldName, Str("a\xffb")}), CodeInvalidField, FieldName},
		{"name device_id", XML, with(envelope(), Pair{FieldDeviceID, Str(sn)}, Pair{FieldName, Str("x")}), CodeUnexpectedField, FieldDeviceID},
	}
	for _, tc := range cases {
		op := SendCommand
		for _, p := range tc.pairs {
			switch p.Key {
			case FieldMessageType:
				op = SendMessage
			case FieldName:
				op = UpdateName
			}
		}
		r, err := Parse(op, tc.format, tc.pairs)
		if err == nil || err.Code != tc.code || err.Field != tc.field || err.Message == "" {
			t.Errorf("%s: got %v %+v, want %s (%s)", tc.name, err, r, tc.code, tc.field)
		}
	}
}

func TestParseAliasFormatAndNames(t *testing.T) {
	base := dimmer(Str("7"))
	alias := with(without(base, FieldSN), Pair{FieldDeviceID, Str(strings.ToUpper(sn))})
	if r, err := Parse(SendCommand, JSON, alias); err != nil || r.SN != sn {
		t.Errorf("device_id alias: %v %+v", err, r)
	}
	if r, err := Parse(SendCommand, JSON, with(base, Pair{FieldDeviceID, Str(strings.ToUpper(sn))})); err != nil || r.SN != sn {
		t.Errorf("device_id equal to sn: %v %+v", err, r)
	}
	if r, err := Parse(SendCommand, XML, with(base, Pair{FieldFormat, Str("xml")})); err != nil || r.Format != XML {
		t.Errorf("format xml: %v %+v", err, r)
	}
	// Thermostat points: the JSON key has a space, the XML element an
	// underscore; errors name the field as the request wrote it.
	therm := with(envelope(), Pair{FieldSN, Str(sn)}, Pair{FieldType, Str("Thermostat")})
	if _, err := Parse(SendCommand, JSON, with(therm, Pair{"cooling point", num("26.5")})); err != nil {
		t.Error(err)
	}
	if _, err := Parse(SendCommand, XML, with(therm, Pair{"cooling_point", Str("26.5")})); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct {
		format     Format
		key, code  string
		wantInText string
	}{
		{JSON, "cooling_point", CodeUnexpectedField, `"cooling point"`},
		{XML, "cooling point", CodeUnexpectedField, `"cooling_point"`},
	} {
		_, err := Parse(SendCommand, tc.format, with(therm, Pair{tc.key, Str("26")}))
		if err == nil || err.Code != tc.code || err.Field != tc.key || !strings.Contains(err.Message, tc.wantInText) {
			t.Errorf("%s %q: %v", tc.format, tc.key, err)
		}
	}
	if _, err := Parse(SendCommand, JSON, with(therm, Pair{"heating point", Str("hot")})); err == nil || err.Field != "heating point" {
		t.Errorf("JSON heating point error: %v", err)
	}
	if _, err := Parse(SendCommand, XML, with(therm, Pair{"heating_point", Str("hot")})); err == nil || err.Field != "heating_point" {
		t.Errorf("XML heating point error: %v", err)
	}
	// Unknown operation.
	if _, err := Parse(Operation(9), JSON, envelope()); err == nil || err.Code != CodeNotFound {
		t.Errorf("unknown operation: %v", err)
	}
}

func TestFieldValues(t *testing.T) {
	dim, _ := LookupType("Light Dimmer")
	therm, _ := LookupType("Thermostat")
	plus, _ := LookupType("Appliance Module Plus")
	cases := []struct {
		f    *Field
		v    Value
		want float64
		text string
		ok   bool
	}{
		{&dim.Fields[0], Str("1"), 1, "", true},
		{&dim.Fields[0], Str("100"), 100, "", true},
		// Not trimmed: " 100 " is not a number in decimal digits, " On"
		// not On (only name is trimmed, CONTRACT 3).
		{&dim.Fields[0], Str(" 100 "), 0, "", false},
		{&dim.Fields[0], Str("100 "), 0, "", false},
		{&dim.Fields[0], num("100"), 100, "", true},
		{&dim.Fields[0], Str("+5"), 0, "", false}, // open: refused by default
		{&dim.Fields[0], Str("0"), 0, "", false},
		{&dim.Fields[0], Str("-0"), 0, "", false},
		{&dim.Fields[0], num("101"), 0, "", false},
		{&dim.Fields[0], num("50.0"), 50, "", true}, // CONTRACT 2: any JSON number syntax
		{&dim.Fields[0], num("5e1"), 50, "", true},
		{&dim.Fields[0], num("5.5e1"), 55, "", true},
		{&dim.Fields[0], num("1.5"), 0, "", false},
		{&dim.Fields[0], num("15e-1"), 0, "", false},
		{&dim.Fields[0], num("99999999999999999999"), 0, "", false},
		{&dim.Fields[0], num(strings.Repeat("9", 1000)), 0, "", false},
		{&dim.Fields[0], Value{Text: "a boolean", Kind: Other}, 0, "", false},
		{&therm.Fields[1], num("-50"), -50, "", true},
		{&therm.Fields[1], Str("100.0"), 100, "", true},
		{&therm.Fields[1], Str(".5"), 0, "", false}, // open: refused by default
		{&therm.Fields[1], Str("-50.0000001"), 0, "", false},
		{&therm.Fields[1], Str("NaN"), 0, "", false},
		{&therm.Fields[1], Str("Inf"), 0, "", false},
		{&therm.Fields[1], Str("+Infinity"), 0, "", false},
		{&therm.Fields[1], num("1e1"), 10, "", true},
		{&therm.Fields[1], num("2.1e1"), 21, "", true},
		{&therm.Fields[1], num("1E-1"), 0.1, "", true},
		{&therm.Fields[1], num("1e3"), 0, "", false},
		{&therm.Fields[1], Str("0x10"), 0, "", false},
		{&therm.Fields[1], Str("1_0"), 0, "", false},
		{&therm.Fields[1], num("0." + strings.Repeat("1", 1000)), 0, "", false},
		{&therm.Fields[0], Str("hEaT"), 2, "", true},
		{&therm.Fields[0], num("1"), 0, "", false},
		{&therm.Fields[3], Str("off"), 0, "", false},
		{&plus.Fields[0], Str(" eco "), 0, "", false}, // open: refused by default
		{&plus.Fields[0], Str(strings.Repeat("é", 32)), 0, strings.Repeat("é", 32), true},
		{&plus.Fields[0], Str(strings.Repeat("é", 33)), 0, "", false},
		{&plus.Fields[0], num("5"), 0, "", false},
		{&plus.Fields[0], Str("a\u0000b"), 0, "", false},
	}
	for _, tc := range cases {
		s, err := tc.f.Parse(1, tc.v)
		if (err == nil) != tc.ok {
			t.Errorf("%s %+v: err %v, want ok=%v", tc.f.Name, tc.v, err, tc.ok)
			continue
		}
		if err != nil {
			if err.Code != CodeInvalidField || err.Field != tc.f.Name {
				t.Errorf("%s %+v: %v", tc.f.Name, tc.v, err)
			}
			continue
		}
		if s.Num != tc.want || s.Text != tc.text || s.Index != 1 {
			t.Errorf("%s %+v: %+v", tc.f.Name, tc.v, s)
		}
	}
}

func TestTypesTable(t *testing.T) {
	names := TypeNames()
	want := []string{"Appliance Module", "Appliance Module Plus", "Relay Module", "Thermostat", "Infrared Sensor", "Light Dimmer"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("types %v", names)
	}
	for i, typ := range Types {
		if typ.ID != uint8(i) {
			t.Errorf("%s has ID %d", typ.Name, typ.ID)
		}
		if got, ok := LookupType(typ.Name); !ok || got != typ {
			t.Errorf("LookupType(%q)", typ.Name)
		}
		for j := range typ.Fields {
			f := &typ.Fields[j]
			for _, v := range []string{f.Default, f.Example} {
				if _, err := f.Parse(j, Str(v)); err != nil {
					t.Errorf("%s.%s: default or example %q refused: %v", typ.Name, f.Name, v, err)
				}
			}
			if got, i, ok := typ.Field(f.Name); !ok || got != f || i != j {
				t.Errorf("Field(%q)", f.Name)
			}
		}
		if _, _, ok := typ.Field("nope"); ok {
			t.Error("Field(nope) found")
		}
	}
	if _, ok := LookupType("Toaster"); ok {
		t.Error("Toaster is a type")
	}
	for _, op := range Operations {
		if !strings.HasPrefix(op.Path(), "/v1/") || op.Name() == "unknown" || op.String() != op.Name() {
			t.Errorf("operation %d: %s %s", op, op.Path(), op.Name())
		}
	}
	if f, ok := ParseFormat("XML"); !ok || f != XML || f.String() != "xml" {
		t.Error("ParseFormat(XML)")
	}
	if _, ok := ParseFormat("yaml"); ok {
		t.Error("ParseFormat(yaml)")
	}
}

func TestStateApplyAndParseState(t *testing.T) {
	therm, _ := LookupType("Thermostat")
	s := therm.DefaultState()
	if got := therm.StateMap(s); got["mode"] != "Off" || got["cooling_point"] != 26.0 || got["heating_point"] != 20.0 || got["fan"] != "Auto" {
		t.Errorf("default thermostat %v", got)
	}
	set, _ := therm.Fields[1].Parse(1, Str("22.5"))
	s2 := therm.Apply(s, set)
	if got := therm.StateMap(s2); got["cooling_point"] != 22.5 || got["mode"] != "Off" {
		t.Errorf("after apply %v", got)
	}
	if therm.StateMap(s)["cooling_point"] != 26.0 {
		t.Error("Apply changed its argument")
	}
	ir, _ := LookupType("Infrared Sensor")
	st, err := ir.ParseState(map[string]any{"io": true, "code": 3})
	if err != nil || ir.Get(st, 0) != "On" || ir.Get(st, 1) != int64(3) {
		t.Errorf("ParseState: %v %v", err, ir.StateMap(st))
	}
	for _, bad := range []map[string]any{{"code": 5}, {"colour": "red"}, {"io": []any{"On"}}, {"code": "x"}} {
		if _, err := ir.ParseState(bad); err == nil {
			t.Errorf("ParseState(%v) accepted", bad)
		}
	}
}

// TestAcceptOpenForms: with AcceptOpen each open form is read as a lenient
// service reads it, and what no reading takes is still refused.
func TestAcceptOpenForms(t *testing.T) {
	dim, _ := LookupType("Light Dimmer")
	therm, _ := LookupType("Thermostat")
	plus, _ := LookupType("Appliance Module Plus")
	for _, tc := range []struct {
		f    *Field
		v    string
		want float64
		ok   bool
	}{
		{&dim.Fields[0], "+50", 50, true}, {&dim.Fields[0], "0050", 50, true}, {&dim.Fields[0], " 50 ", 50, true},
		{&dim.Fields[0], "50.0", 50, true}, {&dim.Fields[0], "5e1", 50, true}, {&dim.Fields[0], "0x32", 50, true},
		{&dim.Fields[0], "５０", 50, true}, {&dim.Fields[0], "٥٠", 50, true}, {&dim.Fields[0], "50.5", 0, false},
		{&dim.Fields[0], "5 0", 0, false}, {&dim.Fields[0], "+101", 0, false}, {&dim.Fields[0], "NaN", 0, false},
		{&therm.Fields[1], ".5", 0.5, true}, {&therm.Fields[1], "21.", 21, true}, {&therm.Fields[1], "21,5", 21.5, true},
		{&therm.Fields[1], "2.1e1", 21, true}, {&therm.Fields[1], "0x15", 0, false}, {&therm.Fields[1], "Infinity", 0, false},
		{&therm.Fields[0], " Heat ", 0, false}, {&plus.Fields[1], "On!", 0, false},
	} {
		s, err := tc.f.parse(0, Str(tc.v), tc.f.Name, AcceptOpen)
		if (err == nil) != tc.ok || tc.ok && s.Num != tc.want {
			t.Errorf("%s %q: %+v %v, want %v ok=%v", tc.f.Name, tc.v, s, err, tc.want, tc.ok)
		}
	}
	if s, err := plus.Fields[0].parse(0, Str(" eco\t"), "opt", AcceptOpen); err != nil || s.Text != "eco" {
		t.Errorf("padded opt: %+v %v", s, err)
	}
}

// TestArticles: a type's name takes "an" before a vowel, in the
// validator's messages too ("a Appliance Module").
func TestArticles(t *testing.T) {
	if A("Appliance Module") != "an Appliance Module" || A("Light Dimmer") != "a Light Dimmer" || A("Infrared Sensor") != "an Infrared Sensor" {
		t.Errorf("%q %q", A("Appliance Module"), A("Light Dimmer"))
	}
	_, err := Parse(SendCommand, JSON, []Pair{{Key: FieldAPIKey, Value: Str("k")}, {Key: FieldTimestamp, Value: Str("20260101000000")},
		{Key: FieldSign, Value: Str("0123456789abcdef0123456789abcdef")}, {Key: FieldAccount, Value: Str("5f3a9c0e1b2d4f6a8c0e1b2d")},
		{Key: FieldMAC, Value: Str("a4c138f0e2b1")}, {Key: FieldSN, Value: Str("0123456789abcdef0123456789abcd01")},
		{Key: FieldType, Value: Str("Appliance Module")}, {Key: "Relay2", Value: Str("On")}})
	if err == nil || err.Message != "Relay2 is not a field of an Appliance Module" {
		t.Errorf("got %v", err)
	}
}
