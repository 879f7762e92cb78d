package fleet

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"

	"github.com/brianvoe/gofakeit/v6"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

var rooms = []string{"Kitchen", "Hall", "Living Room", "Bedroom", "Office", "Garage", "Porch", "Garden",
	"Bathroom", "Attic", "Basement", "Nursery", "Study", "Dining Room", "Patio", "Laundry"}

// nouns are what people call each type of device.
var nouns = map[string][]string{
	"Appliance Module":      {"Kettle", "Coffee Maker", "Fan", "Heater", "Lamp", "Radio"},
	"Appliance Module Plus": {"Pump", "Sprinkler", "Boiler", "Pool Filter", "Water Heater"},
	"Relay Module":          {"Door", "Gate", "Blinds", "Shutter", "Chime"},
	"Thermostat":            {"Thermostat", "Climate", "Heating", "AC"},
	"Infrared Sensor":       {"TV Remote", "IR Blaster", "Projector", "Soundbar"},
	"Light Dimmer":          {"Light", "Ceiling Light", "Spots", "Lamp", "Strip"},
}

// Generate builds a fleet from a seed: one account with one api key, the
// given number of gateways and devices per gateway, types mixed, names like
// "Kitchen Light", "Emma's Lamp" or "Bedroom Fan 2". The same seed, 0
// included, gives the same fleet. A million devices take about a second.
func Generate(seed int64, gateways, perGateway int) *Fleet {
	// Unlocked and seeded as given: gofakeit.New would take a random seed
	// for 0 and lock a mutex on every draw.
	fake := gofakeit.NewCustom(rand.NewSource(seed).(rand.Source64))
	a := Account{
		ID:      hexOf(fake, 24),
		APIKeys: []APIKey{{Key: "key-" + hexOf(fake, 16), Secret: fake.Password(true, true, true, false, false, 24)}},
	}
	a.Gateways = make([]Gateway, 0, gateways)
	macs := make(map[string]bool, gateways)
	// Per gateway, the sn and name of every device are written into one
	// buffer that becomes one string, which the devices' strings slice:
	// two allocations a gateway instead of two or three a device, and
	// nothing for the collector to mark per device. Repeated sns are told
	// by their two random words, without a string.
	sns := make(map[[2]uint64]struct{}, perGateway)
	var buf []byte
	type span struct {
		sn, name, end int
		typ           string
	}
	spans := make([]span, 0, perGateway)
	for len(a.Gateways) < gateways {
		mac := hexOf(fake, 12)
		if macs[mac] {
			continue
		}
		macs[mac] = true
		clear(sns)
		buf, spans = buf[:0], spans[:0]
		for len(spans) < perGateway {
			w := [2]uint64{fake.Rand.Uint64(), fake.Rand.Uint64()}
			if _, dup := sns[w]; dup {
				continue
			}
			sns[w] = struct{}{}
			sp := span{sn: len(buf)}
			buf = appendHex(appendHex(buf, w[0], 16), w[1], 16)
			t := device.Types[fake.Number(0, len(device.Types)-1)]
			sp.name, sp.typ = len(buf), t.Name
			buf = appendDeviceName(buf, fake, t.Name)
			sp.end = len(buf)
			spans = append(spans, sp)
		}
		all := string(buf)
		g := Gateway{MAC: mac, Devices: make([]Device, len(spans))}
		for i, sp := range spans {
			g.Devices[i] = Device{SN: all[sp.sn:sp.name], Type: sp.typ, Name: all[sp.name:sp.end]}
		}
		a.Gateways = append(a.Gateways, g)
	}
	return &Fleet{Sign: "md5", Accounts: []Account{a}}
}

// appendDeviceName appends a name people give a device of the type:
// mostly the room and what it is, sometimes whose it is, sometimes
// numbered.
func appendDeviceName(b []byte, fake *gofakeit.Faker, typ string) []byte {
	n := nouns[typ]
	if len(n) == 0 {
		// A type added to the device table without nouns of its own is
		// still named, after the type.
		n = []string{typ}
	}
	noun := n[fake.Number(0, len(n)-1)]
	switch r := fake.Number(0, 9); {
	case r < 2:
		b = append(b, fake.FirstName()...)
		b = append(b, "'s "...)
		return append(b, noun...)
	case r < 4:
		b = append(b, rooms[fake.Number(0, len(rooms)-1)]...)
		b = append(append(append(b, ' '), noun...), ' ')
		return strconv.AppendInt(b, int64(fake.Number(2, 4)), 10)
	default:
		b = append(b, rooms[fake.Number(0, len(rooms)-1)]...)
		return append(append(b, ' '), noun...)
	}
}

// appendHex appends n (at most 16) hex digits of r, lowest first, as
// hexOf writes a draw.
func appendHex(b []byte, r uint64, n int) []byte {
	for i := 0; i < n; i++ {
		b = append(b, hexDigits[r&15])
		r >>= 4
	}
	return b
}

const hexDigits = "0123456789abcdef"

// hexOf is n random lower-case hex digits, 16 to a draw.
func hexOf(fake *gofakeit.Faker, n int) string {
	var b strings.Builder
	b.Grow(n)
	var r uint64
	for i := 0; i < n; i++ {
		if i%16 == 0 {
			r = fake.Rand.Uint64()
		}
		b.WriteByte(hexDigits[r&15])
		r >>= 4
	}
	return b.String()
}

// Describe is a one-line account of the fleet's size.
func (f *Fleet) Describe() string {
	g := 0
	for _, a := range f.Accounts {
		g += len(a.Gateways)
	}
	count := func(n int, noun string) string {
		if n == 1 {
			return "1 " + noun
		}
		return fmt.Sprintf("%d %ss", n, noun)
	}
	return count(len(f.Accounts), "account") + ", " + count(g, "gateway") + ", " + count(f.DeviceCount(), "device")
}
