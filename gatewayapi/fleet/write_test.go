package fleet

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

// WriteYAML's output reads back as the same fleet, whatever the strings
// hold: words YAML would read as booleans, numbers or nulls, quotes, colons,
// non-ASCII text and characters a YAML reader refuses unescaped.
func TestWriteYAMLRoundTrip(t *testing.T) {
	names := []string{"Off", "yes", "null", "~", "0123", "1e5", "- dash", "a: b", "#hash", "it's", `say "hi"`,
		`back\slash`, "Zoë's ☃ 𝄞", "bom\ufeffin", "[x]", "{y}", "& *alias", "!tag", "%pct", "@at", "`tick`"}
	f := &Fleet{Sign: "format", SignCommand: []string{"./sign.sh", "--key", "a b"}, TimestampTZ: "Europe/Berlin",
		TimestampWindow: &Duration{90 * time.Second}}
	a := Account{ID: "5f3a9c0e1b2d4f6a8c0e1b2d", APIKeys: []APIKey{{Key: "k: 1", Secret: `s"#'2`}, {Key: "other", Secret: "tab\tnel\u0085c1\u0080\x01\n"}}}
	g := Gateway{MAC: "000000000001"}
	for i, n := range names {
		d := Device{SN: strings.Repeat("0", 30) + string("0123456789abcdef"[i/16]) + string("0123456789abcdef"[i%16]), Type: "Light Dimmer", Name: n}
		if i%3 == 0 {
			d.State = map[string]any{"dimming": i + 1}
		}
		g.Devices = append(g.Devices, d)
	}
	g.Devices = append(g.Devices, Device{SN: strings.Repeat("f", 32), Type: "Thermostat", Name: "Hall",
		State: map[string]any{"mode": "Heat", "cooling_point": 26.5, "heating_point": 20, "fan": "On"}})
	a.Gateways = []Gateway{g, {MAC: "000000000002"}}
	f.Accounts = []Account{a, {ID: "000000000000000000000001"}}
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := f.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	// Numbers come back as YAML reads them (26.5 float, 20 int): compare
	// the states as the devices' parsed states.
	if !reflect.DeepEqual(strip(back), strip(f)) {
		t.Errorf("round trip differs\n%s", b.String())
	}
	for i, d := range back.Accounts[0].Gateways[0].Devices {
		want := f.Accounts[0].Gateways[0].Devices[i]
		if len(d.State) != len(want.State) {
			t.Errorf("%s: state %v, want %v", d.SN, d.State, want.State)
		}
	}
	m, err := f.Marshal()
	if err != nil || !bytes.Equal(m, b.Bytes()) {
		t.Errorf("Marshal is not WriteYAML: %v", err)
	}
}

// strip is the fleet without states, which compare by value only.
func strip(f *Fleet) *Fleet {
	c := *f
	c.Accounts = append([]Account(nil), f.Accounts...)
	for ai := range c.Accounts {
		a := &c.Accounts[ai]
		a.Gateways = append([]Gateway(nil), a.Gateways...)
		for gi := range a.Gateways {
			g := &a.Gateways[gi]
			g.Devices = append([]Device(nil), g.Devices...)
			for di := range g.Devices {
				g.Devices[di].State = nil
			}
		}
	}
	return &c
}

func TestWriteYAMLEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := (&Fleet{}).WriteYAML(&b); err != nil || b.String() != "accounts: []\n" {
		t.Errorf("%q %v", b.String(), err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

var errWrite = &writeError{}

type writeError struct{}

func (*writeError) Error() string { return "disk full" }

func TestWriteYAMLError(t *testing.T) {
	if err := Generate(1, 50, 100).WriteYAML(failWriter{}); err != errWrite {
		t.Errorf("error %v", err)
	}
}
