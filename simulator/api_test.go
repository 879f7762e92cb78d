package simulator_test

import (
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zone tests need no system zone database

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
	"github.com/gwdmi/gwtools/simulator/store"
)

// literal is one request of the acceptance list, run in both formats.
type literal struct {
	name   string
	op     device.Operation
	fields func(c *simtest.Client, f device.Format) []simtest.F
	out    func(f device.Format) outcome
}

// Shorthands for the literal tables.
var (
	S = simtest.S
	N = simtest.N
)

const (
	dimmer     = "Light Dimmer"
	thermostat = "Thermostat"
	infrared   = "Infrared Sensor"
	appliance  = "Appliance Module"
	plus       = "Appliance Module Plus"
	relay      = "Relay Module"
)

func cmd(typ string, fields ...simtest.F) func(*simtest.Client, device.Format) []simtest.F {
	return func(c *simtest.Client, _ device.Format) []simtest.F { return c.Command(snOf(typ), typ, fields...) }
}

// point is a thermostat point field under its name in the format.
func point(f device.Format, which, v string, number bool) simtest.F {
	key := which + "_point"
	if f == device.JSON {
		key = which + " point"
	}
	if number && f == device.JSON {
		return N(key, v)
	}
	return S(key, v)
}

func always(o outcome) func(device.Format) outcome { return func(device.Format) outcome { return o } }

func runLiterals(t *testing.T, c *simtest.Client, cases []literal) {
	t.Helper()
	for _, tc := range cases {
		for _, format := range formats {
			t.Run(tc.name+"/"+format.String(), func(t *testing.T) {
				fields := tc.fields(c, format)
				expect(t, c, format, sendOp(c, tc.op, format, fields), tc.out(format))
			})
		}
	}
}

func TestCommandValues(t *testing.T) {
	t.Parallel()
	_, c := start(t, simulator.Options{})
	var cases []literal
	add := func(name, typ string, o outcome, fields ...simtest.F) {
		cases = append(cases, literal{name: name, op: device.SendCommand, fields: cmd(typ, fields...), out: always(o)})
	}
	// Light Dimmer: 1 to 100, as strings and JSON numbers.
	add("dimming 1", dimmer, ok(setState(dimmer, "dimming", 1.0)), S("dimming", "1"))
	add("dimming 100", dimmer, ok(setState(dimmer, "dimming", 100.0)), S("dimming", "100"))
	add("dimming number 37", dimmer, ok(setState(dimmer, "dimming", 37.0)), N("dimming", "37"))
	add("dimming 0", dimmer, bad(device.CodeInvalidField, "dimming"), S("dimming", "0"))
	add("dimming 101", dimmer, bad(device.CodeInvalidField, "dimming"), S("dimming", "101"))
	add("dimming 50.5", dimmer, bad(device.CodeInvalidField, "dimming"), S("dimming", "50.5"))
	add("dimming abc", dimmer, bad(device.CodeInvalidField, "dimming"), S("dimming", "abc"))
	// Infrared Sensor: code 1 to 4, io.
	for _, n := range []string{"1", "2", "3", "4"} {
		add("code "+n, infrared, ok(setState(infrared, "code", float64(n[0]-'0'))), S("code", n))
	}
	add("code number 3", infrared, ok(setState(infrared, "code", 3.0)), N("code", "3"))
	add("code 0", infrared, bad(device.CodeInvalidField, "code"), S("code", "0"))
	add("code 5", infrared, bad(device.CodeInvalidField, "code"), S("code", "5"))
	// io of the three types that have it, On/Off in any case.
	for _, typ := range []string{appliance, relay, infrared} {
		add(typ+" io On", typ, ok(setState(typ, "io", "On")), S("io", "On"))
		add(typ+" io Off", typ, ok(setState(typ, "io", "Off")), S("io", "Off"))
		add(typ+" io on", typ, ok(setState(typ, "io", "On")), S("io", "on"))
		add(typ+" io OFF", typ, ok(setState(typ, "io", "Off")), S("io", "OFF"))
		add(typ+" io Maybe", typ, bad(device.CodeInvalidField, "io"), S("io", "Maybe"))
	}
	// Appliance Module Plus: Relay1/Relay2 On/Off, opt text.
	for _, r := range []string{"Relay1", "Relay2"} {
		add(r+" On", plus, ok(setState(plus, r, "On")), S(r, "On"))
		add(r+" Off", plus, ok(setState(plus, r, "Off")), S(r, "Off"))
		add(r+" oN", plus, ok(setState(plus, r, "On")), S(r, "oN"))
		add(r+" 1", plus, bad(device.CodeInvalidField, r), S(r, "1"))
	}
	add("opt normal", plus, ok(setState(plus, "opt", "normal")), S("opt", "normal"))
	add("opt eco", plus, ok(setState(plus, "opt", "eco")), S("opt", "eco"))
	add("opt empty", plus, bad(device.CodeInvalidField, "opt"), S("opt", ""))
	add("opt 33 chars", plus, bad(device.CodeInvalidField, "opt"), S("opt", strings.Repeat("o", 33)))
	add("plus all three", plus, ok(setState(plus, "opt", "away", "Relay1", "On", "Relay2", "On")),
		S("opt", "away"), S("Relay1", "On"), S("Relay2", "on"))
	// Thermostat: each mode and fan, in any case.
	for _, m := range []string{"Auto", "Cool", "Heat", "Off"} {
		add("mode "+m, thermostat, ok(setState(thermostat, "mode", m)), S("mode", m))
		add("mode "+strings.ToLower(m), thermostat, ok(setState(thermostat, "mode", m)), S("mode", strings.ToLower(m)))
	}
	add("mode COOL", thermostat, ok(setState(thermostat, "mode", "Cool")), S("mode", "COOL"))
	add("mode Dry", thermostat, bad(device.CodeInvalidField, "mode"), S("mode", "Dry"))
	for _, f := range []string{"On", "Auto"} {
		add("fan "+f, thermostat, ok(setState(thermostat, "fan", f)), S("fan", f))
	}
	add("fan auto", thermostat, ok(setState(thermostat, "fan", "Auto")), S("fan", "auto"))
	add("fan Off", thermostat, bad(device.CodeInvalidField, "fan"), S("fan", "Off"))
	runLiterals(t, c, cases)

	// Thermostat points: the XML element cooling_point, the JSON key
	// "cooling point"; strings and JSON numbers; -50..100.
	points := []struct {
		name, which, v string
		number         bool
		want           float64
		good           bool
	}{
		{"cooling 26.5", "cooling", "26.5", false, 26.5, true},
		{"cooling number 24", "cooling", "24", true, 24, true},
		{"heating -50", "heating", "-50", false, -50, true},
		{"heating 100", "heating", "100", true, 100, true},
		{"cooling abc", "cooling", "abc", false, 0, false},
		{"cooling -51", "cooling", "-51", false, 0, false},
		{"heating 101", "heating", "101", true, 0, false},
		{"heating 100.01", "heating", "100.01", false, 0, false},
		{"cooling NaN", "cooling", "NaN", false, 0, false},
		{"cooling exponent", "cooling", "2.5e1", false, 0, false}, // in a string: open, refused by default
	}
	for _, p := range points {
		for _, format := range formats {
			t.Run(p.name+"/"+format.String(), func(t *testing.T) {
				fields := c.Command(snOf(thermostat), thermostat, point(format, p.which, p.v, p.number))
				o := bad(device.CodeInvalidField, fields[len(fields)-1].Key)
				if p.good {
					o = ok(setState(thermostat, p.which+"_point", p.want))
				}
				expect(t, c, format, sendOp(c, device.SendCommand, format, fields), o)
			})
		}
	}
	t.Run("cooling_point in JSON/json", func(t *testing.T) {
		fields := c.Command(snOf(thermostat), thermostat, S("cooling_point", "24"))
		expect(t, c, device.JSON, sendOp(c, device.SendCommand, device.JSON, fields), bad(device.CodeUnexpectedField, "cooling_point"))
	})
	t.Run("whole thermostat/json", func(t *testing.T) {
		fields := c.Command(snOf(thermostat), thermostat, S("mode", "heat"), N("cooling point", "27"),
			S("heating point", "19.5"), S("fan", "ON"))
		expect(t, c, device.JSON, sendOp(c, device.SendCommand, device.JSON, fields),
			ok(setState(thermostat, "mode", "Heat", "cooling_point", 27.0, "heating_point", 19.5, "fan", "On")))
	})
	t.Run("whole thermostat/xml", func(t *testing.T) {
		fields := c.Command(snOf(thermostat), thermostat, S("mode", "cool"), S("cooling_point", "23"),
			S("heating_point", "18"), S("fan", "auto"))
		expect(t, c, device.XML, sendOp(c, device.SendCommand, device.XML, fields),
			ok(setState(thermostat, "mode", "Cool", "cooling_point", 23.0, "heating_point", 18.0, "fan", "Auto")))
	})
}

func TestEnvelope(t *testing.T) {
	t.Parallel()
	_, c := start(t, simulator.Options{})
	dim := func(c *simtest.Client, _ device.Format) []simtest.F {
		return c.Command(snOf(dimmer), dimmer, S("dimming", "42"))
	}
	with := func(f simtest.F) func(*simtest.Client, device.Format) []simtest.F {
		return func(c *simtest.Client, format device.Format) []simtest.F { return simtest.Set(dim(c, format), f) }
	}
	without := func(key string) func(*simtest.Client, device.Format) []simtest.F {
		return func(c *simtest.Client, format device.Format) []simtest.F { return simtest.Without(dim(c, format), key) }
	}
	set42 := ok(setState(dimmer, "dimming", 42.0))
	var cases []literal
	add := func(name string, fields func(*simtest.Client, device.Format) []simtest.F, o outcome) {
		cases = append(cases, literal{name: name, op: device.SendCommand, fields: fields, out: always(o)})
	}
	for _, name := range device.EnvelopeFields {
		add("missing "+name, without(name), bad(device.CodeMissingField, name))
	}
	add("missing sn", without(device.FieldSN), bad(device.CodeMissingField, device.FieldSN))
	add("missing type", without(device.FieldType), bad(device.CodeMissingField, device.FieldType))
	hexes := []struct{ field, good string }{
		{device.FieldAccount, simtest.AccountA},
		{device.FieldMAC, simtest.MACA},
		{device.FieldSN, snOf(dimmer)},
	}
	for _, h := range hexes {
		add(h.field+" one short", with(S(h.field, h.good[1:])), bad(device.CodeInvalidField, h.field))
		add(h.field+" one long", with(S(h.field, h.good+"0")), bad(device.CodeInvalidField, h.field))
		add(h.field+" not hex", with(S(h.field, "g"+h.good[1:])), bad(device.CodeInvalidField, h.field))
		add(h.field+" upper case", with(S(h.field, strings.ToUpper(h.good))), set42)
	}
	add("sign one short", func(c *simtest.Client, f device.Format) []simtest.F {
		fields := dim(c, f)
		return simtest.Set(fields, S("sign", fields[2].Val[1:]))
	}, bad(device.CodeInvalidField, device.FieldSign))
	add("sign one long", func(c *simtest.Client, f device.Format) []simtest.F {
		fields := dim(c, f)
		return simtest.Set(fields, S("sign", fields[2].Val+"a"))
	}, bad(device.CodeInvalidField, device.FieldSign))
	add("sign not hex", with(S("sign", strings.Repeat("z", 32))), bad(device.CodeInvalidField, device.FieldSign))
	add("sign upper case", func(c *simtest.Client, f device.Format) []simtest.F {
		fields := dim(c, f)
		return simtest.Set(fields, S("sign", strings.ToUpper(fields[2].Val)))
	}, set42)
	add("sign wrong", with(S("sign", strings.Repeat("0", 32))), rejected(401, device.CodeBadSignature, device.FieldSign))
	ts := auth.Timestamp(time.Now(), nil)
	for name, v := range map[string]string{
		"13 digits": ts[:13], "15 digits": ts + "0", "not a date": "20241301120000",
		"February 30": "20240230120000", "hour 24": "20240101240000", "with dashes": "2024-01-01T12:00",
	} {
		add("timestamp "+name, with(S("timestamp", v)), bad(device.CodeInvalidField, device.FieldTimestamp))
	}
	signedAt := func(d time.Duration) func(*simtest.Client, device.Format) []simtest.F {
		return func(c *simtest.Client, _ device.Format) []simtest.F {
			return append(c.EnvelopeAt(time.Now().Add(d)), S("sn", snOf(dimmer)), S("type", dimmer), S("dimming", "42"))
		}
	}
	add("timestamp an hour old", signedAt(-time.Hour), rejected(401, device.CodeStaleTimestamp, device.FieldTimestamp))
	add("timestamp an hour ahead", signedAt(time.Hour), rejected(401, device.CodeStaleTimestamp, device.FieldTimestamp))
	add("timestamp four minutes old", signedAt(-4*time.Minute), set42)
	add("api_key unknown", func(c *simtest.Client, f device.Format) []simtest.F {
		o := *c
		o.APIKey = "nobody"
		return dim(&o, f)
	}, rejected(401, device.CodeUnknownAPIKey, device.FieldAPIKey))
	add("api_key of another account", func(c *simtest.Client, f device.Format) []simtest.F {
		o := *c
		o.APIKey, o.Secret = simtest.KeyB, simtest.SecretB
		return dim(&o, f)
	}, rejected(403, device.CodeAccountMismatch, device.FieldAccount))
	add("unknown gateway", with(S("mac", "ffffffffffff")), rejected(404, device.CodeGatewayNotFound, device.FieldMAC))
	add("gateway of another account", with(S("mac", simtest.MACB)), rejected(404, device.CodeGatewayNotFound, device.FieldMAC))
	add("unknown device", with(S("sn", simtest.SN('f', 1))), rejected(404, device.CodeDeviceNotFound, device.FieldSN))
	add("device of another gateway", with(S("sn", simtest.SN('c', 0))), rejected(404, device.CodeDeviceNotFound, device.FieldSN))
	add("type mismatch", with(S("sn", snOf(relay))), rejected(409, device.CodeTypeMismatch, device.FieldType))
	add("unknown type", with(S("type", "Toaster")), bad(device.CodeInvalidField, device.FieldType))
	add("type in lower case", with(S("type", "light dimmer")), bad(device.CodeInvalidField, device.FieldType))
	add("field of another type", with(S("io", "On")), bad(device.CodeUnexpectedField, "io"))
	add("unknown field", with(S("colour", "red")), bad(device.CodeUnexpectedField, "colour"))
	add("message field in a command", with(S("message_type", "message")), bad(device.CodeUnexpectedField, "message_type"))
	add("field twice", func(c *simtest.Client, f device.Format) []simtest.F {
		return append(dim(c, f), S("dimming", "43"))
	}, bad(device.CodeInvalidField, "dimming"))
	cases = append(cases, literal{name: "api_key a number", op: device.SendCommand, fields: with(N("api_key", "12")),
		out: outcomeByFormat(bad(device.CodeInvalidField, device.FieldAPIKey),
			rejected(401, device.CodeUnknownAPIKey, device.FieldAPIKey))})
	// device_id: an alias of sn; both present must agree.
	add("device_id instead of sn", func(c *simtest.Client, f device.Format) []simtest.F {
		fields := without(device.FieldSN)(c, f)
		return append(fields, S("device_id", snOf(dimmer)))
	}, set42)
	add("device_id and sn equal", with(S("device_id", strings.ToUpper(snOf(dimmer)))), set42)
	add("device_id and sn differ", with(S("device_id", snOf(relay))), bad(device.CodeInvalidField, device.FieldDeviceID))
	add("device_id not hex", with(S("device_id", "x"+snOf(dimmer)[1:])), bad(device.CodeInvalidField, device.FieldDeviceID))
	// format: optional, must say the body's format.
	add("format bogus", with(S("format", "yaml")), bad(device.CodeInvalidField, device.FieldFormat))
	runLiterals(t, c, cases)
	for _, format := range formats {
		other := device.XML
		if format == device.XML {
			other = device.JSON
		}
		t.Run("format matching/"+format.String(), func(t *testing.T) {
			fields := simtest.Set(dim(c, format), S("format", format.String()))
			expect(t, c, format, sendOp(c, device.SendCommand, format, fields), set42)
		})
		t.Run("format not matching/"+format.String(), func(t *testing.T) {
			fields := simtest.Set(dim(c, format), S("format", other.String()))
			expect(t, c, format, sendOp(c, device.SendCommand, format, fields), bad(device.CodeInvalidField, device.FieldFormat))
		})
	}
	// Account B's key works on account B's gateway: keys are per account.
	for _, format := range formats {
		t.Run("second account/"+format.String(), func(t *testing.T) {
			b := *c
			b.APIKey, b.Secret, b.Account, b.MAC = simtest.KeyB, simtest.SecretB, simtest.AccountB, simtest.MACB
			sn := simtest.SN('b', int(mustType(dimmer).ID))
			ch := &change{mac: simtest.MACB, sn: sn, state: map[string]any{"dimming": 7.0}}
			expect(t, c, format, sendOp(&b, device.SendCommand, format, b.Command(sn, dimmer, S("dimming", "7"))), ok(ch))
		})
	}
}

func mustType(name string) *device.Type {
	t, ok := device.LookupType(name)
	if !ok {
		panic(name)
	}
	return t
}

func TestSendMessage(t *testing.T) {
	t.Parallel()
	_, c := start(t, simulator.Options{})
	msg := func(typ, value string) func(*simtest.Client, device.Format) []simtest.F {
		return func(c *simtest.Client, _ device.Format) []simtest.F {
			return append(c.Envelope(), S("message_type", typ), S("message_value", value))
		}
	}
	stored := func(typ, value string) outcome {
		return ok(&change{mac: simtest.MACA, message: &store.Message{Type: typ, Value: value}})
	}
	var cases []literal
	add := func(name string, fields func(*simtest.Client, device.Format) []simtest.F, o outcome) {
		cases = append(cases, literal{name: name, op: device.SendMessage, fields: fields, out: always(o)})
	}
	add("brightness=80", msg("message", "brightness=80"), stored("message", "brightness=80"))
	add("negative decimal", msg("message", "temp.max=-1.5"), stored("message", "temp.max=-1.5"))
	add("second message", msg("alert", "_level-2=0.25"), stored("alert", "_level-2=0.25"))
	// Not trimmed: a token has no white space, nor <setting_name>=<number>.
	add("padded type", msg(" message ", "a=1"), bad(device.CodeInvalidField, device.FieldMessageType))
	add("padded value", msg("message", " a=1 "), bad(device.CodeInvalidField, device.FieldMessageValue))
	for _, v := range []string{"brightness", "=80", "brightness=", "brightness=abc", "1x=5", "a=1;b=2",
		"brightness = 80", "a=1e3", "a=0x10", "bright ness=1", ""} {
		add("message_value "+v, msg("message", v), bad(device.CodeInvalidField, device.FieldMessageValue))
	}
	add("message_type empty", msg("", "a=1"), bad(device.CodeInvalidField, device.FieldMessageType))
	add("message_type two words", msg("two words", "a=1"), bad(device.CodeInvalidField, device.FieldMessageType))
	add("message_type too long", msg(strings.Repeat("m", 65), "a=1"), bad(device.CodeInvalidField, device.FieldMessageType))
	cases = append(cases, literal{name: "message_type number", op: device.SendMessage,
		fields: func(c *simtest.Client, f device.Format) []simtest.F {
			return simtest.Set(msg("x", "a=1")(c, f), N("message_type", "5"))
		},
		out: outcomeByFormat(bad(device.CodeInvalidField, device.FieldMessageType),
			ok(&change{mac: simtest.MACA, message: &store.Message{Type: "5", Value: "a=1"}}))})
	add("missing message_type", func(c *simtest.Client, f device.Format) []simtest.F {
		return append(c.Envelope(), S("message_value", "a=1"))
	}, bad(device.CodeMissingField, device.FieldMessageType))
	add("missing message_value", func(c *simtest.Client, f device.Format) []simtest.F {
		return append(c.Envelope(), S("message_type", "message"))
	}, bad(device.CodeMissingField, device.FieldMessageValue))
	for _, name := range device.EnvelopeFields {
		add("missing "+name, func(c *simtest.Client, f device.Format) []simtest.F {
			return simtest.Without(msg("message", "a=1")(c, f), name)
		}, bad(device.CodeMissingField, name))
	}
	add("sn in a message", func(c *simtest.Client, f device.Format) []simtest.F {
		return append(msg("message", "a=1")(c, f), S("sn", snOf(dimmer)))
	}, bad(device.CodeUnexpectedField, device.FieldSN))
	add("unknown gateway", func(c *simtest.Client, f device.Format) []simtest.F {
		return simtest.Set(msg("message", "a=1")(c, f), S("mac", "0000000000ff"))
	}, rejected(404, device.CodeGatewayNotFound, device.FieldMAC))
	add("wrong sign", func(c *simtest.Client, f device.Format) []simtest.F {
		return simtest.Set(msg("message", "a=1")(c, f), S("sign", strings.Repeat("a", 32)))
	}, rejected(401, device.CodeBadSignature, device.FieldSign))
	add("second gateway", func(c *simtest.Client, f device.Format) []simtest.F {
		return simtest.Set(msg("message", "b=2")(c, f), S("mac", strings.ToUpper(simtest.MACA2)))
	}, ok(&change{mac: simtest.MACA2, message: &store.Message{Type: "message", Value: "b=2"}}))
	runLiterals(t, c, cases)

	// Messages are listed oldest first.
	var got []string
	for _, m := range c.Messages(simtest.MACA) {
		got = append(got, m.Value)
	}
	want := "brightness=80 brightness=80 temp.max=-1.5 temp.max=-1.5 _level-2=0.25 _level-2=0.25 a=1"
	if strings.Join(got, " ") != want {
		t.Errorf("messages, oldest first: %v, want %s", got, want)
	}
}

// outcomeByFormat is one outcome for JSON and another for XML (where every
// value is text).
func outcomeByFormat(j, x outcome) func(device.Format) outcome {
	return func(f device.Format) outcome {
		if f == device.XML {
			return x
		}
		return j
	}
}

func TestUpdateName(t *testing.T) {
	t.Parallel()
	_, c := start(t, simulator.Options{})
	rename := func(sn, name string) func(*simtest.Client, device.Format) []simtest.F {
		return func(c *simtest.Client, _ device.Format) []simtest.F {
			return append(c.Envelope(), S("sn", sn), S("name", name))
		}
	}
	named := func(sn, name string) outcome {
		return ok(&change{mac: simtest.MACA, sn: sn, name: &name})
	}
	sn := snOf(relay)
	var cases []literal
	add := func(name string, fields func(*simtest.Client, device.Format) []simtest.F, o outcome) {
		cases = append(cases, literal{name: name, op: device.UpdateName, fields: fields, out: always(o)})
	}
	add("plain", rename(sn, "Kitchen Light"), named(sn, "Kitchen Light"))
	add("trimmed", rename(sn, "  Side Door \n"), named(sn, "Side Door"))
	add("markup characters", rename(sn, `Tom & Jerry <3> "quoted"`), named(sn, `Tom & Jerry <3> "quoted"`))
	add("64 characters", rename(sn, strings.Repeat("n", 64)), named(sn, strings.Repeat("n", 64)))
	add("64 non-ASCII characters", rename(sn, strings.Repeat("ü", 64)), named(sn, strings.Repeat("ü", 64)))
	add("upper-case sn", rename(strings.ToUpper(sn), "Loud"), named(sn, "Loud"))
	add("65 characters", rename(sn, strings.Repeat("n", 65)), bad(device.CodeInvalidField, device.FieldName))
	add("empty", rename(sn, ""), bad(device.CodeInvalidField, device.FieldName))
	add("only spaces", rename(sn, "   "), bad(device.CodeInvalidField, device.FieldName))
	add("tab inside", rename(sn, "a\tb"), bad(device.CodeInvalidField, device.FieldName))
	add("newline inside", rename(sn, "a\nb"), bad(device.CodeInvalidField, device.FieldName))
	add("missing sn", func(c *simtest.Client, f device.Format) []simtest.F {
		return append(c.Envelope(), S("name", "x"))
	}, bad(device.CodeMissingField, device.FieldSN))
	add("missing name", func(c *simtest.Client, f device.Format) []simtest.F {
		return append(c.Envelope(), S("sn", sn))
	}, bad(device.CodeMissingField, device.FieldName))
	add("device_id is not an alias here", func(c *simtest.Client, f device.Format) []simtest.F {
		return append(c.Envelope(), S("device_id", sn), S("name", "x"))
	}, bad(device.CodeUnexpectedField, device.FieldDeviceID))
	add("type in update_name", func(c *simtest.Client, f device.Format) []simtest.F {
		return append(rename(sn, "x")(c, f), S("type", relay))
	}, bad(device.CodeUnexpectedField, device.FieldType))
	add("sn not hex", rename("z"+sn[1:], "x"), bad(device.CodeInvalidField, device.FieldSN))
	add("unknown device", rename(simtest.SN('f', 3), "x"), rejected(404, device.CodeDeviceNotFound, device.FieldSN))
	add("key of another account", func(c *simtest.Client, f device.Format) []simtest.F {
		o := *c
		o.APIKey, o.Secret = simtest.KeyB, simtest.SecretB
		return rename(sn, "x")(&o, f)
	}, rejected(403, device.CodeAccountMismatch, device.FieldAccount))
	for _, name := range device.EnvelopeFields {
		add("missing "+name, func(c *simtest.Client, f device.Format) []simtest.F {
			return simtest.Without(rename(sn, "x")(c, f), name)
		}, bad(device.CodeMissingField, name))
	}
	runLiterals(t, c, cases)
	t.Run("control character in JSON", func(t *testing.T) {
		expect(t, c, device.JSON, sendOp(c, device.UpdateName, device.JSON, rename(sn, "bell\u0007")(c, device.JSON)),
			bad(device.CodeInvalidField, device.FieldName))
	})
	if got := c.Device(simtest.MACA, sn).Name; got != "Loud" {
		t.Errorf("name after the renames: %q, want Loud", got)
	}
}

// TestSignSchemesAndZone: the fleet's sign scheme and timestamp zone
// (CONTRACT 1) through HTTP.
func TestSignSchemesAndZone(t *testing.T) {
	t.Parallel()
	wrongSign := func(c *simtest.Client) []simtest.F {
		return simtest.Set(c.Command(snOf(dimmer), dimmer, S("dimming", "12")), S("sign", strings.Repeat("0", 32)))
	}
	for scheme, o := range map[string]outcome{
		"md5":    rejected(401, device.CodeBadSignature, device.FieldSign),
		"format": ok(setState(dimmer, "dimming", 12.0)),
		"off":    ok(setState(dimmer, "dimming", 12.0)),
	} {
		f := simtest.Fleet()
		f.Sign = scheme
		_, c := start(t, simulator.Options{Fleet: f})
		for _, format := range formats {
			t.Run(scheme+"/"+format.String(), func(t *testing.T) {
				expect(t, c, format, sendOp(c, device.SendCommand, format, wrongSign(c)), o)
				// The api_key is checked whatever the scheme.
				other := *c
				other.APIKey = "nobody"
				expect(t, c, format, sendOp(c, device.SendCommand, format, wrongSign(&other)),
					rejected(401, device.CodeUnknownAPIKey, device.FieldAPIKey))
			})
		}
	}

	f := simtest.Fleet()
	f.TimestampTZ = "Asia/Tokyo"
	_, c := start(t, simulator.Options{Fleet: f})
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	signed := func(loc *time.Location) []simtest.F {
		ts := auth.Timestamp(time.Now(), loc)
		fields := c.Command(snOf(dimmer), dimmer, S("dimming", "13"))
		fields = simtest.Set(fields, S("timestamp", ts))
		return simtest.Set(fields, S("sign", auth.Sign(c.APIKey, c.Secret, ts)))
	}
	for _, format := range formats {
		t.Run("zone/"+format.String(), func(t *testing.T) {
			expect(t, c, format, sendOp(c, device.SendCommand, format, signed(tokyo)), ok(setState(dimmer, "dimming", 13.0)))
			expect(t, c, format, sendOp(c, device.SendCommand, format, signed(time.UTC)),
				rejected(401, device.CodeStaleTimestamp, device.FieldTimestamp))
		})
	}

	// timestamp_window 0 disables the window.
	f = simtest.Fleet()
	f.TimestampWindow = &fleet.Duration{}
	_, c0 := start(t, simulator.Options{Fleet: f})
	old := append(c0.EnvelopeAt(time.Now().Add(-48*time.Hour)), S("sn", snOf(dimmer)), S("type", dimmer), S("dimming", "14"))
	t.Run("window 0", func(t *testing.T) {
		expect(t, c0, device.JSON, sendOp(c0, device.SendCommand, device.JSON, old), ok(setState(dimmer, "dimming", 14.0)))
	})
}
