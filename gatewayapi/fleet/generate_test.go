package fleet

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/brianvoe/gofakeit/v6"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Seed 0 is a seed like any other (gofakeit would take it as "random").
func TestGenerateSeedZero(t *testing.T) {
	a, _ := Generate(0, 2, 10).Marshal()
	b, _ := Generate(0, 2, 10).Marshal()
	if !bytes.Equal(a, b) {
		t.Error("seed 0 gave two fleets")
	}
}

// Ids are valid and unique, names look like names people give devices, and
// the types are mixed, over a fleet big enough to show it.
func TestGenerateLarge(t *testing.T) {
	f := Generate(42, 20, 500)
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
	if f.DeviceCount() != 10000 || len(f.Accounts[0].Gateways) != 20 {
		t.Fatalf("%s", f.Describe())
	}
	name := regexp.MustCompile(`^([A-Z][a-z]+( [A-Z][a-z]+)? [A-Z][A-Za-z ]+( [2-4])?|[A-Z][A-Za-z]+'s [A-Z][A-Za-z ]+)$`)
	sns := map[string]bool{}
	types := map[string]int{}
	possessive, numbered := 0, 0
	for _, g := range f.Accounts[0].Gateways {
		for _, d := range g.Devices {
			if sns[d.SN] {
				t.Errorf("sn %s twice", d.SN)
			}
			sns[d.SN] = true
			types[d.Type]++
			if !name.MatchString(d.Name) {
				t.Errorf("name %q", d.Name)
			}
			if bytes.ContainsRune([]byte(d.Name), '\'') {
				possessive++
			}
			if c := d.Name[len(d.Name)-1]; '2' <= c && c <= '4' {
				numbered++
			}
		}
	}
	for _, typ := range device.Types {
		if n := types[typ.Name]; n < 10000/len(device.Types)/2 {
			t.Errorf("%d devices of type %s", n, typ.Name)
		}
	}
	if possessive < 1000 || numbered < 1000 {
		t.Errorf("%d possessive and %d numbered names of 10000", possessive, numbered)
	}
}

func BenchmarkGenerate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Generate(1, 10, 1000)
	}
}

func BenchmarkWriteYAML(b *testing.B) {
	f := Generate(1, 10, 1000)
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		f.WriteYAML(&buf)
	}
	b.SetBytes(int64(buf.Len()))
}

// A device type with no nouns of its own (a type just added to the table)
// is named after the type rather than stopping Generate.
func TestDeviceNameOfTypeWithoutNouns(t *testing.T) {
	fake := gofakeit.NewUnlocked(1)
	for i := 0; i < 50; i++ {
		name := string(appendDeviceName(nil, fake, "Window Sensor"))
		if !strings.Contains(name, "Window Sensor") {
			t.Fatalf("name %q does not name the type", name)
		}
	}
}
