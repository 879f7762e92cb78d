package fleet

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zone tests need no system zone database

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

const good = `
sign: md5
timestamp_window: 300s
accounts:
  - myservice_id: 5F3A9C0E1B2D4F6A8C0E1B2D
    api_keys:
      - {api_key: demo-key, secret: demo-secret}
    gateways:
      - mac: A4C138F0E2B1
        devices:
          - {sn: 0123456789ABCDEF0123456789ABCDEF, type: Light Dimmer, name: " Hall ", state: {dimming: 40}}
          - {sn: 0123456789abcdef0123456789abcde0, type: Thermostat, state: {mode: heat, cooling_point: "24.5"}}
          - {sn: 0123456789abcdef0123456789abcde1, type: Appliance Module, state: {io: On}}
`

func TestParseGood(t *testing.T) {
	f, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	a := f.Accounts[0]
	g := a.Gateways[0]
	if a.ID != "5f3a9c0e1b2d4f6a8c0e1b2d" || g.MAC != "a4c138f0e2b1" || g.Devices[0].SN != "0123456789abcdef0123456789abcdef" {
		t.Errorf("hex not stored lower-case: %s %s %s", a.ID, g.MAC, g.Devices[0].SN)
	}
	if g.Devices[0].Name != "Hall" {
		t.Errorf("name not trimmed: %q", g.Devices[0].Name)
	}
	if f.Scheme() != auth.MD5 || f.Window() != 300*time.Second || f.Location() != time.UTC || f.DeviceCount() != 3 {
		t.Errorf("scheme %s window %s location %s count %d", f.Scheme(), f.Window(), f.Location(), f.DeviceCount())
	}
	if k := f.Keys()["demo-key"]; k.Secret != "demo-secret" || k.AccountID != a.ID {
		t.Errorf("keys %+v", f.Keys())
	}
	tg, err := f.Target()
	if err != nil || tg.MAC != g.MAC || tg.Key.Key != "demo-key" || tg.Devices["Thermostat"].SN != g.Devices[1].SN || tg.OtherAccount != "" {
		t.Errorf("target %+v %v", tg, err)
	}
	// Window: whole seconds, 0 disables, absent is the default.
	for src, want := range map[string]time.Duration{"timestamp_window: 90\n": 90 * time.Second, "timestamp_window: 0\n": 0,
		"timestamp_window: 1m\n": time.Minute, "": auth.DefaultWindow} {
		f, err := Parse([]byte(src + "accounts: [{myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2d}]\n"))
		if err != nil || f.Window() != want {
			t.Errorf("%q: window %v, %v", src, f, err)
		}
	}
	// JSON is valid YAML.
	j := `{"sign":"off","timestamp_tz":"Asia/Tokyo","accounts":[{"myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","api_keys":[{"api_key":"k","secret":"s"}],"gateways":[{"mac":"a4c138f0e2b1"}]}]}`
	f, err = Parse([]byte(j))
	if err != nil || f.Scheme() != auth.Off || f.Location().String() != "Asia/Tokyo" {
		t.Errorf("JSON fleet: %v %v", f, err)
	}
}

func TestParseErrors(t *testing.T) {
	acct := "accounts:\n  - myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2d\n"
	gw := acct + "    gateways:\n      - mac: a4c138f0e2b1\n        devices:\n"
	dev := func(lines ...string) string {
		return gw + "          - " + strings.Join(lines, "\n          - ") + "\n"
	}
	const sn1 = "0123456789abcdef0123456789abcdef"
	cases := []struct{ name, src, want string }{
		{"empty", "", "empty"},
		{"not YAML", "accounts: [", "yaml"},
		{"unknown top key", "acounts: []\n", "acounts"},
		{"unknown account key", acct + "    bogus: 1\n    other: 2\n", "bogus"},
		{"unknown device key", dev("{sn: " + sn1 + ", type: Light Dimmer, colour: red}"), "colour"},
		{"no accounts", "sign: md5\n", "at least one account"},
		{"bad scheme", "sign: sha1\n" + acct, "sha1"},
		{"bad zone", "timestamp_tz: Mars/Olympus\n" + acct, "Mars/Olympus"},
		{"negative window", "timestamp_window: -5s\n" + acct, "negative"},
		{"bad window", "timestamp_window: soon\n" + acct, "soon"},
		{"account short", "accounts:\n  - myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2\n", "myservice_id"},
		{"account twice", acct + "  - myservice_id: 5F3A9C0E1B2D4F6A8C0E1B2D\n", "twice"},
		{"key twice", "accounts:\n  - myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2d\n    api_keys: [{api_key: k, secret: s}]\n" +
			"  - myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2e\n    api_keys: [{api_key: k, secret: t}]\n", "two accounts"},
		{"key empty", acct + "    api_keys: [{api_key: '', secret: s}]\n", "api_key"},
		{"key with spaces", acct + "    api_keys: [{api_key: ' k', secret: s}]\n", "api_key"},
		{"mac not hex", acct + "    gateways:\n      - mac: a4c138f0e2bz\n", "mac"},
		{"mac short", acct + "    gateways:\n      - mac: a4c138f0e2b\n", "mac"},
		{"mac twice", acct + "    gateways:\n      - mac: a4c138f0e2b1\n      - mac: A4C138F0E2B1\n", "twice"},
		{"sn not hex", dev("{sn: 0123456789abcdef0123456789abcdeg, type: Light Dimmer}"), "sn"},
		{"sn twice", dev("{sn: "+sn1+", type: Light Dimmer}", "{sn: "+strings.ToUpper(sn1)+", type: Relay Module}"), "twice"},
		{"bad type", dev("{sn: " + sn1 + ", type: Toaster}"), "Toaster"},
		{"type case", dev("{sn: " + sn1 + ", type: light dimmer}"), "light dimmer"},
		{"name too long", dev("{sn: " + sn1 + ", type: Light Dimmer, name: " + strings.Repeat("n", 65) + "}"), "name"},
		{"name control", dev("{sn: " + sn1 + ", type: Light Dimmer, name: \"a\\tb\"}"), "name"},
		{"state out of range", dev("{sn: " + sn1 + ", type: Light Dimmer, state: {dimming: 0}}"), "dimming"},
		{"state of another type", dev("{sn: " + sn1 + ", type: Light Dimmer, state: {io: On}}"), "io"},
		{"state bad enum", dev("{sn: " + sn1 + ", type: Thermostat, state: {fan: Off}}"), "fan"},
		{"state nested", dev("{sn: " + sn1 + ", type: Thermostat, state: {mode: [Auto]}}"), "mode"},
		{"state point", dev("{sn: " + sn1 + ", type: Thermostat, state: {cooling_point: 150}}"), "cooling_point"},
	}
	for _, tc := range cases {
		f, err := Parse([]byte(tc.src))
		if err == nil {
			t.Errorf("%s: accepted: %+v", tc.name, f)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %q does not mention %q", tc.name, err, tc.want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the reason is more than one line: %q", tc.name, err)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fleet.yaml")
	os.WriteFile(p, []byte(good), 0o644)
	if _, err := Load(p); err != nil {
		t.Error(err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
	os.WriteFile(p, []byte("accounts: []\n"), 0o644)
	if _, err := Load(p); err == nil || !strings.HasPrefix(err.Error(), p+": ") {
		t.Errorf("bad file: %v", err)
	}
}

// TestDemo: the built-in demo fleet's first account has a key, a gateway
// with one device of every published type and a second gateway; a second
// account lets the harness show 403 account_mismatch. That is a full
// certification fleet, so make conformance covers everything.
func TestDemo(t *testing.T) {
	f := Demo()
	if len(f.Accounts) != 2 || len(f.Accounts[0].Gateways) != 2 || len(f.Accounts[0].APIKeys) == 0 {
		t.Fatalf("demo fleet: %+v", f)
	}
	tg, err := f.Target()
	if err == nil && tg.OtherAccount != f.Accounts[1].ID {
		t.Errorf("the harness would not use the second account: %q", tg.OtherAccount)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range device.Types {
		if _, ok := tg.Devices[typ.Name]; !ok {
			t.Errorf("the demo fleet has no %s", typ.Name)
		}
	}
	if len(f.Accounts[0].Gateways[0].Devices) != len(device.Types) || f.Scheme() != auth.MD5 {
		t.Errorf("%d devices, scheme %s", len(f.Accounts[0].Gateways[0].Devices), f.Scheme())
	}
}

func TestGenerate(t *testing.T) {
	a, err := Generate(7, 3, 40).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(7, 3, 40).Marshal()
	if !bytes.Equal(a, b) {
		t.Error("the same seed gave different fleets")
	}
	c, _ := Generate(8, 3, 40).Marshal()
	if bytes.Equal(a, c) {
		t.Error("different seeds gave the same fleet")
	}
	f, err := Parse(a)
	if err != nil {
		t.Fatalf("a generated fleet does not parse: %v\n%s", err, a)
	}
	if !reflect.DeepEqual(f, Generate(7, 3, 40)) {
		t.Error("Marshal and Parse do not round-trip")
	}
	if len(f.Accounts) != 1 || len(f.Accounts[0].Gateways) != 3 || f.DeviceCount() != 120 {
		t.Errorf("generated: %s", f.Describe())
	}
	types := map[string]bool{}
	for _, g := range f.Accounts[0].Gateways {
		for _, d := range g.Devices {
			types[d.Type] = true
			if d.Name == "" {
				t.Errorf("device %s has no name", d.SN)
			}
		}
	}
	if len(types) != len(device.Types) {
		t.Errorf("120 devices cover only %d types", len(types))
	}
	if _, err := Generate(1, 1, 0).Target(); err != nil {
		t.Errorf("empty gateway: %v", err)
	}
}

// TestParseErrorsNameKeyAndLine: a vendor's mistake in a fleet file is told
// with the YAML key, its line and what is expected there, never in Go's
// words (field api_key not found in type fleet.Account).
func TestParseErrorsNameKeyAndLine(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"key at the wrong level", "accounts:\n  - myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2d\n    api_key: k\n",
			`line 3: accounts[0]: unknown key "api_key"; expected one of myservice_id, api_keys, gateways (did you mean api_keys?)`},
		{"misspelt top key", "sign: md5\nacounts: []\n", `line 2: the fleet: unknown key "acounts"`},
		{"accounts not a list", "accounts: 5f3a9c0e1b2d4f6a8c0e1b2d\n",
			`line 1: accounts: expected a list of accounts (items starting with -), found "5f3a9c0e1b2d4f6a8c0e1b2d"`},
		{"device not a mapping", "accounts:\n  - myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2d\n    gateways:\n      - mac: a4c138f0e2b1\n        devices:\n          - Light Dimmer\n",
			`line 6: accounts[0].gateways[0].devices[0]: expected a device: {sn, type, name, state}, found "Light Dimmer"`},
		{"bad mac", "accounts:\n  - myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2d\n    gateways:\n      - mac: nothex\n",
			`line 4: accounts[0].gateways[0].mac: "nothex" must be 12 hexadecimal characters`},
		{"bad type", "accounts:\n  - myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2d\n    gateways:\n      - mac: a4c138f0e2b1\n        devices:\n          - sn: 0123456789abcdef0123456789abcdef\n            type: Toaster\n",
			`line 7: accounts[0].gateways[0].devices[0].type: "Toaster" is not one of`},
		{"type in another case", "accounts:\n  - myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2d\n    gateways:\n      - mac: a4c138f0e2b1\n        devices:\n          - sn: 0123456789abcdef0123456789abcdef\n            type: Light dimmer\n",
			`(did you mean Light Dimmer?)`},
		{"state as a list", "accounts:\n  - myservice_id: 5f3a9c0e1b2d4f6a8c0e1b2d\n    gateways:\n      - mac: a4c138f0e2b1\n        devices:\n          - {sn: 0123456789abcdef0123456789abcdef, type: Light Dimmer, state: [40]}\n",
			`accounts[0].gateways[0].devices[0].state: expected a mapping of state keys to values`},
		{"key twice", "sign: md5\nsign: off\naccounts: []\n", `line 2: sign: the key appears twice`},
		{"bad window", "timestamp_window: soon\naccounts: []\n", `line 1: timestamp_window: "soon" is not a duration`},
		{"negative window", "accounts: []\ntimestamp_window: -5s\n", `line 2: timestamp_window: "-5s" must not be negative`},
		{"JSON with a trailing comma", "{\n  \"sign\": \"md5\",\n  \"accounts\": [],\n}\n",
			`line 4, column 1: invalid character '}' looking for beginning of object key string (the file is read as JSON)`},
		{"JSON with a missing comma", "{\"accounts\": [\n  {\"myservice_id\": \"5f3a9c0e1b2d4f6a8c0e1b2d\"\n   \"api_keys\": []}]}\n",
			`line 3, column 4: invalid character '"' after object key:value pair (the file is read as JSON)`},
		{"JSON cut short", "{\"accounts\": [\n  {\"myservice_id\": \"x\"\n", `line 2, column 23: unexpected end of JSON input`},
		{"bad scheme", "sign: sha1\naccounts: []\n", `line 1: sign: "sha1" is not a sign scheme: md5, format or off`},
		{"JSON bad window", "{\"timestamp_window\": \"soon\", \"accounts\": []}", `line 1: timestamp_window: "soon" is not a duration`},
	}
	for _, tc := range cases {
		_, err := Parse([]byte(tc.src))
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, err, tc.want)
		}
		for _, goWord := range []string{"fleet.", "type Fleet", "!!str", "unmarshal"} {
			if strings.Contains(err.Error(), goWord) {
				t.Errorf("%s: %q speaks Go (%s)", tc.name, err, goWord)
			}
		}
	}
}

// TestFleetTemplate: the commented template vendors start from is a valid
// fleet that holds everything a full certification needs.
func TestFleetTemplate(t *testing.T) {
	f, err := Load("../../fixtures/fleet-template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Accounts) < 2 || len(f.Accounts[1].APIKeys) == 0 || len(f.Accounts[1].Gateways) == 0 {
		t.Errorf("the template needs a second account with a key and a gateway")
	}
	first := f.Accounts[0]
	if len(first.Gateways) < 2 || len(first.Gateways[1].Devices) == 0 {
		t.Errorf("the template needs a second gateway with a device on the first account")
	}
	have := map[string]bool{}
	for _, d := range first.Gateways[0].Devices {
		have[d.Type] = true
	}
	for _, name := range device.TypeNames() {
		if !have[name] {
			t.Errorf("the template's first gateway has no %s", name)
		}
	}
}
